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
  check_variables:
    description:
      - Judge the variables of the hosts of this run against every role's argument specs here, as
        M(metalserve.sglang.check_variables) does, from the values the plan reads (each host's variables are templated
        once, not twice); its refusals join O(variable_errors) and the plan's own problems in one message.
    type: bool
    default: false
    version_added: 0.2.0
  artifact:
    description:
      - Path of the site's plan artifact (JSON), relative to the working directory (under AWX/AAP, the project's
        checkout). Unset, the action knows no artifact and plans the inventory as a whole site, as roles used alone do.
      - A run whose hosts are the whole inventory plans the site and writes it there (only when it differs; not in
        check mode) with the digest of every host's inputs, of the collection and of the plans. A C(--limit) run
        plans the whole site too (it sees every host) and writes nothing.
      - With O(apply_artifact), a run applies its hosts' part of it instead, after checking that each host has the
        inputs it was planned from (every host of the inventory under C(--limit)) and that the plans are the ones
        it was made with. It refuses, naming the hosts and what changed, when a digest differs or the file is
        missing, and says how to make it.
    type: path
  apply_artifact:
    description:
      - The inventory may hold part of the site (an AWX/AAP job slice, an inventory subset), so every run applies
        O(artifact) and none makes it (C(site.yml) sets it when C(sglang_plan_artifact) is set).
    type: bool
    default: false
  make_artifact:
    description:
      - This run makes O(artifact) from the whole inventory even with O(apply_artifact) (C(site.yml --tags plan));
        it refuses a run with C(--limit).
    type: bool
    default: false
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
  description: The monitoring hosts' part of the plan (keys hosts, settings_from, warnings, files).
  returned: unless the task fails
  type: dict
artifact:
  description: Where the plan artifact is, and whether this run wrote it (C(written)) or applied it (C(applied),
    with its C(inputs_digest)).
  returned: when O(artifact) is set and the plan succeeds
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"hosts": {"type": "list", "elements": "str"},
                 "fail_on_error": {"type": "bool", "default": True},
                 "variable_errors": {"type": "dict", "default": {}},
                 "check_variables": {"type": "bool", "default": False},
                 "artifact": {"type": "path"},
                 "apply_artifact": {"type": "bool", "default": False},
                 "make_artifact": {"type": "bool", "default": False}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.plan runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
