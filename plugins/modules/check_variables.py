# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.check_variables action plugin (it runs on the controller)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: check_variables
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Check every host's variables against the roles' argument specs, before anything changes
description:
  - Validates, on the controller, the variables of every host of the play against the C(main) entry point of each
    named role's C(meta/argument_specs.yml), with Ansible's own validator (the one each role runs on entry).
  - Run it once with C(run_once=true). Each spec is read once and every host's refusals come in one failure message
    that names the host, the role and the variable.
  - A name with a role's prefix that the role does not document but that is close to one it does (a likely typo, such
    as C(model_weights_revison)) is refused with the name it probably meant. Names with no close match are left
    alone, since another role of the site may own them; C(sglang_*) names are checked by M(metalserve.sglang.plan).
  - Values of options marked C(no_log) in a spec never appear in the message, nor does anything shaped like a common
    access token (C(hf_...), C(sk-...), C(ghp_...)) pasted into another variable.
  - Variables are read as the hosts' own (inventory, facts, C(-e), variables set by earlier tasks), not with the
    C(vars) of the play or task that runs the check; site.yml's plays set none.
  - A failure stops every host of the play (the task runs once), before anything changes.
options:
  roles:
    description:
      - Roles of this collection whose specs apply (short names, for example V(sglang_server)).
      - Defaults to every role of the collection that has a C(meta/argument_specs.yml), so a new role is checked
        without editing the playbooks.
    type: list
    elements: str
  hosts:
    description: Hosts to check. Defaults to C(ansible_play_hosts).
    type: list
    elements: str
  fail_on_error:
    description:
      - Fail when a host's variables do not fit. False returns the problems in RV(errors) and the message without
        failing; site.yml hands them to M(metalserve.sglang.plan), which reports them with the plan's own problems
        in one message.
    type: bool
    default: true
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
seealso:
  - module: ansible.builtin.validate_argument_spec
"""

EXAMPLES = r"""
- name: Check every role's variables before anything changes
  metalserve.sglang.check_variables:
    roles: [sglang_install, model_weights, sglang_server, sglang_router]
  run_once: true
"""

RETURN = r"""
errors:
  description: Per host, per role, the validator's messages (the key C(templating) lists values that could not be
    templated).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"roles": {"type": "list", "elements": "str"},
                 "hosts": {"type": "list", "elements": "str"},
                 "fail_on_error": {"type": "bool", "default": True}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.check_variables runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
