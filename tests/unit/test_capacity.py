"""Sizing from the published speed points (plugins/plugin_utils/sizing/capacity.py), against cases computed by
hand from data/models/*/cookbook/<revision>/benchmarks.yml, the arithmetic written out beside each.

Workloads: GLM-5.3 random 8192 in / 1024 out (9216 tokens a request); Qwen3.8-27B random 1024 / 1024. tok/s/GPU
is total (input + output) throughput per GPU, so one instance of G GPUs serves tok_s_per_gpu x G / (ISL + OSL)
requests/s and that x OSL output tokens/s.
"""
from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import capacity as cap


def row(result: dict, strategy: str, quant: str | None = None, source: str = "published") -> dict:
    return next(r for r in result["rows"] if r["strategy"] == strategy and r["source"] == source
                and (quant is None or r["quant"] == quant))


def test_glm_h200_fp8_low_latency_interpolates_to_the_ttft_limit() -> None:
    """h200/fp8/low-latency (8e04be51): c=1 TTFT 780 ms, TPOT 3.71 ms, 252 tok/s/GPU; c=16 TTFT 5499, TPOT 14.20,
    920. TP8: 8 GPUs, one instance per 8-GPU node. Limits TTFT <= 3000 ms, TPOT <= 20 ms; target 2 requests/s.

    TPOT stays under 20 on the whole segment. TTFT(c) = 780 + (5499 - 780)(c - 1)/15 <= 3000
      => c - 1 <= 2220 x 15 / 4719 = 33300/4719 (7.0566) => c = 8.0566.
    Throughput there: 252 + (920 - 252) x (33300/4719)/15 = 252 + 668 x 2220/4719 = 252 + 314.2530 = 566.2530.
    One instance: 566.2530 x 8 / 9216 = 0.491539 requests/s (x 1024 = 503.336 output tok/s).
    2 / 0.491539 = 4.069 => 5 instances = 5 nodes = 40 GPUs."""
    result = cap.capacity({"model": "glm-5.3", "gpu": "h200", "quant": "fp8", "requests_per_s": 2,
                           "ttft_ms": 3000, "tpot_ms": 20})
    ll = row(result, "low-latency")
    assert ll["status"] == "ok" and ll["interpolated"] is True
    assert ll["concurrency"] == 8.1 and ll["ttft_ms"] == 3000 and ll["tok_s_per_gpu"] == 566.3
    assert ll["tpot_ms"] == round(3.71 + (14.20 - 3.71) * (33300 / 4719) / 15, 2)  # 8.65
    assert ll["instance"] == {"requests_per_s": 0.492, "output_tokens_per_s": 503.3}
    assert (ll["instances"], ll["instances_per_node"], ll["nodes"], ll["gpus"]) == (5, 1, 5, 40)
    # high-throughput: c=64 (TTFT 7790, TPOT 21.90) and c=256 (57607, 33.39) are over both limits
    ht = row(result, "high-throughput")
    assert ht["status"] == "no point meets the limits"
    assert ht["reason"] == ("its lowest published TTFT is 7790 ms (concurrency 64), over the 3000 ms limit; its "
                            "lowest published TPOT is 21.9 ms (concurrency 64), over the 20 ms limit")
    assert result["workload"] == {"dataset": "random", "isl": 8192, "osl": 1024}


def test_the_exact_arithmetic_of_the_interpolation() -> None:
    """The same case in fractions: the operating point is exactly on the TTFT limit."""
    a = cap.Point(Fraction(1), Fraction(780), Fraction("3.71"), Fraction(252))
    b = cap.Point(Fraction(16), Fraction(5499), Fraction("14.20"), Fraction(920))
    best = cap.best_point([a, b], Fraction(3000), Fraction(20))
    assert best is not None
    assert best.concurrency == 1 + Fraction(33300, 4719) and best.ttft_ms == 3000
    assert best.tok_s_per_gpu == 252 + Fraction(668 * 2220, 4719)
    per = cap.per_instance(best, 8, 8192, 1024)
    assert per["requests_per_s"] == (252 + Fraction(668 * 2220, 4719)) * 8 / 9216
    assert math.ceil(2 / per["requests_per_s"]) == 5


