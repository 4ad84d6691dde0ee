# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.plan action plugin (it runs on the controller)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Plan what every host serves, from the inventory's sglang_* variables
description:
  - Builds, on the controller, the plan of each host. That is its recipe (the cookbook cell plus knobs), the
    exact C(sglang serve) argv for its rank, instance name and members, the environment, and for router hosts
    the C(sglang_router.launch_router) argv.
  - Run it once with C(run_once=true). It plans every host in one pass and reports the problems of all hosts in
    one failure message.
  - Secrets never enter a plan. C(secret_env) lists the names of the variables they will fill.
options:
  hosts:
    description: Hosts to plan. Defaults to C(ansible_play_hosts_all).
    type: list
    elements: str
  fail_on_error:
    description: Fail when a host cannot be planned. False returns the problems in C(errors) (preflight reports them).
    type: bool
    default: true
  variable_errors:
    description:
      - Problems M(metalserve.sglang.check_variables) found (its RV(metalserve.sglang.check_variables#module:errors)),
        reported in the same failure message as the plan's own, so that one run names every mistake.
      - When the plan fails, its result carries RV(errors) and the message only, not the plans.
    type: dict
    default: {}
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Plan the site
  metalserve.sglang.plan:
  run_once: true
  register: site_plan

- name: Show this host's command
  ansible.builtin.debug:
    msg: "{{ site_plan.plans[inventory_hostname].command }}"
"""

RETURN = r"""
plans:
  description: Plan per host (keys host, role, rack, instance, unit, members, rank, head, head_address, recipe, argv,
    env, secret_env, command, warnings; routers carry mode, workers, port, argv, command).
  returned: unless the task fails
  type: dict
errors:
  description: Problem per host that could not be planned.
  returned: always
  type: dict
monitoring:
  description: The monitoring hosts' part of the plan (keys hosts, settings_from, warnings, files); what
    M(metalserve.sglang.render_plan) takes as O(metalserve.sglang.render_plan#module:monitoring).
  returned: unless the task fails
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"hosts": {"type": "list", "elements": "str"},
                 "fail_on_error": {"type": "bool", "default": True},
                 "variable_errors": {"type": "dict", "default": {}}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.plan runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
