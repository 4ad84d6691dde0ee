# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.bench_workload: a thin plugin over plugins/plugin_utils/checks/bench.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: bench_workload
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The concurrencies and prompt counts playbooks/benchmark.yml runs for a cell
description:
  - The asked concurrencies, else those the cookbook published for the cell, else the strategy's upstream ones;
    prompts per concurrency from data/models/<model>/cookbook/<revision>/benchmarks.yml (1->8, 16->64,
    64->128, 256->512, 1024->2048) of the recipe's cookbook revision (its cookbook_revision).
positional: _input, concurrencies, recipes
options:
  _input:
    description: A plan's recipe.
    type: dict
    required: true
  concurrencies:
    description: Concurrencies to run instead.
    type: list
    elements: int
  recipes:
    description: The site's sglang_recipes, where the model comes from a site's own folder (its benchmarks.yml).
    type: list
    elements: raw
"""

EXAMPLES = r"""
- name: The runs of playbooks/benchmark.yml for an H200 FP8 balanced server
  ansible.builtin.debug:
    msg: "{{ {'gpu': 'h200', 'quant': 'fp8', 'strategy': 'balanced'} | metalserve.sglang.recipe | metalserve.sglang.bench_workload }}"

- name: Only concurrencies 1 and 64
  ansible.builtin.debug:
    msg: "{{ {'gpu': 'h200', 'quant': 'fp8'} | metalserve.sglang.recipe | metalserve.sglang.bench_workload([1, 64]) }}"
"""

RETURN = r"""
_value:
  description: >-
    List of {concurrency, prompts, dataset, isl, osl, range_ratio, warmup_requests, backend, extra_args}: the page's
    workload, or the point's own where it ran at another one; a setting the page's speed command leaves out is none.
  type: list
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as bench_report  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402


def bench_workload(recipe: dict[str, Any], concurrencies: list[int] | None = None,
                   recipes: list[Any] | None = None) -> list[dict[str, Any]]:
    rec = to_plain(recipe)
    cell = {key: rec.get(key) for key in ("gpu", "quant", "strategy", "nodes", "cookbook_revision")}
    return bench_report.workload(rec["model"], cell, [int(c) for c in to_plain(concurrencies) or []],
                                 to_plain(recipes) or None)


class FilterModule:
    """The filter metalserve.sglang.bench_workload."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"bench_workload": bench_workload}
