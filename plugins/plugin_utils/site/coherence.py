# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Site-wide checks over the FINAL plans: what the nodes would get, not only what the inventory says.

Each check returns (host, message) pairs; plan_site() adds them to the hosts' problems, so render.yml,
the plan action, preflight and every role refuse the same site with the same message, before anything
changes. Pure.
"""
from __future__ import annotations

import functools
import re
from collections import defaultdict
from typing import Any, Iterator

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import flag_table_doc, load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import memory
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import monitoring, origin, placement, replicas

Problem = tuple[str, str]
#: argv values that differ between members by construction
PER_RANK = ("--node-rank",)


def _flags(argv: list[str]) -> dict[str, str]:
    """--flag -> its value(s) as one string ('' for a switch)."""
    out: dict[str, str] = {}
    name = None
    for token in argv:
        if token.startswith("--"):
            name = token
            out[name] = ""
        elif name is not None:
            out[name] = (out[name] + " " + token).strip()
    return out


def _differences(plans: list[dict[str, Any]]) -> list[str]:
    """What differs between the members' final commands, environments and installs."""
    flags = {p["host"]: {k: v for k, v in _flags(p["argv"]).items() if k not in PER_RANK} for p in plans}
    out = []
    for name in sorted(set().union(*(f.keys() for f in flags.values()))):
        values = {h: f.get(name) for h, f in flags.items()}
        if len(set(values.values())) > 1:
            shown = ", ".join(f"{h}: {'(absent)' if v is None else (v or 'on')}" for h, v in values.items())
            out.append(f"{name} ({shown})")
    for what, get in (("recipe", lambda p: "/".join(str(p["recipe"][k]) for k in ("model", "quant", "strategy"))),
                      ("environment", lambda p: p["env"]), ("install", lambda p: {
            k: p["install"][k] for k in ("method", "release", "image")}), ("unit name", lambda p: p["unit"])):
        values = {p["host"]: get(p) for p in plans}
        if len({repr(v) for v in values.values()}) > 1:
            if what == "environment":
                keys = sorted({k for v in values.values() for k in v if len({repr(x.get(k)) for x in values.values()}) > 1})
                out.append("environment " + ", ".join(
                    f"{k} ({', '.join(f'{h}: {v.get(k)!r}' for h, v in values.items())})" for k in keys))
            else:
                out.append(f"{what} ({', '.join(f'{h}: {v}' for h, v in values.items())})")
    return out


def instances(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]],
              errors: dict[str, list[str]]) -> Iterator[Problem]:
    """Members of a multi-node instance: all serve it, belong to it alone, and run the same program."""
    heads = {h: p for h, p in plans.items() if p["role"] == "server" and len(p["members"]) > 1 and p["rank"] == 0}
    claimed: dict[str, list[str]] = defaultdict(list)
    for plan in (p for p in plans.values() if p["role"] == "server" and len(p["members"]) > 1):
        group = hostvars[plan["host"]].get("sglang_instance_group")
        for member in plan["members"]:
            if group not in claimed[member]:
                claimed[member].append(group)
    for member, named in claimed.items():
        if len(named) > 1:
            yield member, (f"sglang_instance_group: {member} is a member of {' and '.join(named)}, two instances' "
                           "groups; a host serves one instance. Remove it from one of the groups")
    for head, plan in heads.items():
        group = hostvars[head].get("sglang_instance_group")
        for member in plan["members"]:
            other = plans.get(member)
            if member not in hostvars:
                continue
            try:
                role = placement.role_of(hostvars[member])
            except RecipeError:
                continue  # its own problem is reported on it
            if role != "server":
                yield head, (f"sglang_instance_group: {group} ({head}'s instance) includes {member}, which has "
                             f"sglang_role: {role}; every member of an instance serves it")
                continue
            if other is None or member in errors:
                continue
            if other["members"] != plan["members"]:
                yield member, (f"sglang_instance_group: {member} is in {group} ({head}'s instance of "
                               f"{len(plan['members'])}) but its own variables make it "
                               + (f"a single-node server (sglang_nodes: {other['recipe']['nodes']})"
                                  if len(other["members"]) == 1 else f"a member of {', '.join(other['members'])}")
                               + f"; give every member of {group} the same variables (group_vars/{group}.yml)")
        members = [plans[m] for m in plan["members"] if m in plans and m not in errors
                   and plans[m].get("members") == plan["members"]]
        if len(members) == len(plan["members"]):
            gpus = {p["host"]: p["recipe"]["gpu"] for p in members}
            if len(set(gpus.values())) > 1:
                detail = ", ".join(f"{h}={g!r}" for h, g in gpus.items())
                yield head, (f"sglang_gpu: mixed GPU models in one instance ({detail}); every member of {head}'s "
                             "instance needs the same value")
                continue
            diff = _differences(members)
            if diff:
                yield head, (f"sglang_instance_group: the members of {group} ({', '.join(plan['members'])}) would run "
                             f"different programs; only --node-rank may differ. Differences: {'; '.join(diff)}. "
                             f"Set these variables once for the whole group (group_vars/{group}.yml)")


