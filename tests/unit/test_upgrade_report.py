"""rendered/upgrade/REPORT.md (plugins/plugin_utils/upgrade/report.py): before and after per metric and wave, per GPU,
beside the cookbook's published number for the cell (data/models/glm-5.3/cookbook/8e04be51/benchmarks.yml: H200 FP8
low-latency at concurrency 1 publishes 252 tok/s per GPU, TTFT 780 ms, TPOT 3.71 ms)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import compare, report

CELL = {"model": "glm-5.3", "gpu": "h200", "quant": "fp8", "strategy": "low-latency", "nodes": 1,
        "cookbook_revision": "8e04be51", "gpus": 8, "release": "0.5.23", "from_release": "0.5.13.post1"}


def runs(tput: float, ttft: float, itl: float) -> list[dict[str, Any]]:
    return [{"max_concurrency": 1, "completed": 8, "prompts": 8, "total_throughput": tput, "mean_ttft_ms": ttft,
             "median_itl_ms": itl}] * 3


def state(after_ttft: float) -> dict[str, Any]:
    before, after = runs(2000, 800, 3.8), runs(2016, after_ttft, 3.8)
    verdict = compare.judge(before, after, min_requests=8)
    unit = {"hosts": ["n1"], "phase": "promoted" if verdict["ok"] else "rolled_back", "cell": CELL, "verdict": verdict,
            "rollback_seconds": 41.2}
    if not verdict["ok"]:
        unit["reason"] = verdict["summary"]
    return {"target": "abc", "status": "committed" if verdict["ok"] else "rolled_back", "started": "t0",
            "updated": "t1", "canary": "glm-5.3@n1", "waves": [["glm-5.3@n2"]],
            "units": {"glm-5.3@n1": unit, "glm-5.3@n2": {"hosts": ["n2"], "phase": "pending"}},
            "routers": {"r": {"phase": "pending"}}}


def test_rows_are_per_gpu_beside_the_published_numbers() -> None:
    text = report.markdown(state(800))
    # 2000 and 2016 tok/s over 8 GPUs: 250 and 252; published 252; 0.8 % better
    assert "| 1 | throughput | 250 | 252 | -0.8% | 5% | 252 | pass |" in text
    assert "| 1 | ttft | 800 | 800 | +0.0% | 10% | 780 | pass |" in text
    assert "| 1 | itl | 3.8 | 3.8 | +0.0% | 10% | 3.71 | pass |" in text
    assert "| 1 | errors | 0.0% | 0.0% | +0.0% | 0% | - | pass |" in text
    assert "SGLang 0.5.13.post1 -> 0.5.23; published: cookbook revision 8e04be51" in text
    assert "| canary | glm-5.3@n1 | n1 | promoted | pass |" in text and "| 1 | glm-5.3@n2 | n2 | pending | - |" in text


def test_a_rolled_back_canary_is_named_with_its_metric_and_time() -> None:
    text = report.markdown(state(1000))  # +25 % TTFT
    assert "**rolled back**" in text
    assert "Rolled back glm-5.3@n1: ttft at concurrency 1: regressed: 1000 ms after against 800 ms before" in text
    assert "| canary | glm-5.3@n1 | n1 | rolled back in 41 s | FAIL |" in text


def test_the_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert report.plot(state(800), tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
