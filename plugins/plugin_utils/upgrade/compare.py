# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is the new release as good as the one before, on the same instance, with the same workload? Pure.

A measurement is a list of sglang.bench_serving runs (one JSON object per run, as benchmark.yml collects them), each
with the number of prompts it was given. Per concurrency and metric:

    throughput  total_throughput (input + output tokens/s), higher is better
    ttft        mean_ttft_ms, lower is better
    itl         median_itl_ms (inter-token latency), lower is better
    errors      failed requests / prompts over all runs, lower is better

Each side needs `min_runs` runs and `min_requests` completed requests at that concurrency, or the verdict is
`insufficient` (an upgrade is promoted on evidence, never on its absence). The centre of a side is the median of its
runs. The noise is the old release's own run-to-run spread: half the range of its runs over their median (a wave
with one run per side borrows the canary's). A metric regresses when the new median is worse than the old one by
more than its threshold plus that noise, so noise never rolls a release back; a noise above `max_noise` makes the
metric `noisy` (the measurement cannot tell), which fails it too. Errors compare rates: the new rate may exceed the
old one by at most the errors threshold (0 by default: any new failure fails the upgrade).
"""
from __future__ import annotations

import statistics
from typing import Any, Iterable

METRICS: dict[str, dict[str, Any]] = {
    "throughput": {"key": "total_throughput", "higher_is_better": True, "unit": "tok/s"},
    "ttft": {"key": "mean_ttft_ms", "higher_is_better": False, "unit": "ms"},
    "itl": {"key": "median_itl_ms", "higher_is_better": False, "unit": "ms"},
    "errors": {"key": None, "higher_is_better": False, "unit": "rate"},
}
DEFAULT_THRESHOLDS = {"throughput": 0.05, "ttft": 0.10, "itl": 0.10, "errors": 0.0}


class MeasurementError(ValueError):
    """A measurement that is not sglang.bench_serving's output."""