def _ports_of(plan: dict[str, Any]) -> Iterator[tuple[int, str]]:
    host = plan["host"]
    if plan["role"] == "router":
        yield plan["port"], f"router port of {host} (sglang_router_port)"
        yield plan["metrics_port"], f"router metrics port of {host} (sglang_router_metrics_port)"
        return
    for instance in replicas.instances_of(plan):
        where = f"{host} ({instance['instance']})" if plan.get("replicas") else host
        for flag, port in instance["recipe"]["listen_ports"].items():
            yield port, f"{flag} of {where}"
    rec = plan["recipe"]
    if len(plan["members"]) > 1 and plan["rank"] == 0:
        yield rec["dist_port"], f"rendezvous port of {host} (sglang_dist_port, --dist-init-addr)"


def port_variables(items: list[tuple[int, list[str]]]) -> str:
    """The variables that set the clashing ports, as the owners name them ('... (sglang_router_metrics_port)'); a
    server's flag without one is moved by sglang_port or sglang_extra_args."""
    named = [v for _port, owners in items for o in owners for group in re.findall(r"\(([^()]*)\)", o)
             for v in group.split(", ") if re.fullmatch(r"(?:sglang|monitoring)_[a-z_]+", v)]
    flags = any(o.startswith("--") for _port, owners in items for o in owners)
    return ", ".join(dict.fromkeys(named + (["sglang_extra_args", "sglang_port"] if flags else []))) \
        or "sglang_extra_args, sglang_port"


def machines(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]]) -> Iterator[Problem]:
    """Hosts that are one machine (same ansible_host): distinct ports, and GPUs enough for all of them."""
    by_machine: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for host, plan in sorted(plans.items()):
        if plan["role"] in ("server", "router"):
            by_machine[placement.machine_of(host, hostvars[host])].append(plan)
    for machine, here in by_machine.items():
        taken: dict[int, list[str]] = defaultdict(list)
        for plan in here:
            for port, what in _ports_of(plan):
                taken[port].append(what)
        # exporters run once per machine (every inventory name of it asks for the same ones)
        for port, what in dict.fromkeys(p for plan in here for p in monitoring.exporter_ports(plan)):
            owner = min(plan["host"] for plan in here if (port, what) in monitoring.exporter_ports(plan))
            taken[port].append(f"{what} of {owner}")
        clashes: dict[tuple[str, ...], list[tuple[int, list[str]]]] = defaultdict(list)
        for port, owners in sorted(taken.items()):
            if len(owners) > 1:
                clashes[tuple(sorted({host_of(o) for o in owners}))].append((port, owners))
        for hosts, items in clashes.items():
            if len(hosts) == 1:
                what = "; ".join(f"{port} twice ({' and '.join(o.rsplit(' of ', 1)[0] for o in owners)})"
                                 for port, owners in items)
                yield hosts[0], f"ports: {hosts[0]} opens {what}; move one ({port_variables(items)})"
                continue
            first = items[0][1]
            for host in hosts:
                yield host, (f"ports: {' and '.join(hosts)} are one machine ({machine}) and both open "
                             f"{port_ranges([port for port, _owners in items])} ({' and '.join(first)}, ...); give one "
                             "of them other ports (sglang_port, sglang_router_port) or its own machine (ansible_host)")
        servers = [p for p in here if p["role"] == "server"]
        if len(servers) > 1:
            gpus = sum(i["recipe"]["gpus_per_node"] for p in servers for i in replicas.instances_of(p))
            platform = load_catalog().gpus.get(servers[0]["recipe"]["gpu"]) or {}
            have = int(platform.get("gpus_per_node") or gpus)
            if gpus > have:
                for p in servers:
                    yield p["host"], (f"ansible_host: {', '.join(s['host'] for s in servers)} are one machine "
                                      f"({machine}) and their servers would use {gpus} GPUs of its {have}; give "
                                      "each inventory host its own machine (ansible_host)")


def port_ranges(ports: list[int]) -> str:
    """[30000, 30233, 30234, 30235] -> '30000, 30233-30235'."""
    out: list[str] = []
    for port in sorted(ports):
        if out and "-" not in out[-1] and int(out[-1]) == port - 1:
            out[-1] = f"{out[-1]}-{port}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == port - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{port}"
        else:
            out.append(str(port))
    return ", ".join(out)


