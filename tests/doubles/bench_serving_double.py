"""TEST DOUBLE of `python3 -m sglang.bench_serving` inside the lab's stand-in images (tests only).

The real client needs SGLang with torch (about 10 GB per release), which a stand-in image cannot hold on the lab
nodes' own Docker daemons (vfs storage copies every layer). This double takes the arguments the collection passes
(playbooks/tasks/upgrade/measure.yml, playbooks/tasks/benchmark_target.yml) and refuses any other, reads the
--tokenizer folder and the --dataset-path file the client's mounts must give it, sends --num-prompts streaming
requests to --base-url's /generate (the `sglang` backend's route) at --max-concurrency, after --warmup-requests and
/flush_cache when asked, and appends one JSON line to --output-file with result keys that SGLang's
sglang/benchmark/serving.py writes in both releases the lab's images stand in for (tests/slow/test_bench_double_keys.py
compares them with each release's file). The row's `tag` names the release of the image the client ran in and the URL
it measured, and `server_info` is what that server answered: the lab's tests read them to tell which image measured
and what it reached. The measured times are real round trips over the network the container was given.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

RELEASE = Path("/etc/metalserve-standin/release")   # written into the stand-in image by tests/lab/registry.sh


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="sglang.bench_serving (TEST DOUBLE)")
    ap.add_argument("--backend", default="sglang")
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", default="default")
    ap.add_argument("--tokenizer")
    ap.add_argument("--dataset-name", default="random")
    ap.add_argument("--dataset-path")
    ap.add_argument("--random-input-len", type=int, default=128)
    ap.add_argument("--random-output-len", type=int, default=32)
    ap.add_argument("--random-range-ratio", type=float, default=1.0)
    ap.add_argument("--num-prompts", type=int, default=8)
    ap.add_argument("--max-concurrency", type=int, default=1)
    ap.add_argument("--warmup-requests", type=int, default=1)
    ap.add_argument("--flush-cache", action="store_true")
    ap.add_argument("--output-file")
    return ap.parse_args(argv)


def headers() -> dict[str, str]:
    """The real client's get_auth_headers(): the key from OPENAI_API_KEY as a bearer token."""
    key = os.environ.get("OPENAI_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def post(url: str, body: dict[str, Any]) -> Any:
    return urllib.request.urlopen(urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers()}), timeout=300)


def one(args: argparse.Namespace) -> dict[str, Any]:
    """One streaming /generate request: its start, first-token and inter-token times (seconds)."""
    body = {"text": "tok " * args.random_input_len, "stream": True,
            "sampling_params": {"max_new_tokens": args.random_output_len, "ignore_eos": True}}
    start = time.perf_counter()
    stamps = []
    with post(args.base_url.rstrip("/") + "/generate", body) as resp:
        for raw in resp:
            line = raw.decode().strip()
            if line.startswith("data:") and line != "data: [DONE]":
                stamps.append(time.perf_counter())
    end = time.perf_counter()
    ok = bool(stamps)
    return {"ok": ok, "latency": end - start, "ttft": (stamps[0] - start) if ok else 0.0,
            "itl": [b - a for a, b in zip(stamps, stamps[1:])], "tokens": len(stamps)}


def ms(values: list[float], how: str) -> float:
    if not values:
        return 0.0
    if how == "mean":
        return statistics.fmean(values) * 1000
    if how == "median":
        return statistics.median(values) * 1000
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * int(how[1:]) / 100))] * 1000


def result(args: argparse.Namespace, outs: list[dict[str, Any]], duration: float) -> dict[str, Any]:
    done = [o for o in outs if o["ok"]]
    ttfts, itls = [o["ttft"] for o in done], [i for o in done for i in o["itl"]]
    lat = [o["latency"] for o in done]
    tpots = [(o["latency"] - o["ttft"]) / (o["tokens"] - 1) for o in done if o["tokens"] > 1]
    total_in, total_out = args.random_input_len * len(done), sum(o["tokens"] for o in done)
    row: dict[str, Any] = {
        "tag": "TEST DOUBLE client (tests/doubles/bench_serving_double.py)", "backend": args.backend,
        "server_info": None,
        "dataset_name": args.dataset_name, "request_rate": float("inf"), "max_concurrency": args.max_concurrency,
        "random_input_len": args.random_input_len, "random_output_len": args.random_output_len,
        "random_range_ratio": args.random_range_ratio, "duration": duration, "completed": len(done),
        "total_input_tokens": total_in, "total_output_tokens": total_out,
        "request_throughput": len(done) / duration, "input_throughput": total_in / duration,
        "output_throughput": total_out / duration, "total_throughput": (total_in + total_out) / duration}
    for name, values in (("e2e_latency", lat), ("ttft", ttfts), ("tpot", tpots), ("itl", itls)):
        for how in ("mean", "median", "p99"):   # p90 and p95 are not in every release's rows
            row[f"{how}_{name}_ms"] = ms(values, how)
    return row


def inputs(args: argparse.Namespace) -> None:
    """What the real client reads before it sends anything: the tokenizer's folder and the dataset file."""
    if args.tokenizer and not os.listdir(args.tokenizer):
        raise SystemExit(f"--tokenizer {args.tokenizer}: an empty folder")
    if args.dataset_path:
        Path(args.dataset_path).read_bytes()


def server_info(base_url: str) -> Any:
    """What the server says of itself, or None where it does not answer (as the real client keeps it)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(base_url.rstrip("/") + "/server_info", headers=headers()),
                                    timeout=30) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    inputs(args)
    for _warmup in range(args.warmup_requests):
        one(args)
    if args.flush_cache:
        post(args.base_url.rstrip("/") + "/flush_cache", {}).close()
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.max_concurrency)) as pool:
        outs = list(pool.map(lambda _i: one(args), range(args.num_prompts)))
    row = result(args, outs, time.perf_counter() - start)
    release = RELEASE.read_text().strip() if RELEASE.exists() else "unknown"
    row.update(tag=f"TEST DOUBLE client in the {release} image, measuring {args.base_url}",
               server_info=server_info(args.base_url))
    print(json.dumps({k: row[k] for k in ("completed", "mean_ttft_ms", "median_itl_ms", "total_throughput")}))
    if args.output_file:
        with open(args.output_file, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
