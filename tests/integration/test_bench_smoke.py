"""bench/bench.py end to end at N=1, one iteration (`make bench` runs N = 1, 4, 8 with both profiles)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ansible_collections.metalserve.sglang.tests.helpers import ROOT


def test_bench_smoke(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--sizes", "1", "--profiles", "tuned",
                           "--out", str(tmp_path)], capture_output=True, text=True, check=False, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    runs = {r["run"]: r for r in results["runs"]}
    assert set(runs) == {"first", "noop", "check", "alone"} and all(r["hosts"] == 2 for r in runs.values())
    assert runs["first"]["changed"] > 0 and runs["noop"]["changed"] == 0 and runs["check"]["changed"] == 0
    # the no-op one host at a time: the same playbook, nothing to change either, its node CPU measured
    assert runs["alone"]["changed"] == 0 and runs["alone"]["modules_per_host"] == runs["noop"]["modules_per_host"]
    assert runs["alone"]["node_cpu_s_per_host"] is not None
    assert runs["noop"]["slowest"] and all(t["seconds"] >= 0 for t in runs["noop"]["slowest"])
    assert results["ratios"]["tuned"]["1"]["noop_vs_noop1"] == 1.0
    table = (tmp_path / "README.md").read_text()
    assert "| 1 |" in table and (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"