def host_of(owner: str) -> str:
    """The host named in a port owner's description ('--port of h1' -> 'h1')."""
    return owner.split(" of ", 1)[1].split(" ", 1)[0]


#: what must be the same on every member of a multi-node instance, per stage (they run one NCCL job together)
STACK_KEYS = {"driver": ("role", "branch", "version", "flavor", "release", "imex_group"),
              "rdma": ("stack", "peermem"), "runtime": ("docker_source", "toolkit_version", "nvidia_toolkit")}


def _stack(plan: dict[str, Any], stage: str) -> dict[str, Any] | None:
    got = (plan.get("stages") or {}).get(stage)
    if not got:
        return None
    return {k: (got.get(k) if k == "role" else got["settings"].get(k)) for k in STACK_KEYS[stage] if k == "role"
            or k in got["settings"]} if got["applies"] else {"applies": False}


def node_stacks(plans: dict[str, dict[str, Any]], errors: dict[str, list[str]]) -> Iterator[Problem]:
    """Members of one multi-node instance get the same driver, RDMA stack and container runtime: a TP16 pair whose
    halves run different drivers or RDMA stacks fails in NCCL, not at converge time."""
    for head, plan in plans.items():
        if plan["role"] != "server" or len(plan["members"]) < 2 or plan["rank"] != 0:
            continue
        members = [plans[m] for m in plan["members"] if m in plans and m not in errors]
        if len(members) != len(plan["members"]):
            continue
        diffs = []
        for stage in STACK_KEYS:
            values = {p["host"]: _stack(p, stage) for p in members}
            if len({repr(v) for v in values.values()}) > 1:
                diffs.append(f"{stage} (" + "; ".join(f"{h}: {v}" for h, v in values.items()) + ")")
        if diffs:
            yield head, (f"sglang_instance_group: the members of {head}'s instance ({', '.join(plan['members'])}) would "
                         f"run different node stacks: {'; '.join(diffs)}. Set the driver, RDMA and runtime variables "
                         "once for the whole group")
        imex = [p for p in members if ((p.get("stages") or {}).get("driver") or {}).get("settings", {}).get("imex")]
        if imex:
            domains = {p["host"]: p["stages"]["driver"]["settings"].get("imex_group") for p in imex}
            outside = [p["host"] for p in imex if any(m not in p["stages"]["driver"]["settings"].get("imex_members", [])
                                                      for m in plan["members"])]
            if len(set(domains.values())) > 1 or outside:
                yield head, (f"nvidia_driver_imex_group: {head}'s instance ({', '.join(plan['members'])}) spans IMEX "
                             f"domains ({', '.join(f'{h}: {d}' for h, d in domains.items())}); the members of one "
                             "multi-node instance share one NVLink domain: put them in one nvidia_driver_imex_group")


def site_problems(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]],
                  groups: dict[str, list[str]], errors: dict[str, list[str]]) -> list[Problem]:
    problems: list[Problem] = []
    for host, message in two_racks(hostvars, groups):
        if host in plans:  # a word, not a refusal: which group set sglang_rack is not known here
            plans[host].setdefault("warnings", []).append(message)
    problems += list(weights_fit(plans))
    problems += list(instances(plans, hostvars, errors))
    problems += list(machines(plans, hostvars))
    problems += list(node_stacks(plans, errors))
    problems += list(router_keys(plans, hostvars, groups))
    return problems


def router_keys(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]],
                groups: dict[str, list[str]]) -> Iterator[Problem]:
    """A router's sglang_api_key against its servers': the collection gives the key to the servers (SGLang's
    --api-key, through a --config file) and the clients (verify.yml, upgrade.yml) send the router's, so a key set on
    the router alone leaves every server open, and a key other than the servers' gets 401 from them. Never the key."""
    for host, plan in plans.items():
        key = (hostvars.get(host) or {}).get("sglang_api_key") if plan.get("role") == "router" else None
        if not key:
            continue
        group = str(placement.placement_value(hostvars[host], "sglang_router_workers_group") or "")
        servers = [w for w in groups.get(group, []) if (plans.get(w) or {}).get("role") == "server"]
        keyless = [w for w in servers if not placement.server_key(hostvars.get(w) or {})]
        other = [w for w in servers if w not in keyless and placement.server_key(hostvars[w]) != key]
        where = origin.named("sglang_api_key", host, hostvars, groups)
        if keyless:
            yield host, (f"{where}: router {host} has an API key, but its servers {', '.join(keyless)} (group "
                         f"{group}) have none: the collection gives the key to the servers, not to the router, so "
                         "clients reach every server without it. Set sglang_api_key (or sglang_server_api_key) where "
                         "the servers read it as well "
                         f"(the group_vars of {group} or all)")
        if other:
            yield host, (f"{where}: router {host}'s API key differs from the one of its servers {', '.join(other)}; "
                         "verify.yml and upgrade.yml send the router's key and those servers answer 401. Give the "
                         "router and its servers one key")


