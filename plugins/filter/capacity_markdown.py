# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.capacity_markdown: a thin plugin over plugins/plugin_utils/sizing/capacity.py, where its logic
and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: capacity_markdown
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The Markdown report (rendered/SIZING.md) of a capacity result
description:
- One table row per cell (and per measured run) of a P(metalserve.sglang.capacity#filter) result - the operating
  point, what one instance serves, instances and nodes, or why the cell has none - then the notes and the configuration
  with the fewest GPUs.
options:
  _input:
    description: The result of P(metalserve.sglang.capacity#filter).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The sizing table
  ansible.builtin.debug:
    msg: "{{ {'gpu': 'h200', 'requests_per_s': 20, 'ttft_ms': 3000} | metalserve.sglang.capacity | metalserve.sglang.capacity_markdown }}"
"""

RETURN = r"""
_value:
  description: The Markdown text.
  type: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import capacity as sizing  # noqa: E402


def capacity_markdown(result: dict[str, Any]) -> str:
    if not isinstance(result, dict) or "rows" not in result:
        raise RecipeError("capacity_markdown: expected the result of metalserve.sglang.capacity")
    return sizing.markdown(result)


class FilterModule:
    """The filter metalserve.sglang.capacity_markdown."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"capacity_markdown": _wrap(capacity_markdown)}
