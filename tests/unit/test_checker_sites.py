"""What the planner renders for the shipped inventories passes the site checker (checks/site.py), read back from the
plan's files only; and the checker really read them (every server and router command parsed by its release's table).

The inventories are loaded the way Ansible loads them (its own InventoryManager, group_vars/host_vars layering, INI,
host ranges, templated variables), in-process, and planned by placement.plan_site as render.yml plans them.

Two shipped inventories hold what issue 26 calls mistakes, and the checker says so; those refusals are pinned here,
word for word, until the inventories change (see FINDINGS).
"""
from __future__ import annotations

import functools
from typing import Any

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import site as checker
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import inventory_vars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

SITES = ["example", "h200-4rack", "gb300", "mi355x", "generated-64", "layered", "airgapped", "mixed"]
#: Ansible's own variables (magic and connection settings the plan never reads)
MAGIC = {"inventory_hostname", "inventory_hostname_short", "groups", "group_names", "hostvars", "omit", "playbook_dir",
         "inventory_dir", "inventory_file", "ansible_version", "ansible_playbook_python", "ansible_config_file",
         "ansible_check_mode", "ansible_diff_mode", "ansible_forks", "ansible_inventory_sources", "ansible_run_tags",
         "ansible_skip_tags", "ansible_verbosity", "ansible_collection_name", "ansible_play_batch", "ansible_play_hosts",
         "ansible_play_hosts_all", "ansible_dependent_role_names", "ansible_role_names", "role_names",
         "ansible_search_path"}
#: what the shipped inventories get wrong, as the checker words it (the lead decides how the inventories change)
FINDINGS: dict[str, list[tuple[str, str]]] = {}  # the shipped inventories pass (mi355x and layered were fixed)


@functools.lru_cache(maxsize=None)
def loaded(site: str) -> tuple[InventoryManager, DataLoader, VariableManager]:
    loader = DataLoader()
    inv = InventoryManager(loader=loader, sources=[str(ROOT / "inventories" / site)])
    return inv, loader, VariableManager(loader=loader, inventory=inv)


@functools.lru_cache(maxsize=None)
def inventory(site: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """(hostvars, groups) of inventories/<site>, as Ansible reads and templates them."""
    inv, loader, manager = loaded(site)
    hostvars = {}
    for host in inv.get_hosts():
        variables = manager.get_vars(host=host, include_hostvars=False)
        templar = Templar(loader=loader, variables=variables)
        hostvars[str(host.name)] = {str(k): to_plain(templar.template(v)) for k, v in variables.items() if k not in MAGIC}
    groups = {str(name): sorted(str(h.name) for h in group.get_hosts()) for name, group in inv.groups.items()}
    return hostvars, groups


def origins(site: str) -> dict[str, dict[str, list[str]]] | None:
    """Who set each variable, read from the inventory's sources as the plan actions read them."""
    inv, loader, manager = loaded(site)
    found = inventory_vars.variable_origins(HostVars(inv, manager, loader), sorted(inventory(site)[0]))
    assert found is not None
    return found


@functools.lru_cache(maxsize=None)
def checked(site: str) -> tuple[dict[str, Any], list[checker.Node], list[tuple[str, str]]]:
    hostvars, groups = inventory(site)
    planned = plan_site(hostvars, groups, origins(site))
    nodes = checker.nodes_from_site(planned, hostvars)
    return planned, checker.read_nodes(nodes), checker.check_site(nodes)


@pytest.mark.parametrize("site", SITES)
def test_what_the_planner_renders_passes_the_checker(site: str) -> None:
    planned, _nodes, problems = checked(site)
    assert planned["errors"] == {}
    assert problems == FINDINGS.get(site, [])


@pytest.mark.parametrize("site", SITES)
def test_the_checker_read_every_command(site: str) -> None:
    """Passing means something: every server and router the plan holds is a unit the checker found, read with a
    release's table, and parsed."""
    planned, nodes, _problems = checked(site)
    by_host = {n.host: n for n in nodes}
    for host, plan in planned["plans"].items():
        if plan["role"] not in ("server", "router"):
            continue
        services = sorted((s for s in by_host[host].services if s.kind == plan["role"]), key=lambda s: s.unit)
        # one service per replica on a host of several servers (sglang_replicas), else one
        wanted = sorted(plan.get("replicas") or [plan], key=lambda r: r["unit"])
        assert [s.unit.rsplit("/", 1)[-1] for s in services] == [r["unit"] for r in wanted], host
        for service, replica in zip(services, wanted):
            assert service.parsed is not None and not service.refusal, (host, service.refusal)
            assert service.args == replica["argv"], host  # the argv the unit runs, read back from the unit file


def test_the_example_sites_hardware_and_files_reach_the_checker() -> None:
    nodes = checker.nodes_from_site(checked("example")[0], inventory("example")[0])
    assert nodes["mi355x-e01"]["vendor"] == "amd" and nodes["gb300-d01"]["gpus_per_node"] == 4
    assert "/etc/metalserve/sglang-firewall.nft" in nodes["h200-b01"]["files"]
    assert nodes["h200-b01"]["modes"]["/etc/sglang/rack_h200_bf16.env"] == "0600"
    assert nodes["mon-01"]["files"]["/etc/prometheus/prometheus.yml"]
