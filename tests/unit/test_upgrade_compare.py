"""The comparison of playbooks/upgrade.yml (plugins/plugin_utils/upgrade/compare.py): thresholds, the old release's
noise, repeated runs, the minimum sample. Every expected number below is worked out by hand in the comment beside it;
the run format is sglang.bench_serving's (tests/fixtures/bench/bench_serving-0.5.23-double.jsonl)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import compare
from ansible_collections.metalserve.sglang.tests.helpers import ROOT


def run(tput: float, ttft: float = 100.0, itl: float = 10.0, done: int = 8, prompts: int = 8,
        concurrency: int = 4) -> dict[str, Any]:
    return {"max_concurrency": concurrency, "completed": done, "prompts": prompts, "total_throughput": tput,
            "mean_ttft_ms": ttft, "median_itl_ms": itl}


def row(verdict: dict[str, Any], metric: str, concurrency: int = 4) -> dict[str, Any]:
    return next(r for r in verdict["rows"] if r["metric"] == metric and r["concurrency"] == concurrency)


BEFORE = [run(1000, 100, 10.0), run(1010, 104, 10.2), run(990, 96, 9.8)]
# throughput: median 1000, noise (1010 - 990) / 2 / 1000 = 1 %;  TTFT: median 100, noise (104 - 96) / 2 / 100 = 4 %
# ITL: median 10.0, noise (10.2 - 9.8) / 2 / 10 = 2 %


def test_the_real_bench_serving_format_is_read() -> None:
    line = (ROOT / "tests/fixtures/bench/bench_serving-0.5.23-double.jsonl").read_text().splitlines()[0]
    parsed = compare.runs_by_concurrency([{**json.loads(line), "prompts": 4}])
    assert list(parsed) == [1] and compare.values(parsed[1], "throughput") == [pytest.approx(4124.755049696803)]


def test_same_numbers_pass() -> None:
    verdict = compare.judge(BEFORE, BEFORE)
    assert verdict["ok"] and verdict["failed"] == []
    assert row(verdict, "throughput")["noise"] == 0.01 and row(verdict, "ttft")["noise"] == 0.04


def test_a_drop_within_threshold_plus_noise_passes_and_beyond_it_fails() -> None:
    # 945 is 5.5 % below 1000: allowed 5 % + 1 % noise
    assert row(compare.judge(BEFORE, [run(940), run(945), run(950)]), "throughput")["ok"]
    # 930 is 7 % below: beyond 6 %
    verdict = compare.judge(BEFORE, [run(925), run(930), run(935)])
    r = row(verdict, "throughput")
    assert not verdict["ok"] and not r["ok"] and r["change"] == 0.07
    assert verdict["summary"] == ("throughput at concurrency 4: regressed: 930 tok/s after against 1000 tok/s before "
                                  "(-7.0%; allowed 5% + noise 1.0%)")


def test_ttft_rising_past_its_threshold_fails_naming_it() -> None:
    # +13 % passes (10 % + 4 % noise); +20 % fails
    assert row(compare.judge(BEFORE, [run(1000, t) for t in (112, 113, 115)]), "ttft")["ok"]
    verdict = compare.judge(BEFORE, [run(1000, t) for t in (119, 120, 121)])
    assert [r["metric"] for r in verdict["failed"]] == ["ttft"]
    assert verdict["summary"].startswith("ttft at concurrency 4: regressed: 120 ms after against 100 ms before (+20.0%")


def test_itl_with_a_tighter_threshold() -> None:
    after = [run(1000, 100, i) for i in (10.5, 10.6, 10.4)]  # median 10.5: +5 %
    assert row(compare.judge(BEFORE, after), "itl")["ok"]  # default 10 % + 2 %
    assert not row(compare.judge(BEFORE, after, {"itl": 0.02}), "itl")["ok"]  # 2 % + 2 % < 5 %


def test_too_few_runs_or_requests_is_insufficient() -> None:
    verdict = compare.judge(BEFORE, BEFORE[:2])
    assert not verdict["ok"]
    assert row(verdict, "throughput")["why"] == ("insufficient: 2 run(s) and 16 completed request(s) after; needs 3 and "
                                                 "20 (upgrade_repeats, upgrade_min_requests)")
    # three runs of 4 requests: 12 < 20
    small = [run(1000, done=4, prompts=4)] * 3
    assert row(compare.judge(small, small), "ttft")["why"].startswith("insufficient: 3 run(s) and 12 completed")
    assert compare.judge(small, small, min_requests=12)["ok"]


def test_a_noisy_baseline_cannot_judge() -> None:
    noisy = [run(1000, t) for t in (100, 200, 150)]  # median 150, noise (200 - 100) / 2 / 150 = 33 %
    r = row(compare.judge(noisy, noisy), "ttft")
    assert not r["ok"] and r["noise"] == 0.3333
    assert r["why"].startswith("noisy: the runs before spread by +/-33.3%, more than upgrade_max_noise (20%)")
    assert row(compare.judge(noisy, noisy, max_noise=0.5), "ttft")["ok"]


def test_errors_compare_rates() -> None:
    after = [run(1000), run(1000), run(1000, done=7)]  # 1 of 24 failed: 4.2 %
    r = row(compare.judge(BEFORE, after), "errors")
    assert not r["ok"] and (r["before"], r["after"]) == (0.0, 0.0417)
    assert r["why"] == "regressed: 1 of 24 requests failed after (4.2%) against 0.0% before; allowed +0.0%"
    assert row(compare.judge(BEFORE, after, {"errors": 0.05}), "errors")["ok"]


def test_nothing_completed_after_is_insufficient_not_a_pass() -> None:
    dead = [run(0, 0, 0, done=0)] * 3
    verdict = compare.judge(BEFORE, dead)
    assert not verdict["ok"]
    assert {r["metric"] for r in verdict["failed"]} == {"throughput", "ttft", "itl", "errors"}


def test_a_concurrency_measured_only_before_fails() -> None:
    verdict = compare.judge(BEFORE + [run(500, concurrency=16)] * 3, BEFORE)
    assert not verdict["ok"] and {r["concurrency"] for r in verdict["failed"]} == {16}


def test_a_wave_of_one_run_borrows_the_canarys_noise() -> None:
    canary_noise = compare.noise_of(BEFORE)
    assert canary_noise["ttft"] == {4: 0.04}
    # one run each side: 113 against 100 is +13 %; with the canary's 4 % it passes, with no noise it fails
    one_b, one_a = [run(1000, 100)], [run(1000, 113)]
    assert row(compare.judge(one_b, one_a, min_runs=1, min_requests=8, borrowed_noise=canary_noise), "ttft")["ok"]
    assert not row(compare.judge(one_b, one_a, min_runs=1, min_requests=8), "ttft")["ok"]
    # the state keeps concurrencies as JSON keys (strings)
    as_json = json.loads(json.dumps(canary_noise))
    assert row(compare.judge(one_b, one_a, min_runs=1, min_requests=8, borrowed_noise=as_json), "ttft")["ok"]


def test_an_unknown_metric_threshold_is_refused() -> None:
    with pytest.raises(compare.MeasurementError, match="upgrade_thresholds: latency is not a metric; the metrics are "
                                                       "throughput, ttft, itl, errors"):
        compare.judge(BEFORE, BEFORE, {"latency": 0.1})


def test_a_run_without_its_prompt_count_is_refused() -> None:
    with pytest.raises(compare.MeasurementError, match="missing prompts"):
        compare.runs_by_concurrency([{k: v for k, v in run(1).items() if k != "prompts"}])
