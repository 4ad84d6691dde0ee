"""The benchmark report on a real sglang.bench_serving output file (SGLang 0.5.23, against the double)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as br
from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES

REAL = (FIXTURES / "bench" / "bench_serving-0.5.23-double.jsonl").read_text()
H200_LL = {"gpu": "h200", "quant": "fp8", "strategy": "low-latency", "nodes": 1}


def test_real_output_parses_into_one_run_per_concurrency() -> None:
    runs = br.parse_results(REAL)
    assert [r["max_concurrency"] for r in runs] == [1, 4]
    assert all(r["backend"] == "sglang" and r["random_input_len"] == 512 for r in runs)


def test_not_a_bench_serving_file_is_refused() -> None:
    with pytest.raises(ValueError, match="not a sglang.bench_serving result"):
        br.parse_results('{"hello": 1}\n')


def test_published_numbers_and_workload_for_a_cell() -> None:
    pub = br.published("glm-5.3", H200_LL)
    assert [s["concurrency"] for s in pub["entry"]["speed"]] == [1, 16]
    # the page's speed command: random ISL 8192 / OSL 1024, range ratio 1.0, 64 warm-up requests, sglang backend
    glm = {"dataset": "random", "isl": 8192, "osl": 1024, "range_ratio": 1.0, "warmup_requests": 64, "backend": "sglang",
           "extra_args": []}
    assert br.workload("glm-5.3", H200_LL) == [{"concurrency": 1, "prompts": 8, **glm},
                                               {"concurrency": 16, "prompts": 64, **glm}]
    ht = {**H200_LL, "strategy": "high-throughput", "cookbook_revision": "03d5035a"}
    assert br.workload("glm-5.3", ht) == [{"concurrency": 1024, "prompts": 2048, **glm}]
    pending = {"gpu": "mi300x", "quant": "fp8", "strategy": "balanced", "nodes": 1}
    assert br.published("glm-5.3", pending)["entry"] is None
    assert br.workload("glm-5.3", pending) == [{"concurrency": 64, "prompts": 128, **glm},
                                               {"concurrency": 256, "prompts": 512, **glm}]
    assert br.workload("glm-5.3", H200_LL, [4]) == [{"concurrency": 4, "prompts": 8, **glm}]


def test_published_throughput_is_total_tokens_per_gpu() -> None:
    """The reading the module docstring derives: 9216 tokens per request at the published TTFT/TPOT."""
    speed = br.published("glm-5.3", H200_LL)["entry"]["speed"][0]
    seconds = speed["ttft_ms"] / 1000 + 1024 * speed["tpot_ms"] / 1000
    assert abs((8192 + 1024) / seconds / 8 - speed["tok_s_per_gpu"]) < 2


def test_compare_uses_total_throughput_per_gpu_and_matches_concurrency_and_workload() -> None:
    """A run is compared with the point the page published at its concurrency and workload (bench_serving writes the
    run's dataset_name, random_input_len and random_output_len); the double's runs at ISL 512 / OSL 64 are not compared
    with GLM-5.3's numbers at ISL 8192 / OSL 1024."""
    runs = br.parse_results(REAL)
    pub = br.published("glm-5.3", H200_LL)
    workload = pub["doc"]["workload"]
    at_the_page = [{**r, "random_input_len": 8192, "random_output_len": 1024} for r in runs]
    c1, c4 = br.compare(at_the_page, pub["entry"], gpus=8, workload=workload)
    assert c1["ours_tok_s_per_gpu"] == round(runs[0]["total_throughput"] / 8, 1)
    assert c1["published_tok_s_per_gpu"] == 252 and c1["throughput_ratio"] == round(runs[0]["total_throughput"] / 8 / 252, 3)
    assert c1["tpot_ratio"] == round(runs[0]["median_tpot_ms"] / 3.71, 3)
    assert c4["published_tok_s_per_gpu"] is None and c4["throughput_ratio"] is None  # upstream has no c=4
    c1, _c4 = br.compare(runs, pub["entry"], gpus=8, workload=workload)
    assert c1["published_tok_s_per_gpu"] is None and c1["throughput_ratio"] is None
    assert c1["published_elsewhere"] == "random ISL 8192 / OSL 1024"
    text = br.markdown("node1", "glm-5.3", H200_LL, 8, [c1], pub, "0.5.23")
    assert "- c=1: this run measured random ISL 512 / OSL 64; the page published this concurrency at random ISL 8192 " \
           "/ OSL 1024, so the two are not compared" in text


def test_markdown_and_plot(tmp_path: Path) -> None:
    runs = br.parse_results(REAL)
    pub = br.published("glm-5.3", H200_LL)
    at_the_page = [{**r, "random_input_len": 8192, "random_output_len": 1024} for r in runs]
    rows = br.compare(at_the_page, pub["entry"], gpus=8, workload=pub["doc"]["workload"])
    text = br.markdown("node1", "glm-5.3", H200_LL, 8, rows, pub, "0.5.23", "endpoint: a test double")
    assert text.startswith("# glm-5.3 h200/fp8/low-latency/1 node on node1\n")
    assert "Published: SGLang main @ 20a491d1d311" in text and "endpoint: a test double" in text
    assert "| 1 | 4 |" in text and "| 252 |" in text and "SGLANG_SIMULATE_ACC_LEN=3.5" in text
    png = tmp_path / "plot.png"
    assert br.plot(rows, "t", png) is True
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
