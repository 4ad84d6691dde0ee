# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.serve_args: a thin plugin over plugins/plugin_utils/recipe/engine.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: serve_args
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The argv after C(sglang serve) for one node of an instance
description:
  - Same selection as P(metalserve.sglang.recipe#filter). For C(nodes > 1) inserts C(--nnodes), C(--node-rank)
    and C(--dist-init-addr <head_address>:<dist_port>) right after the last parallelism flag (search order C(--enable-dp-attention),
    C(--dp-size), C(--tp-size), else after C(--model-path)), as the cookbook does.
  - Fails when a multi-node selection has no head address or the rank is outside 0..nodes-1.
positional: _input, node_rank, head_address
options:
  _input:
    description: The selection (see P(metalserve.sglang.recipe#filter)).
    type: dict
    required: true
  node_rank:
    description: This node's rank; 0 is the head.
    type: int
    default: 0
  head_address:
    description: Address of rank 0 that every member can reach. Required when nodes > 1.
    type: str
"""

EXAMPLES = r"""
- name: Second node of the H200 BF16 TP16 pair
  ansible.builtin.debug:
    msg: "{{ {'gpu': 'h200', 'quant': 'bf16', 'nodes': 2} | metalserve.sglang.serve_args(1, '10.0.0.11') | join(' ') }}"
"""

RETURN = r"""
_value:
  description: argv tokens, each flag under its full SGLang name.
  type: list
  elements: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine  # noqa: E402


def serve_args(selection: dict[str, Any], node_rank: int = 0, head_address: str | None = None) -> list[str]:
    return recipe_engine.serve_args(selection, node_rank, head_address)


class FilterModule:
    """The filter metalserve.sglang.serve_args."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"serve_args": wrap(serve_args)}
