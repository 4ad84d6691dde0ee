"""Shared helpers for the tests: the upstream cells and the expected command per cell."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "glm-5.3-cookbook-cells.yaml"


def upstream() -> dict[str, Any]:
    return yaml.safe_load(UPSTREAM.read_text(encoding="utf-8"))


def upstream_nodes(value: str) -> int:
    return 1 if value == "single" else int(value.split("-")[1])


def selection_of(cell: dict[str, Any], **extra: Any) -> dict[str, Any]:
    m = cell["match"]
    return {"gpu": m["hw"], "quant": m["quant"], "strategy": m["strategy"], "nodes": upstream_nodes(m["nodes"]),
            **extra}


def upstream_tokens(cell: dict[str, Any], doc: dict[str, Any], rank: int = 0, head: str = "10.0.0.1") -> list[str]:
    """The cookbook's command for a cell, with placeholders filled and the multi-node rule applied
    exactly as the cookbook states it (independent of our engine)."""
    model = doc["model_names"][cell["match"]["quant"]]
    tokens: list[str] = []
    for item in cell["flags"]:
        item = (item.replace("{{MODEL_NAME}}", model).replace("{{HOST_IP}}", doc["placeholders"]["HOST_IP"])
                .replace("{{PORT}}", doc["placeholders"]["PORT"]))
        tokens.extend(item.split(" ", 1))
    nodes = upstream_nodes(cell["match"]["nodes"])
    if nodes > 1:
        for anchor in ("--enable-dp-attention", "--dp", "--tp", "--model-path"):
            if anchor in tokens:
                at = tokens.index(anchor) + (1 if anchor == "--enable-dp-attention" else 2)
                tokens[at:at] = ["--nnodes", str(nodes), "--node-rank", str(rank), "--dist-init-addr", f"{head}:20000"]
                break
    return tokens
