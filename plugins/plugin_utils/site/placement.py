# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where instances live: inventory variables of every host -> one plan per host.

Pure functions over plain dicts ({host: {sglang_*: value, ansible_host: ...}} and {group: [hosts]}),
so the plan action, the tests and the docs all share them. Secrets never enter a plan: only the
names of the environment variables they will fill.
"""
from __future__ import annotations

import difflib
import re
import shlex
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import fabric_env

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import coerce

HostVars = dict[str, Any]
#: Role defaults of this collection that share the sglang_ prefix; not typos of inventory variables.
ROLE_PREFIXES = ("sglang_server_", "sglang_install_", "sglang_router_service_", "sglang_render_")
SECRET_ENV = {"sglang_hf_token": "HF_TOKEN"}
_INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def schema() -> dict[str, dict[str, Any]]:
    variables = load_catalog().variables
    return {**variables["recipe"], **variables["placement"]}


def placement_value(hv: HostVars, name: str) -> Any:
    spec = load_catalog().variables["placement"][name]
    value = hv.get(name)
    value = spec.get("default") if value is None else coerce(value, spec["type"], name)
    if value is not None and spec.get("choices") and value not in spec["choices"]:
        raise RecipeError(f"{name}: {value!r} is not one of {', '.join(spec['choices'])}")
    return value


def selection_of(hv: HostVars) -> dict[str, Any]:
    """The engine's selection from a host's sglang_* variables (unset ones left to the defaults)."""
    return {spec["key"]: hv[name] for name, spec in load_catalog().variables["recipe"].items()
            if hv.get(name) is not None}


def typo_warnings(hv: HostVars) -> list[str]:
    known = schema()
    out = []
    for name in sorted(hv):
        if not name.startswith("sglang_") or name in known or name.startswith(ROLE_PREFIXES):
            continue
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.85)
        if close:
            out.append(f"{name} is not a variable of this collection; did you mean {close[0]}?")
    return out


def interface_ipv4(hv: HostVars, interface: str | None) -> str | None:
    """The IPv4 of `interface` on a host, from its gathered facts (setup or fabric_facts), if known."""
    if not interface:
        return None
    facts = hv.get("ansible_facts") or {}
    setup = facts.get(interface.replace("-", "_").replace(".", "_")) or {}
    address = (setup.get("ipv4") or {}).get("address")
    if address:
        return str(address)
    named = ((facts.get("metalserve_fabric") or {}).get("interfaces") or {}).get(interface) or []
    return str(named[0]) if named else None


def address_of(host: str, hv: HostVars) -> str:
    """Where other hosts reach this one: sglang_dist_address, else the IPv4 of sglang_dist_interface
    from its facts, else ansible_host, else the inventory name."""
    return str(hv.get("sglang_dist_address") or interface_ipv4(hv, hv.get("sglang_dist_interface"))
               or hv.get("ansible_host") or host)


def role_of(hv: HostVars) -> str:
    return str(placement_value(hv, "sglang_role"))


def instance_members(host: str, hv: HostVars, groups: dict[str, list[str]], nodes: int) -> list[str]:
    group = placement_value(hv, "sglang_instance_group")
    if nodes == 1:
        if group and len(groups.get(group, [])) > 1:
            raise RecipeError(f"sglang_instance_group: {host} names {group} ({len(groups[group])} members) but "
                              "sglang_nodes is 1; set sglang_nodes to the group size or drop sglang_instance_group")
        return [host]
    if not group:
        raise RecipeError(f"sglang_instance_group: {host} has sglang_nodes: {nodes} but no instance group; name the "
                          f"inventory group whose {nodes} hosts form the instance")
    if group not in groups:
        raise RecipeError(f"sglang_instance_group: {group!r} (on {host}) is not an inventory group")
    members = sorted(groups[group])
    if host not in members:
        raise RecipeError(f"sglang_instance_group: {host} is not a member of {group} ({', '.join(members)})")
    if len(members) != nodes:
        raise RecipeError(f"sglang_instance_group: {group} has {len(members)} member(s) ({', '.join(members)}) but "
                          f"sglang_nodes is {nodes}; the instance needs exactly {nodes}")
    return members


def order_by_pinned_rank(members: list[str], hostvars: dict[str, HostVars]) -> list[str]:
    """Members in rank order: sglang_node_rank when every member pins one, else the sorted group."""
    pinned = {m: placement_value(hostvars[m], "sglang_node_rank") for m in members}
    given = {m: r for m, r in pinned.items() if r is not None}
    if not given:
        return members
    detail = ", ".join(f"{m}={r}" for m, r in pinned.items())
    if len(given) != len(members):
        raise RecipeError(f"sglang_node_rank: set on some members of {members[0]}'s instance only ({detail}); set it "
                          "on every member or on none")
    if sorted(given.values()) != list(range(len(members))):
        dupes = sorted({r for r in given.values() if list(given.values()).count(r) > 1})
        why = f"rank {', '.join(map(str, dupes))} is taken twice" if dupes else "ranks are out of range"
        raise RecipeError(f"sglang_node_rank: {why} ({detail}); each of 0..{len(members) - 1} must be used exactly once")
    return sorted(members, key=lambda m: given[m])


SAME_ACROSS_MEMBERS = ("sglang_model", "sglang_gpu", "sglang_quant", "sglang_strategy", "sglang_nodes",
                       "sglang_pd", "sglang_speculative", "sglang_dp_attention", "sglang_extra_args",
                       "sglang_remove_args", "sglang_version", "sglang_image", "sglang_port", "sglang_dist_port")


def check_members_agree(members: list[str], hostvars: dict[str, HostVars]) -> None:
    """Every member renders the same command but its rank: the variables that shape it must agree."""
    head = members[0]
    for name in SAME_ACROSS_MEMBERS:
        values = {m: hostvars[m].get(name) for m in members}
        if len({repr(v) for v in values.values()}) > 1:
            detail = ", ".join(f"{m}={v!r}" for m, v in values.items())
            what = "mixed GPU models in one instance" if name == "sglang_gpu" else "members disagree"
            raise RecipeError(f"{name}: {what} ({detail}); every member of {head}'s instance needs the same value")


def instance_name(hv: HostVars, rec: dict[str, Any], members: list[str]) -> str:
    name = placement_value(hv, "sglang_instance")
    if not name:
        group = placement_value(hv, "sglang_instance_group")
        name = group if len(members) > 1 and group else rec["model"]
        if rec["pd_role"]:
            name = f"{name}-{rec['pd_role']}"
    if not _INSTANCE_NAME.match(name):
        raise RecipeError(f"sglang_instance: {name!r} must be letters, digits, '.', '_' or '-' (it names a unit)")
    return name


def command_text(program: list[str], args: list[str]) -> str:
    """A shell command, one flag per line, quoted where needed."""
    lines = [" ".join(shlex.quote(p) for p in program)]
    current: list[str] = []
    for token in args:
        if token.startswith("--") and current:
            lines.append(" ".join(current))
            current = []
        current.append(shlex.quote(token))
    if current:
        lines.append(" ".join(current))
    return " \\\n  ".join(lines)


def fabric_for(hv: HostVars, selection: dict[str, Any], rec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(selection, fabric settings): NCCL/GLOO values and, where ambiguous, the PD HCAs, from the facts."""
    facts = hv.get("ansible_facts") or {}
    interface = placement_value(hv, "sglang_dist_interface") or (facts.get("default_ipv4") or {}).get("interface")
    pd = selection.get("pd") or {}
    settings = fabric_env.fabric_settings(
        facts.get("metalserve_fabric"), multi=rec["nodes"] > 1, pd=bool(rec["pd_role"]),
        interface=interface if facts.get("metalserve_fabric") else placement_value(hv, "sglang_dist_interface"),
        hcas=hv.get("sglang_ib_hcas") or "auto", ib_device_set=bool(isinstance(pd, dict) and pd.get("ib_device")))
    if settings["pd_ib_device"]:
        selection = {**selection, "pd": {**pd, "ib_device": settings["pd_ib_device"]}}
    return selection, settings


