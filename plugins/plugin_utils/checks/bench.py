# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Our sglang.bench_serving results beside the cookbook's published numbers for the same cell.

The published tokens_per_sec_per_gpu is total (input + output) throughput over the cell's GPUs:
for H200 FP8 low-latency at concurrency 1, (8192 + 1024) tokens per request at 780 ms TTFT and
3.71 ms TPOT give 9216 / 4.58 s / 8 GPUs = 251 tok/s/GPU, the published 252. So ours is
bench_serving's total_throughput / GPUs. Pure except plot(), which needs matplotlib.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (
    DATA_DIR,
    benchmarks_path,
    cached_yaml,
    load_catalog,
)

UPSTREAM_CONCURRENCY = {"low-latency": [1, 16], "balanced": [64, 256], "high-throughput": [1024]}


def published(model: str, cell: dict[str, Any], data_dir: Path = DATA_DIR, recipes: Any = None) -> dict[str, Any]:
    """The benchmark file of the cell's cookbook revision (cell['cookbook_revision']; unset: the newest
    shipped) and the published entry of this cell (None when upstream has none). A model of a site's own folder
    (sglang_recipes) is read from there."""
    site_model = load_catalog(recipes, data_dir=data_dir).models.get(model) if recipes else None
    path = benchmarks_path(model, cell.get("cookbook_revision"), data_dir, model=site_model)
    doc = cached_yaml(str(path)) if path.exists() else {"cells": []}
    key = (cell["gpu"], cell["quant"], cell["strategy"], int(cell["nodes"]))
    entry = next((c for c in doc.get("cells", []) if (c["gpu"], c["quant"], c["strategy"], int(c["nodes"])) == key),
                 None)
    return {"doc": doc, "entry": entry}


#: bench_serving's own defaults, for a model whose benchmarks.yml states no workload (a site recipe's model)
DEFAULT_WORKLOAD = {"dataset": "random", "isl": 8192, "osl": 1024, "range_ratio": 1.0, "warmup_requests": 64,
                    "backend": "sglang"}


def _settings(doc: dict[str, Any]) -> dict[str, Any]:
    """The page's bench_serving settings; a key its speed command leaves out stays None (benchmark.yml then leaves
    that flag to bench_serving's default), extra_args are the command's other flags."""
    given = doc.get("workload") or {}
    if not given:
        return {**DEFAULT_WORKLOAD, "extra_args": []}
    return {**{key: given.get(key) for key in DEFAULT_WORKLOAD}, "extra_args": list(given.get("extra_args") or [])}


def workload(model: str, cell: dict[str, Any], concurrencies: list[int] | None = None,
             recipes: Any = None) -> list[dict[str, Any]]:
    """The runs of playbooks/benchmark.yml: (concurrency, prompts) asked for, else the published ones, else the
    strategy's upstream ones; each with the workload the model's page published that point at (benchmarks.yml
    `workload`, and a speed point's own dataset, isl, osl and prompts where it ran otherwise), so each model of a
    site, and each point of a page of several workloads, is measured the way its own numbers were."""
    pub = published(model, cell, recipes=recipes)
    points = {int(s["concurrency"]): s for s in (pub["entry"] or {}).get("speed") or []}
    chosen = [int(c) for c in concurrencies or []] or list(points)
    if not chosen:
        chosen = UPSTREAM_CONCURRENCY.get(cell["strategy"], [1])
    per = {int(k): int(v) for k, v in (pub["doc"].get("prompts_per_concurrency") or {}).items()}
    settings = _settings(pub["doc"])
    out = []
    for c in chosen:
        own = points.get(c) or {}
        shape = {k: own[k] for k in ("dataset", "isl", "osl") if k in own}
        out.append({"concurrency": c, "prompts": own.get("prompts") or per.get(c, max(8, 2 * c)),
                    **settings, **shape})
    return out


def parse_results(text: str) -> list[dict[str, Any]]:
    """bench_serving appends one JSON object per run to its --output-file."""
    runs = [json.loads(line) for line in text.splitlines() if line.strip()]
    for run in runs:
        missing = [k for k in ("max_concurrency", "total_throughput", "median_tpot_ms", "mean_ttft_ms", "completed")
                   if k not in run]
        if missing:
            raise ValueError(f"not a sglang.bench_serving result (missing {', '.join(missing)})")
    return runs


