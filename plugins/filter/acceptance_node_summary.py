# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.acceptance_node_summary: a thin plugin over plugins/plugin_utils/checks/acceptance.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: acceptance_node_summary
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: What a node has to measure, from the node_acceptance health probe's JSON
description:
  - Reads the JSON the node_acceptance role's health probe (C(accept_node.py)) prints and returns what the role needs
    before it measures anything, the GPUs that answered and who is using them now.
  - The role skips the measurements on a node with no GPU answering, or with GPUs in use (C(node_acceptance_skip_busy)).
options:
  _input:
    description: The health probe's JSON, parsed (C(stdout | from_json)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: What there is to measure
  ansible.builtin.set_fact:
    seen: "{{ probe_out.stdout | from_json | metalserve.sglang.acceptance_node_summary }}"
"""

RETURN = r"""
_value:
  description: vendor (C(nvidia), C(amd) or C(none)), gpus (GPUs that answered nvidia-smi or amd-smi), pci_gpus (GPUs on
    the PCI bus) and busy (C(<pid> (<name>)) of each process using a GPU, sorted).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def acceptance_node_summary(node: dict[str, Any]) -> dict[str, Any]:
    return acceptance.node_summary(node)


class FilterModule:
    """The filter metalserve.sglang.acceptance_node_summary."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"acceptance_node_summary": wrap(acceptance_node_summary)}
