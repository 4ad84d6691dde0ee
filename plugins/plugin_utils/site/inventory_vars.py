# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the site plan reads from Ansible: every host's sglang_* variables, the few connection variables it
uses, and the facts it takes values from (gathered or cached). Controller-only (actions)."""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain

READ_ALSO = ("ansible_host", "ansible_python_interpreter")
#: this collection's variables, and the monitoring role's (its exporters' ports enter the site's port check)
PREFIXES = ("sglang_", "monitoring_")
FACTS = ("metalserve_fabric", "metalserve_gpu", "default_ipv4")


def host_vars(hostvars: Any, host: str) -> dict[str, Any]:
    """One host's variables as the plan reads them (plain data)."""
    view = hostvars[host]
    names = [k for k in view if str(k).startswith(PREFIXES) or k in READ_ALSO]
    out = {str(k): to_plain(view[k]) for k in names}
    if "ansible_facts" in view:
        facts = view["ansible_facts"]
        wanted = list(FACTS)
        if out.get("sglang_dist_interface"):
            wanted.append(str(out["sglang_dist_interface"]).replace("-", "_").replace(".", "_"))
        picked = {k: to_plain(facts[k]) for k in wanted if k in facts}
        if picked:
            out["ansible_facts"] = picked
    return out


def site_inputs(task_vars: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """(hostvars, groups) of the whole inventory, as placement.plan_site() takes them."""
    groups = {str(g): [str(h) for h in members] for g, members in task_vars["groups"].items()}
    hostvars_view = task_vars["hostvars"]
    return {h: host_vars(hostvars_view, h) for h in sorted(groups.get("all", []))}, groups