def run_shape(run: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(dataset, ISL, OSL) a bench_serving run measured (its dataset_name, random_input_len, random_output_len)."""
    return (run.get("dataset_name"), run.get("random_input_len"), run.get("random_output_len"))


def point_shape(point: dict[str, Any], workload: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(dataset, ISL, OSL) a published point ran at: its own, else the page's workload (benchmarks.yml)."""
    return (point.get("dataset", workload.get("dataset")), point.get("isl", workload.get("isl")),
            point.get("osl", workload.get("osl")))


def _published_point(run: dict[str, Any], points: list[dict[str, Any]],
                     workload: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(the published point of the run's concurrency and workload, else None with the workload the page has one at):
    numbers of another workload are never compared."""
    ours = run_shape(run)
    for point in points:
        theirs = point_shape(point, workload)
        if all(o is None or t is None or o == t for o, t in zip(ours, theirs)):
            return point, None
    if not points:
        return None, None
    dataset, isl, osl = point_shape(points[0], workload)
    return None, f"{dataset} ISL {isl} / OSL {osl}"


def compare(runs: list[dict[str, Any]], entry: dict[str, Any] | None, gpus: int,
            workload: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    theirs: dict[int, list[dict[str, Any]]] = {}
    for point in (entry or {}).get("speed", []):
        theirs.setdefault(int(point["concurrency"]), []).append(point)
    rows = []
    for run in sorted(runs, key=lambda r: int(r["max_concurrency"] or 0)):
        c = int(run["max_concurrency"] or 0)
        ours_tps = run["total_throughput"] / gpus
        pub, other = _published_point(run, theirs.get(c, []), workload or {})
        rows.append({
            "concurrency": c, "completed": run["completed"],
            "ours_tok_s_per_gpu": round(ours_tps, 1), "ours_tpot_ms": round(run["median_tpot_ms"], 2),
            "ours_ttft_ms": round(run["mean_ttft_ms"], 1),
            "published_tok_s_per_gpu": pub["tok_s_per_gpu"] if pub else None,
            "published_tpot_ms": pub["tpot_ms"] if pub else None, "published_ttft_ms": pub["ttft_ms"] if pub else None,
            "throughput_ratio": round(ours_tps / pub["tok_s_per_gpu"], 3) if pub and pub["tok_s_per_gpu"] else None,
            "tpot_ratio": round(run["median_tpot_ms"] / pub["tpot_ms"], 3) if pub and pub["tpot_ms"] else None,
            "published_elsewhere": other,
            "ours_workload": "{} ISL {} / OSL {}".format(*run_shape(run)),
        })
    return rows


def _cell_name(cell: dict[str, Any]) -> str:
    return f"{cell['gpu']}/{cell['quant']}/{cell['strategy']}/{cell['nodes']} node{'s' if int(cell['nodes']) > 1 else ''}"


def markdown(host: str, model: str, cell: dict[str, Any], gpus: int, rows: list[dict[str, Any]],
             pub: dict[str, Any], sglang: str, note: str = "") -> str:
    entry, doc = pub["entry"], pub["doc"]
    lines = [f"# {model} {_cell_name(cell)} on {host}", "",
             f"Ours: sglang.bench_serving from SGLang {sglang}, {gpus} GPU(s). "
             + (f"Published: SGLang {entry.get('sglang') or 'unrecorded'}, cookbook revision {doc.get('revision')} "
                f"({doc.get('source')})." if entry
                else f"Published: none for this cell in cookbook revision {doc.get('revision')} (pending there)."), ""]
    if note:
        lines += [note, ""]
    lines += ["| concurrency | done | tok/s/GPU ours | published | ratio | TPOT ms ours | published | ratio "
              "| TTFT ms ours | published |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        def cell_(v: Any) -> str:
            return "-" if v is None else f"{v:g}"
        lines.append(f"| {r['concurrency']} | {r['completed']} | {cell_(r['ours_tok_s_per_gpu'])} | "
                     f"{cell_(r['published_tok_s_per_gpu'])} | {cell_(r['throughput_ratio'])} | {cell_(r['ours_tpot_ms'])} | "
                     f"{cell_(r['published_tpot_ms'])} | {cell_(r['tpot_ratio'])} | {cell_(r['ours_ttft_ms'])} | "
                     f"{cell_(r['published_ttft_ms'])} |")
    elsewhere = [r for r in rows if r.get("published_elsewhere")]
    if elsewhere:
        lines += [""] + [f"- c={r['concurrency']}: this run measured {r['ours_workload']}; the page published this "
                         f"concurrency at {r['published_elsewhere']}, so the two are not compared (benchmark_isl, "
                         "benchmark_osl)" for r in elsewhere]
    acc = (entry or {}).get("simulated_accept_length")
    if acc:
        lines += ["", f"Upstream pinned the speculative accept length (SGLANG_SIMULATE_ACC_LEN={acc}); a real "
                      "deployment's accept length differs, so its TPOT and throughput will too."]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], title: str, path: Path) -> bool:
    """Throughput per GPU and TPOT against concurrency, ours and published. False without matplotlib."""
    try:
        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    xs = [r["concurrency"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((ax1, "tok_s_per_gpu", "tokens/s per GPU (input+output)"), (ax2, "tpot_ms", "TPOT ms")):
        ax.plot(xs, [r[f"ours_{key}"] for r in rows], "o-", label="ours")
        pub = [(x, r[f"published_{key}"]) for x, r in zip(xs, rows) if r[f"published_{key}"] is not None]
        if pub:
            ax.plot([p[0] for p in pub], [p[1] for p in pub], "s--", label="cookbook")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("max concurrency")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
