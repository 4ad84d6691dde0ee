# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of playbooks/benchmark.yml over plugins/plugin_utils/checks/bench.py (logic and tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as bench_report
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain


def bench_workload(recipe: dict[str, Any], concurrencies: list[int] | None = None) -> list[dict[str, int]]:
    rec = to_plain(recipe)
    cell = {key: rec.get(key) for key in ("gpu", "quant", "strategy", "nodes", "cookbook_revision")}
    return bench_report.workload(rec["model"], cell, [int(c) for c in to_plain(concurrencies) or []])


class FilterModule:
    """metalserve.sglang benchmark filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"bench_workload": bench_workload}
