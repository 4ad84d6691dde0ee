# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the site plan reads from Ansible: every host's sglang_* variables, the few connection variables it
uses, and the facts it takes values from (gathered or cached). Controller-only (actions)."""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import readers

READ_ALSO = ("ansible_host", "ansible_python_interpreter")
#: the prefixes of this collection's variables: every role's (the plan decides every stage of every host)
PREFIXES = ("sglang_", "monitoring_", "nvidia_driver_", "rocm_driver_", "rdma_", "container_runtime_", "model_weights_",
            "preflight_", "node_acceptance_", "nftables_")
#: the facts the plan reads: GPUs and fabric (our probes), the default address, the OS and CPU (driver, runtime)
FACTS = ("metalserve_fabric", "metalserve_gpu", "default_ipv4", "all_ipv4_addresses", "all_ipv6_addresses",
         "distribution", "distribution_major_version", "distribution_version", "distribution_release", "architecture",
         "os_family")


def _read(view: Any, name: str, broken: list[str]) -> tuple[bool, Any]:
    try:
        return True, to_plain(view[name])
    except Exception as exc:  # noqa: BLE001 - reported as the host's problem, with the variable's name
        broken.append(variables.templating_problem(name, str(exc) or type(exc).__name__, variables.is_secret(name)))
        return False, None


def host_vars(hostvars: Any, host: str, broken: list[str] | None = None,
              every_name: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """One host's variables as the plan reads them (plain data). A variable that cannot be templated (an undefined
    variable in its template) is left out and described in `broken`; `every_name`, when given, gets the names of all
    the host's variables (the variable check judges names outside our prefixes too)."""
    broken = [] if broken is None else broken
    view = hostvars[host]
    every = [str(k) for k in view]
    if every_name is not None:
        every_name[host] = every
    names = [k for k in every if k.startswith(PREFIXES) or k in READ_ALSO]
    out = {}
    for k in names:
        ok, value = _read(view, k, broken)
        if ok:
            out[str(k)] = value
    if "ansible_facts" in view:
        facts = view["ansible_facts"]
        wanted = list(FACTS)
        if out.get("sglang_dist_interface"):
            wanted.append(str(out["sglang_dist_interface"]).replace("-", "_").replace(".", "_"))
        picked = {k: to_plain(facts[k]) for k in wanted if k in facts}
        for key in ("all_ipv4_addresses", "all_ipv6_addresses"):
            if isinstance(picked.get(key), list):
                picked[key] = routable(picked[key])
        if picked:
            out["ansible_facts"] = picked
    return out


def routable(addresses: list[Any]) -> list[Any]:
    """A host's addresses without the link-local ones (fe80::/10, 169.254/16): every veth docker adds brings one, so
    they change from run to run, and no site sends traffic to them (the plan and its artifact must not move with
    them)."""
    out = []
    for address in addresses:
        text = str(address).split("%", 1)[0].lower()
        if text.startswith(("fe8", "fe9", "fea", "feb", "169.254.")):
            continue
        out.append(address)
    return out


def variable_origins(hostvars: Any, hosts: list[str]) -> dict[str, dict[str, list[str]]] | None:
    """Where each host's variables (the collection's prefixes) were set, in the order Ansible applies them: the groups
    whose inventory or group_vars hold them ("all" first, then the host's groups by depth and name), the host itself
    ("host <name>": inventory or host_vars), extra vars. Read from the inventory Ansible loaded (the hostvars view's
    own inventory and loader); None when it is not at hand, and the plan infers the sources from the values."""
    inventory = getattr(hostvars, "_inventory", None)
    loader = getattr(hostvars, "_loader", None)
    if inventory is None or loader is None:
        return None
    try:
        return _origins(inventory, loader, getattr(hostvars, "_variable_manager", None), hosts)
    except Exception:  # noqa: BLE001 - Ansible's internals moved: the plan infers the sources instead
        return None


def _origins(inventory: Any, loader: Any, manager: Any, hosts: list[str]) -> dict[str, dict[str, list[str]]]:
    from ansible.inventory.helpers import sort_groups  # noqa: PLC0415 - controller only, with Ansible loaded
    from ansible.vars.plugins import get_vars_from_inventory_sources  # noqa: PLC0415

    sources = inventory._sources  # noqa: SLF001 - the inventory sources the variable manager reads too

    def ours(names: Any) -> set[str]:
        return {str(n) for n in names if str(n).startswith(PREFIXES)}

    def names_of(entity: Any) -> set[str]:  # inline (inventory file) and vars plugins (group_vars/, host_vars/)
        return ours(entity.get_vars()) | ours(get_vars_from_inventory_sources(loader, sources, [entity], "task"))

    by_group: dict[str, set[str]] = {}
    extra = ours(getattr(manager, "extra_vars", None) or {})
    out: dict[str, dict[str, list[str]]] = {}
    for name in hosts:
        host = inventory.get_host(name)
        if host is None:
            continue
        found: dict[str, list[str]] = {}
        for group in sort_groups(host.get_groups()):  # all (depth 0) first, as Ansible applies them
            if group.name not in by_group:
                by_group[group.name] = names_of(group)
            for var in by_group[group.name]:
                found.setdefault(var, []).append(str(group.name))
        for var in names_of(host):
            found.setdefault(var, []).append(f"host {name}")
        for var in extra:
            found.setdefault(var, []).append(readers.EXTRA_VARS)
        out[name] = found
    return out


def site_inputs(task_vars: dict[str, Any], broken: dict[str, list[str]] | None = None,
                names: dict[str, list[str]] | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """(hostvars, groups) of the whole inventory, as site.plan.plan_site() takes them; variables that cannot be
    templated go into `broken` per host; `names`, when given, gets every variable name of each host."""
    broken = {} if broken is None else broken
    groups = {str(g): [str(h) for h in members] for g, members in task_vars["groups"].items()}
    hostvars_view = task_vars["hostvars"]
    out = {}
    for h in sorted(groups.get("all", [])):
        problems: list[str] = []
        out[h] = host_vars(hostvars_view, h, problems, names)
        if problems:
            broken[h] = problems
    return out, groups
