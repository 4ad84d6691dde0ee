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
short_description: What a node has to measure, and who holds its GPUs, from the node_acceptance health probe's JSON
description:
  - Reads the JSON the node_acceptance role's health probe (C(accept_node.py)) prints and returns what the role needs
    before it measures anything, the GPUs that answered, which processes hold them and why the measurement is skipped.
  - Only this host's serving unit may hold the GPUs, recognised by its unit (uv installs, cgroup
    C(/system.slice/<unit>)) or its container (docker installs, C(sglang-<instance>)). Anything else skips the
    measurement, and M(metalserve.sglang.acceptance) refuses the host.
positional: _input, plan, skip_busy
options:
  _input:
    description: The health probe's JSON, parsed (C(stdout | from_json)).
    type: dict
    required: true
  plan:
    description: The host's site plan (C(metalserve_site.plans[host])). Empty or not a server, every process on the
      GPUs is foreign.
    type: dict
    default: {}
  skip_busy:
    description: Skip the measurement while the serving unit holds the GPUs (C(node_acceptance_skip_busy)).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Who holds the GPUs, and whether the measurement runs
  ansible.builtin.set_fact:
    seen: >-
      {{ probe.stdout | from_json
         | metalserve.sglang.acceptance_node_summary(metalserve_site.plans[inventory_hostname], true) }}
  # seen.foreign: ['pid 4242 (python3, user root, cgroup /user.slice/user-0.slice/session-3.scope) holds ...']
  # seen.skip: "GPU memory held by process(es) other than this host's serving unit: 4242 (python3) (refused)"
"""

RETURN = r"""
_value:
  description: vendor (C(nvidia), C(amd) or C(none)), gpus (GPUs that answered nvidia-smi or amd-smi), pci_gpus (GPUs on
    the PCI bus), own and foreign (the processes holding GPU memory, this host's serving unit's and the others') and
    skip (why the measurement does not run, empty when it does).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def acceptance_node_summary(node: dict[str, Any], plan: dict[str, Any] | None = None,
                            skip_busy: bool = True) -> dict[str, Any]:
    return acceptance.node_summary(node, plan, bool(skip_busy))


class FilterModule:
    """The filter metalserve.sglang.acceptance_node_summary."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"acceptance_node_summary": wrap(acceptance_node_summary)}
