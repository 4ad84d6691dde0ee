# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.capacity: a thin plugin over plugins/plugin_utils/sizing/capacity.py, where its logic
and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: capacity
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Nodes per cookbook cell for a target load, from the published speed points
description:
- For a target load at the cookbook's published workload (requests/s or output tokens/s, e.g. random prompts of
  8192 input and 1024 output tokens for GLM-5.3) and optional TTFT/TPOT limits, gives each cell of the model (on
  one GPU, or all its GPUs) the nodes it needs.
- A cell runs at the highest throughput whose TTFT and TPOT stay within the limits, interpolated linearly between
  its published concurrency points (C(data/models/<model>/cookbook/<revision>/benchmarks.yml)) and never beyond
  the first or the last of them. One instance serves tokens/s per GPU x its GPUs / (ISL + OSL) requests/s (x OSL
  for output tokens/s); the target needs ceil(target / that) instances; instances smaller than a node share it.
- A cell with no published point within the limits, or no published numbers at all, says so instead of a node count.
- Measured runs of playbooks/benchmark.yml (C(rendered/benchmark/<host>.json)) of the same model, cell and workload
  are sized the same way, in rows of their own beside the published ones.
positional: _input, measured
options:
  _input:
    description:
    - The request. C(model) (default glm-5.3), C(gpu) (unset - every GPU of the model), C(quant) (unset - every
      precision), C(cookbook_revision) (unset - the newest shipped), exactly one of C(requests_per_s) and C(output_tokens_per_s),
      and the limits C(ttft_ms) and C(tpot_ms) (unset - no limit).
    - C(recipes) and C(gpu_platforms) add a site's models and GPUs as the recipe filter takes them.
    type: dict
    required: true
  measured:
    description: Benchmark runs, each the content of a C(rendered/benchmark/<host>.json).
    type: list
    elements: dict
"""

EXAMPLES = r"""
- name: Nodes of each H200 GLM-5.3 cell for 20 requests/s with TTFT under 3 s and TPOT under 30 ms
  ansible.builtin.debug:
    msg: "{{ {'model': 'glm-5.3', 'gpu': 'h200', 'requests_per_s': 20, 'ttft_ms': 3000, 'tpot_ms': 30} | metalserve.sglang.capacity }}"

- name: The same with the site's own measurements beside the published ones
  ansible.builtin.debug:
    msg: "{{ {'model': 'glm-5.3', 'gpu': 'h200', 'output_tokens_per_s': 50000} | metalserve.sglang.capacity(runs) }}"
  vars:
    runs: "{{ query('ansible.builtin.file', *query('ansible.builtin.fileglob', 'rendered/benchmark/*.json')) | map('from_json') | list }}"
"""

RETURN = r"""
_value:
  description:
  - C(model), C(display_name), C(gpu), C(quant), C(cookbook_revision), C(benchmarks_source), C(workload) (dataset,
    isl, osl), C(target) (kind, value, ttft_ms, tpot_ms) and C(rows).
  - 'Each row: gpu, quant, strategy, nodes_per_instance, gpus_per_instance, verified, source (C(published) or C(measured
    on <host>)), points, status (C(ok), C(no point meets the limits), C(no published numbers), C(other workload)),
    and for ok the operating point (concurrency, interpolated, ttft_ms, tpot_ms, tok_s_per_gpu), instance (requests_per_s,
    output_tokens_per_s), instances, instances_per_node, nodes and gpus; otherwise reason.'
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import capacity as sizing  # noqa: E402


def capacity(request: dict[str, Any], measured: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    if measured is not None and not isinstance(measured, list):
        raise RecipeError(f"capacity: measured must be a list of benchmark runs (rendered/benchmark/<host>.json), "
                          f"got {type(measured).__name__}")
    return sizing.capacity(request, measured or [])


class FilterModule:
    """The filter metalserve.sglang.capacity."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"capacity": _wrap(capacity)}
