# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.check_variables: every host's variables against the roles' argument specs,
once on the controller, with one failure message for all hosts (plugin_utils/checks/variables.py)."""
from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.check_variables import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        roles = args["roles"] or variables.all_roles()
        hosts = list(args["hosts"] or task_vars.get("ansible_play_hosts") or [])
        unknown = sorted(set(hosts) - set(task_vars["hostvars"]))
        if unknown:
            result.update(failed=True, changed=False, msg=f"hosts {', '.join(unknown)} are not in the inventory")
            return result
        try:
            specs = {role: variables.role_options(role) for role in roles}
        except ValueError as exc:
            result.update(failed=True, changed=False, msg=str(exc))
            return result
        names, secrets = variables.variable_names(specs), variables.secret_names(specs)
        errors: dict[str, dict[str, list[str]]] = {}
        for host in hosts:
            view = task_vars["hostvars"][host]
            values, broken = variables.read_values(names, view.__contains__, lambda name: to_plain(view[name]), secrets)
            found = variables.host_errors(specs, values, list(view), broken)
            if found:
                errors[host] = found
        result.update(changed=False, errors=errors)
        if errors:
            result.update(failed=bool(args["fail_on_error"]),
                          msg=variables.redact(variables.failure_text(errors, len(hosts))))
        else:
            result["msg"] = f"the variables of {len(hosts)} host(s) fit the argument specs of {len(roles)} role(s)"
        return result
