# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.plan: the serving plan of every host, computed on the controller.

Reads the sglang_* variables of the inventory, calls the placement/recipe engine once per host and
returns {plans: {host: plan}}. Problems on all hosts are collected into one failure message.
It never connects to a host and changes nothing, so it is check-mode safe.
"""
from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import placement
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

READ_ALSO = ("ansible_host",)


def _vars_of(hostvars: Any, host: str) -> dict[str, Any]:
    view = hostvars[host]
    names = [k for k in view if str(k).startswith("sglang_") or k in READ_ALSO]
    out = {str(k): to_plain(view[k]) for k in names}
    if "ansible_facts" in view:
        facts = view["ansible_facts"]
        wanted = ["metalserve_fabric", "default_ipv4"]
        if out.get("sglang_dist_interface"):
            wanted.append(str(out["sglang_dist_interface"]).replace("-", "_").replace(".", "_"))
        picked = {k: to_plain(facts[k]) for k in wanted if k in facts}
        if picked:
            out["ansible_facts"] = picked
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        wanted = args.get("hosts") or task_vars.get("ansible_play_hosts_all") or [task_vars["inventory_hostname"]]
        groups = {str(g): [str(h) for h in members] for g, members in task_vars["groups"].items()}
        hostvars_view = task_vars["hostvars"]
        hostvars = {h: _vars_of(hostvars_view, h) for h in groups.get("all", wanted)}
        plans: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for host in wanted:
            try:
                plans[host] = placement.host_plan(str(host), hostvars, groups)
            except RecipeError as exc:
                errors[str(host)] = str(exc)
        warnings = [f"{h}: {w}" for h, p in plans.items() for w in p.get("warnings", [])]
        if warnings:
            result["warnings"] = warnings
        result.update(changed=False, plans=plans, errors=errors)
        if errors:
            result["failed"] = bool(args.get("fail_on_error", True))
            result["msg"] = (f"{len(errors)} of {len(wanted)} host(s) cannot be planned:\n"
                             + "\n".join(f"  - {h}: {m}" for h, m in sorted(errors.items())))
        return result
