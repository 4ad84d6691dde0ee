# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.upgrade_plan action plugin (it runs on the controller; the logic is in
plugins/plugin_utils/upgrade/)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: upgrade_plan
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Decide one run of playbooks/upgrade.yml - the running and target plans, the change, canary and waves
description:
  - Plans the site twice with the planner render.yml and site.yml use, once for the target (the inventory) and once
    for what the nodes run (the inputs C(rendered/upgrade/state.json) recorded, or before the first upgrade the
    inventory with O(upgrade_from)), and picks per host the plan its unit file matches (O(node_units)); a node that
    runs neither is refused.
  - Compares the files of both plans as render.yml writes them and writes C(CHANGE.md) (per host the stages and a
    unified diff of every file that changes) into O(dest), in check mode too.
  - Groups the servers that change into units (an instance with all its members; a PD prefill and decode pair),
    chooses the canary, plans the waves (per rack or O(batch_size) units, never emptying a router's pool) and
    starts or resumes C(state.json) (not in check mode).
  - Refuses a target that changes the driver, RDMA or container runtime stage, role settings, the shape of an
    instance, or a checkpoint revision into the folder the running server reads; an upgrade of another target still
    open; a target that was rolled back (unless O(retry)); a wave that would leave a router without workers (unless
    O(allow_outage)).
  - 'Reports changed=false: it writes bookkeeping on the controller only; the roles that move the nodes report their
    changes.'
options:
  dest:
    description: The upgrade's folder on the controller (C(rendered/upgrade)).
    type: path
    required: true
  node_units:
    description: Per host, the SHA-1 of each C(/etc/systemd/system/sglang-*.service) on the node, by path.
    type: dict
    default: {}
  upgrade_from:
    description:
      - Before the first upgrade (no C(state.json)), the variables as the nodes run them, put on every host to plan
        the running site (for example C(sglang_version) set to C(0.5.13.post1)); C(null) means unset. Never secrets
        or role settings.
    type: dict
    default: {}
  upgrade_from_groups:
    description: Like O(upgrade_from), per inventory group (applied after it).
    type: dict
    default: {}
  canary:
    description: The canary, a unit id or any host of it; empty chooses the first unit (by rack, then id) whose routers
      keep another unit serving.
    type: str
    default: ""
  wave_by:
    description: C(rack) makes one wave per rack; C(batch) one wave per O(batch_size) units.
    type: str
    choices: [rack, batch]
    default: batch
  batch_size:
    description: Units per wave with O(wave_by=batch).
    type: int
    default: 1
  allow_outage:
    description: Move a unit that is the only one behind its router (the router answers errors meanwhile).
    type: bool
    default: false
  retry:
    description: Try a target that was rolled back again.
    type: bool
    default: false
  measure_router_port:
    description:
      - The port of the router a PD unit is measured through, started on its decode head on 127.0.0.1 (its metrics
        on the next port). The command it runs is in the result's C(units.<host>.measure.router.args).
    type: int
    default: 39100
    version_added: 0.2.0
  settings:
    description: The thresholds and measurement settings of the run, kept in the state with the target.
    type: dict
    default: {}
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Decide this run
  metalserve.sglang.upgrade_plan:
    dest: rendered/upgrade
    node_units:
      node1: {/etc/systemd/system/sglang-glm-5.3.service: 0a1b2c3d4e5f60718293a4b5c6d7e8f901234567}
    upgrade_from: {sglang_version: 0.5.13.post1}
  run_once: true
  register: upgrade
"""

RETURN = r"""
status:
  description: C(nothing), C(start), C(resume) or C(commit).
  returned: always
  type: str
target_site:
  description: The target's plan, as M(metalserve.sglang.plan) returns it (what the roles apply when a unit moves).
  returned: always
  type: dict
previous_site:
  description: The plan a rollback returns to.
  returned: always
  type: dict
canary_hosts:
  description: The hosts of the canary unit (empty when it moved already).
  returned: always
  type: list
  elements: str
wave_hosts:
  description: The hosts of every wave still to move, wave after wave.
  returned: always
  type: list
  elements: str
serial:
  description: The hosts per wave, for the waves play's C(serial).
  returned: always
  type: list
  elements: int
routers:
  description: The routers to move after the waves.
  returned: always
  type: list
  elements: str
units:
  description: Per host of a moving unit, its unit (id, hosts, heads, routers, pd).
  returned: always
  type: dict
change:
  description: Per host, the rendered files that change.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"dest": {"type": "path", "required": True},
                 "node_units": {"type": "dict", "default": {}},
                 "upgrade_from": {"type": "dict", "default": {}},
                 "upgrade_from_groups": {"type": "dict", "default": {}},
                 "canary": {"type": "str", "default": ""},
                 "wave_by": {"type": "str", "choices": ["rack", "batch"], "default": "batch"},
                 "batch_size": {"type": "int", "default": 1},
                 "allow_outage": {"type": "bool", "default": False},
                 "retry": {"type": "bool", "default": False},
                 "measure_router_port": {"type": "int", "default": 39100},
                 "settings": {"type": "dict", "default": {}}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.upgrade_plan runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
