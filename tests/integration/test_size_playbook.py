"""playbooks/size.yml and the capacity filter through Ansible: rendered/SIZING.md and sizing.png written once
(a second run changes nothing, check mode writes nothing), and a benchmark.yml run, written by the bench_report
action from real sglang.bench_serving output (tests/fixtures/bench), read back beside the published numbers."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
ENV = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
       "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_LOCALHOST_WARNING": "0",
       "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"}
RESULTS = ROOT / "tests" / "fixtures" / "bench" / "bench_serving-0.5.23-double.jsonl"


def size(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ansible-playbook"), str(ROOT / "playbooks" / "size.yml"),
                           "-e", f"sglang_render_dir={out}", *extra], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, check=False, timeout=300)


def changed(proc: subprocess.CompletedProcess) -> int:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return int(re.search(r"localhost\s+: ok=\d+\s+changed=(\d+)", proc.stdout).group(1))


def test_size_writes_the_report_once_and_check_mode_writes_nothing(tmp_path: Path) -> None:
    target = ("-e", "size_gpu=h200", "-e", "size_quant=fp8", "-e", "size_requests_per_s=4", "-e", "size_ttft_ms=3000")
    assert changed(size(tmp_path, *target)) == 1
    report = (tmp_path / "SIZING.md").read_text()
    assert report.startswith("# Sizing: GLM-5.3 for 4 requests/s\n")
    # 4 / 0.491539 requests/s per low-latency instance (tests/unit/test_capacity.py) = 8.14 => 9 nodes
    assert "| h200 | fp8 | low-latency | published | 8.1 (interpolated) | 3000 |" in report and "| 9 | **9** | 72 |" in report
    assert (tmp_path / "sizing.png").read_bytes().startswith(b"\x89PNG")
    assert changed(size(tmp_path, *target)) == 0
    assert changed(size(tmp_path, "--check", "-e", "size_gpu=h200", "-e", "size_requests_per_s=40")) == 1
    assert (tmp_path / "SIZING.md").read_text() == report


def test_no_cell_meets_the_limits_is_a_report_not_a_failure(tmp_path: Path) -> None:
    assert changed(size(tmp_path, "-e", "size_model=qwen3.8-27b", "-e", "size_output_tokens_per_s=1000",
                        "-e", "size_ttft_ms=50")) == 1
    report = (tmp_path / "SIZING.md").read_text()
    assert "**No cell meets the limits** (TTFT <= 50 ms)" in report
    assert report.count("**no point meets the limits**") == 6  # the six GB300 cells with numbers


def test_a_benchmark_run_is_read_back_beside_the_published_numbers(tmp_path: Path) -> None:
    bench = tmp_path / "benchmark"
    args = {"results": str(RESULTS), "host": "node1", "model": "glm-5.3", "gpus": 8, "sglang": "0.5.23",
            "cell": {"gpu": "h200", "quant": "fp8", "strategy": "low-latency", "nodes": 1}, "isl": 512, "osl": 64,
            "out_dir": str(bench)}
    proc = subprocess.run([str(BIN / "ansible"), "localhost", "-m", "metalserve.sglang.bench_report", "-a",
                           json.dumps(args)], capture_output=True, text=True, env=ENV, cwd=ROOT, check=False,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads((bench / "node1.json").read_text())
    source = [json.loads(line) for line in RESULTS.read_text().splitlines()]
    assert [p["concurrency"] for p in run["points"]] == [r["max_concurrency"] for r in source]
    assert run["points"][0]["tpot_ms"] == round(source[0]["median_tpot_ms"], 3)
    assert run["points"][0]["tok_s_per_gpu"] == round(source[0]["total_throughput"] / 8, 1)
    assert (run["isl"], run["osl"], run["cell"]["strategy"]) == (512, 64, "low-latency")
    assert changed(size(tmp_path, "-e", "size_gpu=h200", "-e", "size_quant=fp8", "-e", "size_requests_per_s=1")) == 1
    report = (tmp_path / "SIZING.md").read_text()
    assert "| h200 | fp8 | low-latency | measured on node1 at ISL 512 / OSL 64 |" in report
    assert "measured at ISL 512 / OSL 64, not the published 8192 / 1024" in report


def test_size_reads_a_site_folder_the_inventory_names_with_inventory_dir(tmp_path: Path) -> None:
    """README and docs/recipes.md: `-i` with the site's inventory sizes its own models, named in group_vars as
    "{{ inventory_dir }}/..." (a path only a host of the inventory can template; the play runs on localhost)."""
    from ansible_collections.metalserve.sglang.tests.helpers import COOKBOOK_MODELS
    inventory = tmp_path / "site"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text("all:\n  hosts:\n    n1: {ansible_host: 10.0.0.1}\n")
    (inventory / "group_vars" / "all.yml").write_text(
        'sglang_recipes: ["{{ inventory_dir | dirname }}/site-models"]\nsglang_model: minimax-m3\n')
    import shutil
    shutil.copytree(COOKBOOK_MODELS / "minimax-m3", tmp_path / "site-models" / "minimax-m3")
    out = tmp_path / "rendered"
    assert changed(size(out, "-i", str(inventory), "-e", "size_model=minimax-m3", "-e", "size_gpu=mi355x",
                        "-e", "size_requests_per_s=5")) == 1
    # the page's MI355X point: 420 tok/s/GPU x 8 GPUs / (1024 + 1024) tokens per request = 1.641 requests/s
    assert "| mi355x | mxfp8 | balanced | published at ISL 1024 / OSL 1024 |" in (out / "SIZING.md").read_text()
    assert "1.641 requests/s (8 GPUs)" in (out / "SIZING.md").read_text()


def test_a_workload_of_ones_own_is_refused_naming_what_size_has(tmp_path: Path) -> None:
    """size.yml sizes at the workload the page published (README, Sizing); -e size_isl is no setting of it and was
    silently ignored."""
    proc = size(tmp_path, "-e", "size_gpu=h200", "-e", "size_requests_per_s=4", "-e", "size_isl=4096",
                "-e", "size_osl=256")
    assert proc.returncode != 0 and not (tmp_path / "SIZING.md").exists()
    said = " ".join(proc.stdout.split())
    assert "size_isl, size_osl: no setting of size.yml, which has size_model, size_gpu" in said
    assert "never at another one" in said
