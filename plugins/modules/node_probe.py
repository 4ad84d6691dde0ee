# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.node_probe action plugin (it runs metalserve.sglang.node_state on the node;
what each stage asks is plugins/plugin_utils/site/probe.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_probe
version_added: 0.4.0
author: metalserve.sglang contributors (@metalserve)
short_description: Read a node once for every stage of site.yml (install, weights, server instances, router)
description:
  - Without O(stage), asks M(metalserve.sglang.node_state), in one module run, everything the stages of this host
    compare - what C(metalserve.sglang.sglang_install), C(metalserve.sglang.model_weights),
    C(metalserve.sglang.sglang_server) (each replica) and C(metalserve.sglang.sglang_router) each ask - and returns
    each stage's answer as if it had asked alone (RV(stages)). C(playbooks/site.yml) registers it as
    C(metalserve_node).
  - With O(stage), answers that stage's request (the roles' own probe) - from C(metalserve_node) when that answer
    was given to the same request and no stage before changed the host in this run (a role that applies something
    sets its C(<role>_node_dirty) fact - C(sglang_install_node_dirty), C(model_weights_node_dirty),
    C(sglang_server_node_dirty)), else by running M(metalserve.sglang.node_state) for it. A run that changes nothing
    therefore reads each node once.
  - What each stage asks has one home, C(plugins/plugin_utils/site/probe.py) (also the filter
    P(metalserve.sglang.node_wants#filter), which the roles' apply steps read).
  - The secrets a request hashes (the server's environment, token and API key files, the weights stage's token file)
    are read from the roles' variables - C(sglang_server_hf_token), C(sglang_server_api_key) and
    C(model_weights_hf_token), else C(sglang_hf_token) and C(sglang_api_key) as the roles' defaults do - never from
    the task's arguments. They reach the node only as SHA-256 digests, in a M(metalserve.sglang.node_state) run made
    with C(no_log) (not logged on the node); the answer holds no digest of what was found (only which items differ)
    and not the request, so the task needs no C(no_log).
options:
  plan:
    description: This host's plan (C(metalserve_site.plans[inventory_hostname]) of M(metalserve.sglang.plan)).
    type: dict
    required: true
  play_hosts:
    description: The hosts of this run (C(ansible_play_hosts_all)); a weights fan-out counts only its members among them.
    type: list
    elements: str
    default: []
  router_start:
    description: Whether the router must be running (C(metalserve.sglang.sglang_router)'s C(sglang_router_service_start)).
    type: bool
    default: true
  inputs:
    description:
      - The role settings the plan was made from for this stage (the plan's C(inputs), by name), checked first - a
        setting this play gives another value (a play's C(vars:), a role parameter, which the plan and
        C(playbooks/render.yml) cannot see) fails the task naming each one, both values and where to set it, as the
        filter P(metalserve.sglang.plan_drift#filter) words it.
    type: dict
    default: {}
  run_tags:
    description:
      - Without O(stage), this run's C(--tags) (C(ansible_run_tags)) - only the stages whose plays they run are read
        (install with C(install), C(serve) or C(router); weights with C(weights); the server with C(serve); the router
        with C(router); C(all) runs every one), so a C(--tags install) run never asks the Hub for a manifest.
    type: list
    elements: str
    default: [all]
  skip_tags:
    description: Without O(stage), this run's C(--skip-tags) (C(ansible_skip_tags)); a stage they skip is not read.
    type: list
    elements: str
    default: []
  stage:
    description: The one stage to answer (a role's own probe); omitted, every stage of the host.
    type: str
    choices: [install, weights, server, router]
  replica:
    description: With O(stage=server), the serving instance (its index among sglang_replicas; 0 otherwise).
    type: int
    default: 0
extends_documentation_fragment:
  - metalserve.sglang.attributes.node_action
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode: {support: full}
  diff_mode: {support: none}
"""

EXAMPLES = r"""
- name: Read each node once for every stage of this run
  metalserve.sglang.node_probe:
    plan: "{{ metalserve_site.plans[inventory_hostname] }}"
    play_hosts: "{{ ansible_play_hosts_all }}"
  register: metalserve_node
"""

RETURN = r"""
stages:
  description:
    - Each stage's answer, C({key, differ, state}) as M(metalserve.sglang.node_state) would give it for that stage's
      request alone (C(key) - the request's digest) - C(install), and C(weights) and C(server) (a list, one per
      replica) on servers, or C(router) on routers.
  returned: without O(stage)
  type: dict
differ:
  description: With O(stage), the names of the stage's items that differ (as M(metalserve.sglang.node_state)).
  returned: with O(stage)
  type: list
  elements: str
state:
  description: With O(stage), what was found per item name (as M(metalserve.sglang.node_state)).
  returned: with O(stage)
  type: dict
reused:
  description: With O(stage), whether the answer came from C(metalserve_node) (no module ran).
  returned: with O(stage)
  type: bool
member_changed:
  description:
    - With O(stage=server), whether this member of its serving instance no longer runs what the plan says (a file
      the server reads at start differs, or its container runs another image than the install stage pulled), so
      that every member of the instance restarts.
  returned: with O(stage=server)
  type: bool
node_reads:
  description: How many module runs on the node this answer took (0 when reused, or when the stage compares nothing).
  returned: success
  type: int
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"plan": {"type": "dict", "required": True},
                 "play_hosts": {"type": "list", "elements": "str", "default": []},
                 "router_start": {"type": "bool", "default": True},
                 "inputs": {"type": "dict", "default": {}},
                 "run_tags": {"type": "list", "elements": "str", "default": ["all"]},
                 "skip_tags": {"type": "list", "elements": "str", "default": []},
                 "stage": {"type": "str", "choices": ["install", "weights", "server", "router"]},
                 "replica": {"type": "int", "default": 0}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.node_probe runs as an action plugin (it runs metalserve.sglang.node_state on the node)")


if __name__ == "__main__":
    main()