def runs_by_concurrency(runs: Iterable[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """bench_serving runs (each with `prompts`, the --num-prompts it was given) grouped by max concurrency."""
    out: dict[int, list[dict[str, Any]]] = {}
    for run in runs:
        missing = [k for k in ("max_concurrency", "completed", "prompts", "total_throughput", "mean_ttft_ms",
                               "median_itl_ms") if k not in run]
        if missing:
            raise MeasurementError(f"not a sglang.bench_serving run with its prompt count (missing {', '.join(missing)})")
        out.setdefault(int(run["max_concurrency"] or 0), []).append(run)
    return out


def values(runs: list[dict[str, Any]], metric: str) -> list[float]:
    """One value per run that completed a request (a run without any has no latency or throughput to speak of)."""
    key = METRICS[metric]["key"]
    return [float(r[key]) for r in runs if int(r["completed"]) > 0]


def noise(before: list[float]) -> float:
    """Half the range of the runs over their median (0 for fewer than two runs or a zero median)."""
    if len(before) < 2:
        return 0.0
    centre = statistics.median(before)
    return (max(before) - min(before)) / 2 / centre if centre else 0.0


def worse_by(before: float, after: float, higher_is_better: bool) -> float:
    """How much worse `after` is than `before`, as a fraction of `before` (negative: better)."""
    if before == 0:  # nothing to scale by: only a latency rising from zero is worse
        return 0.0 if higher_is_better or after <= 0 else float("inf")
    change = (after - before) / before
    return -change if higher_is_better else change


def judge_metric(metric: str, concurrency: int, before: list[dict[str, Any]], after: list[dict[str, Any]],
                 threshold: float, min_runs: int, min_requests: int, max_noise: float,
                 borrowed_noise: float | None = None) -> dict[str, Any]:
    """One row of the verdict: {metric, concurrency, before, after, change, threshold, noise, ok, why}."""
    row: dict[str, Any] = {"metric": metric, "concurrency": concurrency, "threshold": threshold, "before": None,
                           "after": None, "change": None, "noise": None, "ok": False, "why": ""}
    done_b, done_a = (sum(int(r["completed"]) for r in side) for side in (before, after))
    if metric == "errors":
        prompts_b, prompts_a = (sum(int(r["prompts"]) for r in side) for side in (before, after))
        if not prompts_b or not prompts_a:
            row["why"] = "insufficient: no request was sent on one side"
            return row
        rate_b, rate_a = (prompts_b - done_b) / prompts_b, (prompts_a - done_a) / prompts_a
        row.update(before=round(rate_b, 4), after=round(rate_a, 4), change=round(rate_a - rate_b, 4))
        row["ok"] = rate_a - rate_b <= threshold
        if not row["ok"]:
            row["why"] = (f"regressed: {prompts_a - done_a} of {prompts_a} requests failed after ({rate_a:.1%}) "
                          f"against {rate_b:.1%} before; allowed +{threshold:.1%}")
        return row
    for side, runs, done in (("before", before, done_b), ("after", after, done_a)):
        if len(values(runs, metric)) < min_runs or done < min_requests:
            row["why"] = (f"insufficient: {len(values(runs, metric))} run(s) and {done} completed request(s) "
                          f"{side}; needs {min_runs} and {min_requests} (upgrade_repeats, upgrade_min_requests)")
            return row
    vb, va = values(before, metric), values(after, metric)
    centre_b, centre_a = statistics.median(vb), statistics.median(va)
    spread = noise(vb) if borrowed_noise is None else float(borrowed_noise)
    change = worse_by(centre_b, centre_a, METRICS[metric]["higher_is_better"])
    row.update(before=round(centre_b, 3), after=round(centre_a, 3), change=round(change, 4), noise=round(spread, 4))
    if spread > max_noise:
        row["why"] = (f"noisy: the runs before spread by +/-{spread:.1%}, more than upgrade_max_noise "
                      f"({max_noise:.0%}); measure longer (upgrade_repeats, benchmark_prompts_scale)")
        return row
    row["ok"] = change <= threshold + spread
    if not row["ok"]:
        unit = METRICS[metric]["unit"]
        row["why"] = (f"regressed: {centre_a:g} {unit} after against {centre_b:g} {unit} before "
                      f"({'-' if METRICS[metric]['higher_is_better'] else '+'}{change:.1%}; allowed "
                      f"{threshold:.0%} + noise {spread:.1%})")
    return row


def judge(before: list[dict[str, Any]], after: list[dict[str, Any]], thresholds: dict[str, float] | None = None,
          min_runs: int = 3, min_requests: int = 20, max_noise: float = 0.2,
          borrowed_noise: dict[str, dict[int, float]] | None = None) -> dict[str, Any]:
    """The verdict of one unit: {ok, rows, failed: [rows], summary}. Every concurrency measured before must be
    measured after. `borrowed_noise` ({metric: {concurrency: noise}}) replaces the noise of the runs before (a wave
    measured once per side borrows the canary's)."""
    limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    unknown = sorted(set(limits) - set(METRICS))
    if unknown:
        raise MeasurementError(f"upgrade_thresholds: {', '.join(unknown)} is not a metric; the metrics are "
                               f"{', '.join(METRICS)}")
    b, a = runs_by_concurrency(before), runs_by_concurrency(after)
    rows = []
    for concurrency in sorted(set(b) | set(a)):
        for metric in METRICS:
            # state files keep concurrencies as strings (JSON keys)
            borrowed = {int(k): float(v) for k, v in (borrowed_noise or {}).get(metric, {}).items()}.get(concurrency)
            rows.append(judge_metric(metric, concurrency, b.get(concurrency, []), a.get(concurrency, []),
                                     float(limits[metric]), min_runs, min_requests, max_noise, borrowed))
    failed = [r for r in rows if not r["ok"]]
    ok = bool(rows) and not failed
    if not rows:
        summary = "insufficient: no benchmark run on either side"
    elif ok:
        summary = "passed: " + ", ".join(f"{r['metric']}@{r['concurrency']} {_signed(r)}" for r in rows)
    else:
        summary = "; ".join(f"{r['metric']} at concurrency {r['concurrency']}: {r['why']}" for r in failed)
    return {"ok": ok, "rows": rows, "failed": failed, "summary": summary}


def _signed(row: dict[str, Any]) -> str:
    if row["change"] is None:
        return "-"
    if row["metric"] == "errors":
        return f"{row['after']:.1%}"
    return f"{'worse' if row['change'] > 0 else 'better'} {abs(row['change']):.1%}"


def noise_of(runs: list[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """The noise of a measurement (the canary's runs before), per metric and concurrency, for the waves."""
    out: dict[str, dict[int, float]] = {}
    for concurrency, group in runs_by_concurrency(runs).items():
        for metric in METRICS:
            if metric != "errors":
                out.setdefault(metric, {})[concurrency] = noise(values(group, metric))
    return out