def test_never_beyond_the_last_published_concurrency() -> None:
    """h200/fp8/high-throughput without limits: the best point is the last one published, c=256 (2558 tok/s/GPU),
    not a higher concurrency on the line through 64 -> 256. 2558 x 8 / 9216 = 2.22049 requests/s;
    10 / 2.22049 = 4.5035 => 5 nodes."""
    result = cap.capacity({"gpu": "h200", "quant": "fp8", "requests_per_s": 10})
    ht = row(result, "high-throughput")
    assert (ht["concurrency"], ht["tok_s_per_gpu"], ht["interpolated"]) == (256, 2558, False)
    assert ht["instance"]["requests_per_s"] == round(2558 * 8 / 9216, 3) == 2.22
    assert ht["nodes"] == 5
    with pytest.raises(ValueError, match="no extrapolation"):
        cap.at(cap.Point(Fraction(64), Fraction(7790), Fraction("21.9"), Fraction(2440)),
               cap.Point(Fraction(256), Fraction(57607), Fraction("33.39"), Fraction(2558)), Fraction(512))


def test_below_the_first_published_concurrency_nothing_is_assumed() -> None:
    """A TTFT limit under the c=1 point (780 ms) is not met by extrapolating towards c=0: no point meets it."""
    a = cap.Point(Fraction(1), Fraction(780), Fraction("3.71"), Fraction(252))
    b = cap.Point(Fraction(16), Fraction(5499), Fraction("14.20"), Fraction(920))
    assert cap.best_point([a, b], Fraction(700), None) is None


def test_no_cell_meets_the_limits() -> None:
    """TTFT <= 500 ms on H200 FP8: the lowest published TTFT is 780 ms (low-latency, c=1) and 7790 ms
    (high-throughput, c=64). Every row says so, and the report says that no cell meets the limits."""
    result = cap.capacity({"gpu": "h200", "quant": "fp8", "requests_per_s": 1, "ttft_ms": 500})
    assert [r["status"] for r in result["rows"]] == ["no point meets the limits"] * 2
    assert row(result, "low-latency")["reason"] == ("its lowest published TTFT is 780 ms (concurrency 1), over the "
                                                    "500 ms limit")
    text = cap.markdown(result)
    assert "**No cell meets the limits** (TTFT <= 500 ms)" in text
    assert "Fewest GPUs" not in text


def test_qwen_gb300_output_tokens_with_several_servers_per_node() -> None:
    """Qwen3.8-27B on GB300 (70e291b7), 1 GPU per server, 4 GPUs per tray; ISL 1024 / OSL 1024. Target 10000
    output tokens/s, TPOT <= 15 ms.

    fp8/balanced: c=1 (TPOT 8.2, 121 tok/s/GPU), c=16 (11.2, 1355), c=64 (19.7, 3012).
      16..64: 11.2 + 8.5 (c - 16)/48 <= 15 => c - 16 <= 3.8 x 48 / 8.5 = 21.4588 => c = 37.46;
      throughput 1355 + 1657 x 21.4588/48 = 1355 + 1657 x 38/85 = 178141/85 = 2095.78 tok/s/GPU;
      output tok/s of one server: 2095.78 x 1024/2048 = 1047.89; 10000 / 1047.89 = 9.54 => 10 servers,
      4 per tray => 3 trays (12 GPUs).
    fp8/high-throughput (MTP): TPOT 9.5 at c=64 is within 15: 4599 tok/s/GPU => 2299.5 output tok/s a server;
      10000 / 2299.5 = 4.35 => 5 servers => 2 trays (8 GPUs), the fewest."""
    result = cap.capacity({"model": "qwen3.8-27b", "gpu": "gb300", "quant": "fp8", "output_tokens_per_s": 10000,
                           "tpot_ms": 15})
    bal, ht = row(result, "balanced"), row(result, "high-throughput")
    assert (bal["concurrency"], bal["tpot_ms"], bal["tok_s_per_gpu"]) == (37.5, 15, 2095.8)
    assert bal["instance"]["output_tokens_per_s"] == 1047.9
    assert (bal["instances"], bal["instances_per_node"], bal["nodes"], bal["gpus"]) == (10, 4, 3, 12)
    assert (ht["concurrency"], ht["instance"]["output_tokens_per_s"]) == (64, 2299.5)
    assert (ht["instances"], ht["nodes"], ht["gpus"]) == (5, 2, 8)
    assert "Fewest GPUs: gb300/fp8/high-throughput (published), 2 node(s), 8 GPUs." in cap.markdown(result)
    assert result["workload"] == {"dataset": "random", "isl": 1024, "osl": 1024}


def test_cells_without_published_numbers_say_so() -> None:
    """DeepSeek-V4-Pro's two-node H200 FP8 cells are pending upstream (bare match stubs): no node count."""
    result = cap.capacity({"model": "deepseek-v4-pro", "gpu": "h200", "quant": "fp8", "requests_per_s": 1})
    assert [(r["strategy"], r["status"]) for r in result["rows"]] == [
        ("low-latency", "no published numbers"), ("balanced", "no published numbers"),
        ("high-throughput", "no published numbers")]
    assert all(r["nodes_per_instance"] == 2 and r["gpus_per_instance"] == 16 for r in result["rows"])