def server_plan(host: str, hostvars: dict[str, HostVars], groups: dict[str, list[str]]) -> dict[str, Any]:
    hv = hostvars[host]
    selection = selection_of(hv)
    rec = recipe_engine.recipe(selection)
    selection, fabric = fabric_for(hv, selection, rec)
    if fabric["pd_ib_device"]:
        rec = recipe_engine.recipe(selection)
    members = instance_members(host, hv, groups, rec["nodes"])
    if len(members) > 1:
        check_members_agree(members, hostvars)
        members = order_by_pinned_rank(members, hostvars)
    rank = members.index(host)
    head = members[0]
    head_address = address_of(head, hostvars[head])
    args = recipe_engine.serve_args(selection, rank, head_address if len(members) > 1 else None)
    env = dict(rec["env"])
    for key, value in fabric["env"].items():
        env.setdefault(key, value)  # the cell's and the operator's values win
    secret_env = sorted(env_name for var, env_name in SECRET_ENV.items() if hv.get(var))
    if placement_value(hv, "sglang_hf_gated") and not hv.get("sglang_hf_token"):
        raise RecipeError(f"sglang_hf_token: {rec['checkpoint']} is marked gated (sglang_hf_gated) and {host} has no "
                          "token; set sglang_hf_token (vault it) for this host or its group, after accepting the "
                          "model's terms on the Hub with that account")
    api_key = bool(hv.get("sglang_api_key"))
    instance = instance_name(hv, rec, members)
    return {
        "host": host,
        "role": "server",
        "rack": placement_value(hv, "sglang_rack"),
        "instance": instance,
        "unit": f"sglang-{instance}.service",
        "members": members,
        "rank": rank,
        "head": head,
        "head_address": head_address if len(members) > 1 else None,
        "address": address_of(host, hv),
        "recipe": rec,
        "argv": args,
        "env": env,
        "secret_env": secret_env,
        "api_key": api_key,
        "install_method": rec.get("install_method") or selection.get("install_method") or "docker",
        "command": command_text(["sglang", "serve"], args),
        "warnings": rec["warnings"] + fabric["warnings"] + typo_warnings(hv),
    }


