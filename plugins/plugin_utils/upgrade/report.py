# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rendered/upgrade/REPORT.md and report.png from the upgrade state: before and after per metric, per unit and wave,
with the cookbook's published number for the same cell beside them. Pure except plot(), which needs matplotlib.

Ours is per GPU like the cookbook's: total (input + output) throughput over the instance's GPUs; the published
TPOT stands beside our inter-token latency (the same quantity for one stream; bench_serving reports both).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import compare

PUBLISHED_KEY = {"throughput": "tok_s_per_gpu", "ttft": "ttft_ms", "itl": "tpot_ms"}


def published_speed(cell: dict[str, Any] | None) -> dict[int, dict[str, Any]]:
    """The cookbook's published points of a cell, by concurrency (empty when it has none)."""
    if not cell:
        return {}
    entry = bench.published(cell["model"], cell)["entry"] or {}
    return {int(s["concurrency"]): s for s in entry.get("speed", [])}


def _fmt(value: Any, metric: str) -> str:
    if value is None:
        return "-"
    if metric == "errors":
        return f"{float(value):.1%}"
    return f"{float(value):.4g}"


def unit_rows(unit: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict's rows, per GPU where the cookbook publishes per GPU, with the published value beside."""
    verdict = unit.get("verdict") or {}
    gpus = max(1, int((unit.get("cell") or {}).get("gpus") or 1))
    speed = published_speed(unit.get("cell"))
    rows = []
    for row in verdict.get("rows", []):
        out = dict(row)
        pub = speed.get(int(row["concurrency"]), {}).get(PUBLISHED_KEY.get(row["metric"], ""))
        if row["metric"] == "throughput":
            out["before"] = None if row["before"] is None else row["before"] / gpus
            out["after"] = None if row["after"] is None else row["after"] / gpus
        out["published"] = pub
        rows.append(out)
    return rows


def _outcome(unit: dict[str, Any]) -> str:
    phase = unit.get("phase", "pending")
    if phase == "rolled_back":
        secs = unit.get("rollback_seconds")
        return "rolled back" + (f" in {secs:.0f} s" if isinstance(secs, (int, float)) else "")
    return phase


def markdown(state: dict[str, Any]) -> str:
    status = state.get("status", "in_progress")
    lines = ["# Upgrade report", "",
             f"Target `{state.get('target')}`: **{status.replace('_', ' ')}** (started {state.get('started')}, "
             f"updated {state.get('updated')}).", ""]
    failed = [(uid, u) for uid, u in state.get("units", {}).items() if u.get("phase") == "rolled_back"]
    for uid, unit in failed:
        lines += [f"Rolled back {uid}: {unit.get('reason') or (unit.get('verdict') or {}).get('summary') or 'failed'}", ""]
    waves = [[state.get("canary")]] + list(state.get("waves", []))
    lines += ["| wave | unit | hosts | outcome | verdict |", "| --- | --- | --- | --- | --- |"]
    for i, ids in enumerate(waves):
        for uid in ids:
            unit = state["units"].get(uid) or {}
            verdict = unit.get("verdict") or {}
            lines.append(f"| {'canary' if i == 0 else i} | {uid} | {', '.join(unit.get('hosts', []))} | {_outcome(unit)} "
                         f"| {'pass' if verdict.get('ok') else ('FAIL' if verdict else '-')} |")
    for router, entry in sorted(state.get("routers", {}).items()):
        lines.append(f"| routers | {router} | {router} | {entry.get('phase')} | - |")
    lines.append("")
    for i, ids in enumerate(waves):
        for uid in ids:
            unit = state["units"].get(uid) or {}
            rows = unit_rows(unit)
            if not rows:
                continue
            cell = unit.get("cell") or {}
            lines += [f"## {'Canary' if i == 0 else f'Wave {i}'}: {uid}", "",
                      f"Cell {cell.get('model')} {cell.get('gpu')}/{cell.get('quant')}/{cell.get('strategy')}/"
                      f"{cell.get('nodes')} node(s), {cell.get('gpus')} GPU(s); SGLang {cell.get('from_release')} -> "
                      f"{cell.get('release')}; published: cookbook revision {cell.get('cookbook_revision')}. "
                      f"Throughput is tokens/s per GPU (input + output), latencies in ms.", "",
                      "| concurrency | metric | before | after | change | allowed | published | verdict |",
                      "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
            for r in rows:
                change = "-" if r["change"] is None else (f"{r['change']:+.1%}" if r["metric"] != "errors"
                                                          else f"{r['change']:+.1%}")
                allowed = f"{r['threshold']:.0%}" + (f" + {r['noise']:.1%} noise" if r.get("noise") else "")
                lines.append(f"| {r['concurrency']} | {r['metric']} | {_fmt(r['before'], r['metric'])} | "
                             f"{_fmt(r['after'], r['metric'])} | {change} | {allowed} | "
                             f"{_fmt(r['published'], r['metric'])} | {'pass' if r['ok'] else 'FAIL: ' + r['why']} |")
            lines.append("")
    if state.get("note"):
        lines += [str(state["note"]), ""]
    return "\n".join(lines)


def plot(state: dict[str, Any], path: Path) -> bool:
    """Before and after per unit for throughput per GPU, TTFT and ITL at each unit's first concurrency, the
    cookbook's published value as a line. False without matplotlib or without a verdict to draw."""
    units = [(uid, u) for ids in [[state.get("canary")]] + list(state.get("waves", []))
             for uid in ids if (state["units"].get(uid) or {}).get("verdict")
             for u in [state["units"][uid]]]
    if not units:
        return False
    try:
        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    metrics = [m for m in compare.METRICS if m != "errors"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 4))
    for ax, metric in zip(axes, metrics):
        names, before, after, published = [], [], [], []
        for uid, unit in units:
            rows = [r for r in unit_rows(unit) if r["metric"] == metric]
            if not rows:
                continue
            names.append(uid.split("@")[-1])
            before.append(rows[0]["before"] or 0)
            after.append(rows[0]["after"] or 0)
            published.append(rows[0]["published"])
        xs = list(range(len(names)))
        ax.bar([x - 0.2 for x in xs], before, 0.4, label="before")
        ax.bar([x + 0.2 for x in xs], after, 0.4, label="after")
        pub = [p for p in published if p is not None]
        if pub:
            ax.axhline(pub[0], linestyle="--", color="grey", label="cookbook")
        ax.set_xticks(xs)
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=7)
        ax.set_title({"throughput": "tok/s per GPU", "ttft": "TTFT ms", "itl": "ITL ms"}[metric])
        ax.legend(fontsize=7)
    fig.suptitle(f"upgrade {state.get('target')}: {state.get('status')}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
