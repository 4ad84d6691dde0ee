# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.node_wants: a thin plugin over plugins/plugin_utils/site/probe.py, where its logic and
unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: node_wants
version_added: 0.4.0
author: metalserve.sglang contributors (@metalserve)
short_description: What a stage compares on a node (the request of metalserve.sglang.node_state)
description:
  - Returns the items (files by hash, folders, links, accounts, units, commands, listings, staged weights) that a
    stage of C(playbooks/site.yml) compares with the node, as M(metalserve.sglang.node_state) takes them.
  - The same requests are what M(metalserve.sglang.node_probe) asks for every stage at once; a role compares its own
    request with the one that answer was given for before reusing it.
positional: _input, stage
options:
  _input:
    description: A host's plan (one entry of the plan action's RV(metalserve.sglang.plan#module:plans)).
    type: dict
    required: true
  stage:
    description: The stage.
    type: str
    required: true
    choices: [install, weights, server, router]
  replica:
    description: For C(server), the serving instance of the host (its index among sglang_replicas; 0 otherwise).
    type: int
    default: 0
  play_hosts:
    description: For C(weights), the hosts of this run (a fan-out counts only its members among them).
    type: list
    elements: str
    default: []
  secrets:
    description: The values hashed into the request (C(server_hf_token), C(server_api_key), C(weights_hf_token)).
    type: dict
    default: {}
  router_start:
    description: For C(router), whether the router must be running.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Read what the node has of this server
  metalserve.sglang.node_state:
    files: "{{ wants.files }}"
    units: "{{ wants.units }}"
  vars:
    wants: "{{ metalserve_site.plans[inventory_hostname] | metalserve.sglang.node_wants('server', secrets={'server_api_key': key}) }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: The request, one list per item kind (C(files), C(directories), C(links), C(groups), C(users), C(units),
    C(commands), C(listings), C(weights)).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import probe  # noqa: E402


def node_wants(plan: dict[str, Any], stage: str, replica: int = 0, play_hosts: list[str] | None = None,
               secrets: dict[str, Any] | None = None, router_start: bool = True) -> dict[str, Any]:
    values = {str(k): ("" if v is None else v) for k, v in (secrets or {}).items()}
    return probe.stage_wants(plan, stage, int(replica), [str(h) for h in play_hosts or []], values, bool(router_start))


class FilterModule:
    """The filter metalserve.sglang.node_wants."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"node_wants": wrap(node_wants)}