def _fronting_routers(host: str, hostvars: dict[str, HostVars], groups: dict[str, list[str]]) -> list[str]:
    return [r for r in sorted(hostvars) if role_of(hostvars[r]) == "router"
            and host in groups.get(placement_value(hostvars[r], "sglang_router_workers_group") or "", [])]


def check_pd_has_router(plan: dict[str, Any], hostvars: dict[str, HostVars], groups: dict[str, list[str]]) -> None:
    if plan["recipe"]["pd_role"] and plan["rank"] == 0 and not _fronting_routers(plan["host"], hostvars, groups):
        raise RecipeError(
            f"sglang_pd: {plan['host']} is a PD {plan['recipe']['pd_role']} worker but no router fronts it; add a host "
            "with sglang_role: router and sglang_router_workers_group naming a group that contains it")


def router_plan(host: str, hostvars: dict[str, HostVars], groups: dict[str, list[str]]) -> dict[str, Any]:
    hv = hostvars[host]
    group = placement_value(hv, "sglang_router_workers_group")
    if not group:
        raise RecipeError(f"sglang_router_workers_group: router {host} fronts no workers; name the inventory group "
                          "of the servers it routes to")
    if group not in groups:
        raise RecipeError(f"sglang_router_workers_group: {group!r} (on router {host}) is not an inventory group")
    heads = []
    for worker in sorted(groups[group]):
        if role_of(hostvars[worker]) != "server":
            continue
        plan = server_plan(worker, hostvars, groups)
        if plan["rank"] == 0:
            heads.append(plan)
    if not heads:
        raise RecipeError(f"sglang_router_workers_group: {group} (on router {host}) has no servers")
    urls = {p["host"]: f"http://{recipe_engine.format_address(p['address'], p['recipe']['port'])}" for p in heads}
    prefill = [{"url": urls[p["host"]], "bootstrap_port": p["recipe"]["bootstrap_port"]}
               for p in heads if p["recipe"]["pd_role"] == "prefill"]
    decode = [urls[p["host"]] for p in heads if p["recipe"]["pd_role"] == "decode"]
    mode = placement_value(hv, "sglang_router_mode") or ("pd" if prefill or decode else "plain")
    if mode == "plain" and (prefill or decode):
        raise RecipeError(f"sglang_router_mode: router {host} is plain but {group} holds PD workers; use pd")
    spec = {"mode": mode, "prefill": prefill, "decode": decode, "workers": list(urls.values()),
            "host": hv.get("sglang_host") or "0.0.0.0", "port": placement_value(hv, "sglang_router_port"),
            "policy": placement_value(hv, "sglang_router_policy"),
            "extra_args": placement_value(hv, "sglang_router_extra_args")}
    args = recipe_engine.router_args(spec)
    instance = placement_value(hv, "sglang_instance") or "router"
    answering = next((p for p in heads if p["recipe"]["pd_role"] == "decode"), heads[0])
    return {
        "host": host,
        "role": "router",
        "install_method": hv.get("sglang_install_method") or "docker",
        "image": hv.get("sglang_image") or load_catalog().router.get("image"),
        "rack": placement_value(hv, "sglang_rack"),
        "instance": instance,
        "unit": f"sglang-{instance}.service",
        "mode": mode,
        "workers_group": group,
        "workers": list(urls.values()),
        "port": spec["port"],
        # what clients see through the router: the model name and parsers of the answering workers
        "served_model_name": answering["recipe"]["served_model_name"],
        "worker_argv": answering["argv"],
        "argv": args,
        "command": command_text(["python3", "-m", "sglang_router.launch_router"], args),
        "warnings": typo_warnings(hv),
    }


def host_plan(host: str, hostvars: dict[str, HostVars], groups: dict[str, list[str]]) -> dict[str, Any]:
    """The plan of one host: what it runs and exactly how."""
    role = role_of(hostvars[host])
    if role == "router":
        return router_plan(host, hostvars, groups)
    if role == "none":
        return {"host": host, "role": "none", "warnings": []}
    plan = server_plan(host, hostvars, groups)
    check_pd_has_router(plan, hostvars, groups)
    return plan
