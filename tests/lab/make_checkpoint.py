"""Write a small checkpoint-shaped folder for the weight-staging tests: config.json,
model.safetensors.index.json and N shards of deterministic bytes (not a real model).

Usage: make_checkpoint.py DIR [--shards 4] [--shard-mib 6] [--drop N] [--seed S]
  --drop N  leave shard N out (its index entry stays): a broken source
"""
from __future__ import annotations

import argparse
import json
import os
import random


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--shard-mib", type=int, default=6)
    ap.add_argument("--drop", type=int, default=0)
    ap.add_argument("--seed", type=int, default=53)
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    rng = random.Random(args.seed)
    weight_map, total = {}, 0
    for i in range(1, args.shards + 1):
        name = f"model-{i:05d}-of-{args.shards:05d}.safetensors"
        for layer in range(3):
            weight_map[f"model.layers.{(i - 1) * 3 + layer}.mlp.weight"] = name
        size = args.shard_mib * 2**20 + i * 4099  # odd sizes, so a wrong size is visible
        total += size
        if i == args.drop:
            continue
        with open(os.path.join(args.dir, name), "wb") as handle:
            handle.write(rng.randbytes(size))
    with open(os.path.join(args.dir, "model.safetensors.index.json"), "w", encoding="utf-8") as handle:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, handle, indent=1)
    with open(os.path.join(args.dir, "config.json"), "w", encoding="utf-8") as handle:
        json.dump({"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
                   "note": "test checkpoint made by tests/lab/make_checkpoint.py; not a model"}, handle, indent=1)


if __name__ == "__main__":
    main()
