# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.recipe: a thin plugin over plugins/plugin_utils/recipe/engine.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: recipe
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The SGLang cookbook's serving recipe for a GPU, precision, strategy and node count
description:
  - Picks the cookbook cell for C(gpu)/C(quant)/C(strategy)/C(nodes), applies the playground knobs in a fixed
    order, and translates the flags for the SGLang release that will run them.
  - Errors name the variable to change, what was asked and what the hardware offers.
positional: _input
options:
  _input:
    description:
      - "The selection: the C(sglang_*) inventory variables without their prefix, for example
        C({gpu: h200, quant: fp8, strategy: high-throughput}). data/variables.yml lists every key."
      - C(recipes) adds site recipes (model documents) and C(gpu_platforms) adds GPU ids.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show the H200 FP8 high-throughput command
  ansible.builtin.debug:
    msg: "{{ {'gpu': 'h200', 'quant': 'fp8', 'strategy': 'high-throughput'} | metalserve.sglang.recipe }}"

- name: The same cell as cookbook revision 03d5035a published it
  ansible.builtin.debug:
    msg: "{{ {'gpu': 'h200', 'quant': 'fp8', 'strategy': 'high-throughput', 'cookbook_revision': '03d5035a'} | metalserve.sglang.recipe }}"
"""

RETURN = r"""
_value:
  description:
    - C(model), C(checkpoint), C(gpu), C(quant), C(strategy), C(nodes), C(gpus_per_node), C(verified),
      C(cookbook_revision) (the upstream revision of the cookbook page the cell comes from), C(image),
      C(sglang_version), C(env) (dict), C(args) (argv tokens after C(sglang serve), node independent),
      C(warnings) (list), plus C(port), C(dist_port), C(ports), C(pd_role), C(served_model_name).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine  # noqa: E402


def recipe(selection: dict[str, Any]) -> dict[str, Any]:
    return recipe_engine.recipe(selection)


class FilterModule:
    """The filter metalserve.sglang.recipe."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"recipe": wrap(recipe)}