def two_racks(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> Iterator[Problem]:
    """A host left in two rack groups: Ansible merges both groups' variables and the later group wins, silently
    (the host takes the other rack's recipe). A rack group is one whose other hosts (two or more) all share one
    sglang_rack; a host in two of them with different racks gets a warning naming both (a group of hosts that share
    a rack by chance, such as a canary group, looks the same from here, so it is not refused)."""
    by_host: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for group, members in sorted(groups.items()):
        hosts = sorted({str(h) for h in members if str(h) in hostvars})
        if group in ("all", "ungrouped") or len(hosts) < 3:
            continue
        # each host's rack, and how many of the group hold each: the other hosts share one rack when, without this
        # host's own, a single value is left (linear in the group, for groups of thousands)
        racks = {h: repr(hostvars[h].get("sglang_rack")) for h in hosts}
        counts: dict[str, int] = defaultdict(int)
        for value in racks.values():
            counts[value] += 1
        if len(counts) > 2:
            continue  # without any one host, two values or more are left
        for host in hosts:
            left = [v for v, n in counts.items() if n - (v == racks[host]) > 0]
            if len(left) == 1 and left[0] != repr(None):
                shared = next((hostvars[h].get("sglang_rack") for h in hosts if racks[h] == left[0]), None)
                by_host[host].append((group, shared))
    for host, seen in sorted(by_host.items()):
        racks_seen = {repr(r) for _g, r in seen}
        if len(racks_seen) > 1:
            named = ", ".join(f"{g} (its other hosts: sglang_rack {r})" for g, r in seen)
            yield host, (f"{host} is in two racks' groups: {named}; Ansible merges both groups' variables and one "
                         f"silently wins (here sglang_rack {hostvars[host].get('sglang_rack')}, with that group's "
                         "recipe). If it left a rack, remove it from that rack's group")


#: the share of an instance's GPU memory its weights may take and leave the KV cache room (the rule the recipes'
#: own "why not" uses: engine._why_not)
WEIGHTS_SHARE = 0.85


def weights_fit(plans: dict[str, dict[str, Any]]) -> Iterator[Problem]:
    """The checkpoint over the GPUs the final command shards it on (--tp-size x --pp-size, whatever set them: a
    recipe, sglang_extra_args, a site recipe) must leave room for the KV cache, or SGLang stops while loading."""
    gpus = load_catalog().gpus
    for host, plan in sorted(plans.items()):
        if plan.get("role") != "server" or not plan.get("head"):
            continue
        rec = plan["recipe"]
        size, platform = rec.get("checkpoint_size_gb"), gpus.get(str(rec.get("gpu") or ""))
        vram = (platform or {}).get("vram_gb")
        if not size or not vram:
            continue
        shards = _shards(plan)
        if shards is None:
            continue  # no flag table for the release, or a command its parser refuses: the checker says so
        tp, pp = shards
        capacity = vram * tp * pp
        if memory.share(size, vram, tp, pp) > WEIGHTS_SHARE:
            layout = f"--tp-size {tp}" + (f" x --pp-size {pp}" if pp != 1 else "")
            yield host, (f"the ~{size} GB {rec.get('quant')} weights ({rec.get('checkpoint')}) sharded over "
                         f"{tp * pp} GPU(s) ({layout}) take more than {WEIGHTS_SHARE:.0%} of their "
                         f"{capacity:g} GB ({vram:g} GB each): no room is left for the KV cache and SGLang stops "
                         "while loading. Keep the recipe's TP size, add nodes, or choose a smaller precision "
                         "(sglang_quant)")


def _shards(plan: dict[str, Any]) -> tuple[int, int] | None:
    """(TP size, PP size) as the server's release parses its command (any spelling: --tp, --tensor-parallel-size)."""
    return _parsed_shards(str(plan["recipe"].get("sglang_version") or ""), tuple(plan.get("argv") or []))


@functools.lru_cache(maxsize=4096)
def _parsed_shards(release: str, argv: tuple[str, ...]) -> tuple[int, int] | None:
    doc = flag_table_doc(release)
    if doc is None:
        return None
    table = cli.Table.of(doc)
    try:
        parsed = cli.parse(list(argv), table)
    except cli.CliError:
        return None
    # the dests differ by release (tp_size in 0.5.23, tensor_parallel_size in 0.5.13.post1): ask the table
    sizes = [parsed.namespace.get(table.dest(flag)) if table.known(flag) else None for flag in ("--tp-size", "--pp-size")]
    return int(sizes[0] or 1), int(sizes[1] or 1)
