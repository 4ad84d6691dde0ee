# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance stage: what node_acceptance holds a server's node to that the plan decides. Pure.

Node acceptance measures the node and writes nothing on it; what the plan owns is the count of GPUs the node must
show (node_acceptance_expected_gpus, 0: every GPU the host's servers use), so rendered/<host>/acceptance.yml shows
it and site/weights_inputs.py judges it against the servers' GPUs and the platform's. The role reads the count
from here. Its thresholds and timings stay converge-only (roles/node_acceptance/meta/variables.yml).
"""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import replicas, runtime


def servers_gpus(plan: dict[str, Any]) -> int:
    """The GPUs a server host's servers use together (every replica's)."""
    return sum(int(i["recipe"]["gpus_per_node"]) for i in replicas.instances_of(plan))


def acceptance_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
                     groups: dict[str, list[str]]) -> dict[str, Any]:
    del groups
    stage = {"stage": "acceptance", "role": "node_acceptance", "applies": plan["role"] == "server", "why": "",
             "settings": {}, "packages": {}, "files": {}, "services": [], "modules": [], "decided_on_node": [],
             "inputs": {}}
    if plan["role"] != "server":
        stage["why"] = f"{host} serves no model (sglang_role {plan['role']}): nothing to accept"
        return stage
    s = runtime.settings(hostvars[host], "node_acceptance")
    stage["inputs"] = runtime.plan_inputs(s)
    used = servers_gpus(plan)
    given = int(s["node_acceptance_expected_gpus"] or 0)
    stage["settings"] = {"expected_gpus": given or used, "servers_use": used,
                         "from": "node_acceptance_expected_gpus" if given else "the servers' GPUs"}
    stage["decided_on_node"].append({"what": "the measurements", "why": "GPU health, links, all-reduce and memory "
                                     "bandwidth, judged against data/gpus.yml (playbooks/accept.yml)"})
    return stage