def test_a_measured_run_sits_beside_the_published_numbers() -> None:
    """A benchmark.yml run of GLM-5.3 h200/bf16/balanced over 2 nodes (TP16, 16 GPUs; the cookbook has no
    numbers for it): c=16 median TTFT 1000 ms, TPOT 20 ms, 8000 total tok/s => 500 tok/s/GPU; c=64 TTFT 4000,
    TPOT 40, 19200 tok/s => 1200 tok/s/GPU. Limit TPOT <= 30: 20 + 20 (c - 16)/48 <= 30 => c = 40;
    throughput 500 + 700 x 24/48 = 850 tok/s/GPU; one instance 850 x 16 / 9216 = 1.47569 requests/s;
    3 requests/s => 3 / 1.47569 = 2.03 => 3 instances x 2 nodes = 6 nodes (48 GPUs)."""
    runs = [{"max_concurrency": 16, "median_ttft_ms": 1000, "mean_ttft_ms": 1100, "median_tpot_ms": 20,
             "total_throughput": 8000, "completed": 64},
            {"max_concurrency": 64, "median_ttft_ms": 4000, "mean_ttft_ms": 4100, "median_tpot_ms": 40,
             "total_throughput": 19200, "completed": 128}]
    cell = {"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 2, "cookbook_revision": None}
    measured = cap.measured_run("h200-b01", "glm-5.3", cell, 16, runs, "0.5.23", 8192, 1024)
    assert measured["points"] == [{"concurrency": 16, "ttft_ms": 1000, "tpot_ms": 20, "tok_s_per_gpu": 500},
                                  {"concurrency": 64, "ttft_ms": 4000, "tpot_ms": 40, "tok_s_per_gpu": 1200}]
    measured = json.loads(json.dumps(measured))  # what rendered/benchmark/<host>.json holds
    result = cap.capacity({"gpu": "h200", "quant": "bf16", "requests_per_s": 3, "tpot_ms": 30}, [measured])
    published = row(result, "balanced")
    assert published["status"] == "no published numbers"
    ours = row(result, "balanced", source="measured on h200-b01")
    assert (ours["concurrency"], ours["tpot_ms"], ours["tok_s_per_gpu"]) == (40, 30, 850)
    assert ours["instance"]["requests_per_s"] == round(850 * 16 / 9216, 3)
    assert (ours["instances"], ours["instances_per_node"], ours["nodes"], ours["gpus"]) == (3, 1, 6, 48)
    # a run at another workload is shown, not sized
    other = dict(measured, isl=1024)
    again = cap.capacity({"gpu": "h200", "quant": "bf16", "requests_per_s": 3}, [other])
    assert row(again, "balanced", source="measured on h200-b01")["status"] == "other workload"


def test_the_request_is_checked_in_one_message() -> None:
    with pytest.raises(RecipeError) as err:
        cap.capacity({"gpu": "h200", "requests_per_s": 1, "output_tokens_per_s": 5, "ttft_ms": -1, "tpot": 3})
    text = str(err.value)
    assert text.startswith("capacity: unknown key(s) tpot; known:")
    assert "give exactly one of requests_per_s and output_tokens_per_s" in text
    assert "ttft_ms: -1 must be greater than 0" in text
    with pytest.raises(RecipeError, match=r"capacity: glm-5.3 has no cell for gpu h100 and quant any \(cookbook "
                                          r"revision 8e04be51\); it has b200/bf16"):
        cap.capacity({"gpu": "h100", "requests_per_s": 1})
    with pytest.raises(RecipeError, match="capacity: model 'glm-9' is not one of deepseek-v4-pro, glm-5.3"):
        cap.capacity({"model": "glm-9", "requests_per_s": 1})


def test_the_report_and_the_plot() -> None:
    result = cap.capacity({"model": "qwen3.8-27b", "gpu": "gb300", "requests_per_s": 5, "tpot_ms": 15})
    text = cap.markdown(result)
    assert text.startswith("# Sizing: Qwen3.8-27B for 5 requests/s\n")
    assert "| gb300 | fp8 | balanced | published | 37.5 (interpolated) |" in text
    assert "(4 per node)" in text
    png = cap.plot_png(result)
    if png is not None:  # matplotlib installed
        assert png.startswith(b"\x89PNG") and png == cap.plot_png(result)  # same input, same bytes
