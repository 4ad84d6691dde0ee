# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where instances live: inventory variables of every host -> one plan per host, made once per site.

Pure functions over plain dicts ({host: {sglang_*: value, ansible_host: ..., ansible_facts: ...}} and
{group: [hosts]}). plan_site() is the one owner of every decision a node gets: the command, its rank and
head, the install (release, venv or image after the mirror), the unit and environment files, the vendor,
and the values that only the node can tell (listed under `resolved`). render.yml, the plan action and
every role read what it returns; none recomputes it. Secrets never enter a plan: only the names of the
variables they fill.
"""
from __future__ import annotations

import difflib
import functools
import ipaddress
import re
import shlex
from typing import Any, Iterator

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import input_checks
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import parsers as parser_facts
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import Mistakes, RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import coerce
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import fabric_env, replicas, runtime

HostVars = dict[str, Any]
SECRET_ENV = {"sglang_hf_token": "HF_TOKEN"}
#: the roles whose own facts (set_fact, register) carry the sglang_ prefix: a later plan of the same run sees them
FACT_ROLES = ("sglang_install", "sglang_server", "sglang_router")
_INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def schema() -> dict[str, dict[str, Any]]:
    variables = load_catalog().variables
    return {**variables["recipe"], **variables["placement"]}


@functools.lru_cache(maxsize=1)
def known_variables() -> dict[str, str]:
    """Every sglang_* name this collection reads: inventory variables, role settings, our own facts."""
    names = {name: "inventory" for name in schema()}
    names.update({name: "playbooks" for name in load_catalog().variables.get("playbooks", {})})
    for role in ("sglang_install", "sglang_server", "sglang_router", "model_weights", "preflight"):
        for name in runtime.role_spec_options(role):
            if name.startswith("sglang_"):
                names.setdefault(name, role)
    for role in FACT_ROLES:  # a role's own settings keep their owner
        for name in variables.role_outputs(role):
            names.setdefault(name, "fact")
    return names


def variable_errors(host: str, hv: HostVars) -> list[str]:
    """Unknown sglang_* names (the collection owns the prefix) and retired ones past their warning, each with what to
    use."""
    known = known_variables()
    out = []
    for name in sorted(hv):
        if not name.startswith("sglang_") or name in known:
            continue
        if name in variables.retired():
            verdict = variables.retired_verdict(name)
            if verdict and verdict[0] == "error":
                out.append(verdict[1])
            continue
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.75)
        hint = f"did you mean {' or '.join(close)}?" if close else \
            "variables of this collection are listed in data/variables.yml and the roles' READMEs"
        out.append(f"{name}: not a variable of this collection (it owns the sglang_ prefix); {hint}")
    return out


def variable_warnings(hv: HostVars) -> list[str]:
    """Retired names a host still sets, while they only warn (checks/variables.retired_verdict)."""
    return [v[1] for v in (variables.retired_verdict(n) for n in sorted(hv) if n in variables.retired())
            if v and v[0] == "warning"]


def placement_value(hv: HostVars, name: str) -> Any:
    spec = load_catalog().variables["placement"][name]
    value = hv.get(name)
    value = spec.get("default") if value is None else coerce(value, spec["type"], name)
    if value is not None and spec.get("choices") and value not in spec["choices"]:
        raise RecipeError(f"{name}: {value!r} is not one of {', '.join(spec['choices'])}")
    return value


def detected_gpu(hv: HostVars) -> str | None:
    gpu = runtime.fact(hv, "metalserve_gpu", "gpu_id")
    return None if gpu in (None, "", "unknown", "mixed") else str(gpu)


def selection_of(hv: HostVars) -> dict[str, Any]:
    """The engine's selection from a host's sglang_* variables (unset ones left to the defaults); an unset
    sglang_gpu is the one gpu_facts detected, when its facts are known."""
    sel = {spec["key"]: hv[name] for name, spec in load_catalog().variables["recipe"].items()
           if hv.get(name) is not None}
    if not sel.get("gpu") and detected_gpu(hv):
        sel["gpu"] = detected_gpu(hv)
    return sel


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


def check_address(value: Any, variable: str) -> str:
    """An address other hosts connect to: an IP or a host name, never with a port."""
    text = str(value).strip()
    try:
        ipaddress.ip_address(text.strip("[]"))
        return text.strip("[]")
    except ValueError:
        pass
    if ":" in text:
        port = text.rsplit(":", 1)[1]
        raise RecipeError(f"{variable}: {text!r} holds a port; give the address alone ({text.rsplit(':', 1)[0]}) and "
                          f"the port in {'sglang_dist_port' if 'dist' in variable else 'its own variable'}"
                          f"{' (' + port + ')' if port.isdigit() else ''}")
    if not input_checks.HOSTNAME.match(text):
        raise RecipeError(f"{variable}: {text!r} is neither an IP address nor a host name")
    return text


def address_of(host: str, hv: HostVars) -> tuple[str, dict[str, Any] | None]:
    """Where other hosts reach this one for the rendezvous: sglang_dist_address, else the IPv4 of
    sglang_dist_interface from its facts, else ansible_host, else the inventory name. The second value
    says when the node has yet to tell (an interface whose facts are not gathered)."""
    if hv.get("sglang_dist_address"):
        return check_address(hv["sglang_dist_address"], "sglang_dist_address"), None
    interface = hv.get("sglang_dist_interface")
    fallback = check_address(hv.get("ansible_host") or host, "ansible_host")
    if interface:
        ip = interface_ipv4(hv, str(interface))
        if ip:
            return ip, None
        return fallback, runtime.resolved(
            "rendezvous address", fallback, f"the IPv4 of sglang_dist_interface {interface} on {host} (its network "
            "facts are not gathered yet; ansible_host stands in)", False)
    return fallback, None


def unit_of(instance: str) -> str:
    """The systemd unit of an instance (a server's, a replica's, a router's): sglang-<instance>.service."""
    return node.instance_unit(instance)


def retired_units(base: str) -> str:
    """A regular expression for the unit names an instance has had (its own, its replicas' -r<N>), the instance name
    captured: sglang_server removes the ones a changed plan no longer runs."""
    prefix, suffix = node.systemd("unit_prefix"), node.systemd("unit_suffix")
    return f"^{re.escape(prefix)}({re.escape(base)}(?:-r[0-9]+)?){re.escape(suffix)}$"


def source_addresses(host: str, hv: HostVars) -> list[str]:
    """The addresses another host of the site sees this one connect from, for allow-lists (an instance's firewall,
    a weights fan-out's rsync module): its rendezvous address (address_of: the interface it reaches peers on) and
    its default IPv4 when gathered."""
    found = [address_of(host, hv)[0]]
    default = runtime.fact(hv, "default_ipv4", "address")
    if default and str(default) not in found:
        found.append(str(default))
    return found


def listen_address(host: str, hv: HostVars) -> str:
    """Where a router reaches this server: the address it listens on when that is one address, else
    ansible_host, else the inventory name."""
    bound = str(hv.get("sglang_host") or "0.0.0.0")
    if bound not in ("0.0.0.0", "::"):
        return bound
    return str(hv.get("ansible_host") or host)


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return address.lower() in _LOOPBACK_NAMES


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
        raise RecipeError(f"sglang_instance_group: {group!r} (on {host}) is not an inventory group; "
                          f"{not_a_group(group, groups)}")
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
    return _command_text(tuple(program), tuple(args))


@functools.lru_cache(maxsize=4096)
def _command_text(program: tuple[str, ...], args: tuple[str, ...]) -> str:
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


def fabric_for(host: str, hv: HostVars, selection: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(selection, fabric settings): NCCL/GLOO values and, where ambiguous, the PD HCAs, from the facts."""
    facts = hv.get("ansible_facts") or {}
    fabric = facts.get("metalserve_fabric")
    interface = placement_value(hv, "sglang_dist_interface")
    if fabric and not interface:
        interface = (facts.get("default_ipv4") or {}).get("interface")
    pd = selection.get("pd") or {}
    nodes = coerce(selection.get("nodes", 1), "int", "sglang_nodes") or 1
    settings = fabric_env.fabric_settings(
        fabric, multi=nodes > 1, pd=bool(pd), interface=interface, hcas=hv.get("sglang_ib_hcas") or "auto",
        ib_device_set=bool(isinstance(pd, dict) and pd.get("ib_device")))
    if settings["pd_ib_device"] and isinstance(pd, dict):
        selection = {**selection, "pd": {**pd, "ib_device": settings["pd_ib_device"]}}
    settings["resolved"] = None
    if (nodes > 1 or pd) and not fabric:
        settings["resolved"] = runtime.resolved(
            "fabric", "NCCL_IB_HCA/NCCL_IB_GID_INDEX unset, RDMA devices assumed present",
            f"fabric_facts on {host} (HCAs, GID index, /dev/infiniband); not gathered yet", False)
    return selection, settings


def is_networked(members: list[str], pd_role: Any) -> bool:
    """Whether a server talks to other nodes while it serves (a multi-node instance, or a PD half moving KV): what
    RDMA, its verification and the network environment follow. The one owner of that rule."""
    return len(members) > 1 or bool(pd_role)


def rdma_present(hv: HostVars, networked: bool) -> bool:
    """Whether the node has RDMA devices to hand to SGLang (from fabric_facts), else assumed for networked
    instances (listed under `resolved` with the fabric until the facts are gathered)."""
    present = runtime.fact(hv, "metalserve_fabric", "uverbs_present")
    return bool(present) if present is not None else networked


def _server_parts(host: str, hv: HostVars, groups: dict[str, list[str]], selection: dict[str, Any],
                  resolved: list[dict[str, Any]]) -> tuple[Any, ...]:
    """A server's recipe build and recipe, fabric, instance members and name, install and settings: every mistake of the host's
    own variables at once, not the first (RecipeErrors)."""
    mistakes = Mistakes()
    found = mistakes.attempt(fabric_for, host, hv, selection)
    selection, fabric = found if found else (selection, {"resolved": None, "env": {}, "warnings": []})
    if fabric["resolved"]:
        resolved.append(fabric["resolved"])
    b = mistakes.attempt(recipe_engine.build, selection)  # the host's recipe, built once
    if b is None:
        mistakes.attempt(_settings_without_recipe, host, hv)
        mistakes.raise_any()
    rec = recipe_engine.recipe_of(b)
    members = mistakes.attempt(instance_members, host, hv, groups, rec["nodes"]) or [host]
    if mistakes.attempt(placement_value, hv, "sglang_hf_gated") and not hv.get("sglang_hf_token"):
        mistakes.add(f"sglang_hf_token: {rec['checkpoint']} is marked gated (sglang_hf_gated) and {host} has no "
                     "token; set sglang_hf_token (vault it) for this host or its group, after accepting the "
                     "model's terms on the Hub with that account")
    instance = mistakes.attempt(instance_name, hv, rec, members)
    install = mistakes.attempt(runtime.install_spec, hv, b.sel["install_method"], rec["sglang_version"], rec["image"])
    settings = mistakes.attempt(runtime.server_settings, hv, instance or "check", install, rec["vendor"]) \
        if install else None
    mistakes.raise_any()
    return b, rec, fabric, members, instance, install, settings


def server_plan(host: str, hostvars: dict[str, HostVars], groups: dict[str, list[str]]) -> dict[str, Any]:
    hv = hostvars[host]
    resolved: list[dict[str, Any]] = []
    selection = selection_of(hv)
    if not hv.get("sglang_gpu") and selection.get("gpu"):
        resolved.append(runtime.resolved("sglang_gpu", selection["gpu"], f"gpu_facts on {host}", True))
    elif not selection.get("gpu"):
        raise RecipeError(f"sglang_gpu: not set for {host} and its GPUs are not detected yet; set sglang_gpu "
                          "(h200, b200, b300, gb300, mi300x, mi325x, mi355x) or run site.yml, whose first play "
                          "detects them (gpu_facts)")
    b, rec, fabric, members, instance, install, settings = _server_parts(host, hv, groups, selection, resolved)
    if len(members) > 1:
        members = order_by_pinned_rank(members, hostvars)
    rank = members.index(host)
    head = members[0]
    head_address, unresolved = address_of(head, hostvars[head])
    if unresolved and len(members) > 1:
        resolved.append(unresolved)
    address, _unresolved = address_of(host, hv)
    argv = recipe_engine.node_args(b, rank, head_address if len(members) > 1 else None)
    env = dict(rec["env"])
    for key, value in fabric["env"].items():
        env.setdefault(key, value)  # the cell's and the operator's values win
    secret_env = sorted(env_name for var, env_name in SECRET_ENV.items() if hv.get(var))
    rdma = rdma_present(hv, is_networked(members, rec["pd_role"]))
    plan = {
        "host": host,
        "role": "server",
        "vendor": rec["vendor"],
        "rack": placement_value(hv, "sglang_rack"),
        "instance": instance,
        "unit": unit_of(instance),
        "members": members,
        "rank": rank,
        "head": head,
        "head_address": head_address if len(members) > 1 else None,
        "address": address,
        "listen_address": listen_address(host, hv),
        "recipe": rec,
        "argv": argv,
        "env": env,
        "secret_env": secret_env,
        "api_key": bool(server_key(hv)),
        "install_method": install["method"],
        "install": install,
        "settings": settings,
        "inputs": runtime.inputs(hv, ("sglang_install", "sglang_server")),
        "rdma": rdma,
        "resolved": resolved,
        "command": command_text(["sglang", "serve"], argv),
        "gpus": None,
        "verify": verify_expectations(b.model, b.version),
        "warnings": rec["warnings"] + fabric["warnings"],
    }
    return with_replicas(plan, b, hv)


def _settings_without_recipe(host: str, hv: HostVars) -> None:
    """A server's own settings that need no recipe, checked when its recipe is refused, so that both are named in one
    run: the unit name, a uv install (a docker install's image comes from the recipe) and the unit settings."""
    mistakes = Mistakes()
    instance = mistakes.attempt(placement_value, hv, "sglang_instance")
    if instance and not _INSTANCE_NAME.match(str(instance)):
        mistakes.add(f"sglang_instance: {instance!r} must be letters, digits, '.', '_' or '-' (it names a unit)")
    method = str(hv.get("sglang_install_method") or "")
    image = hv.get("sglang_image")
    if method == "uv" or (method in ("", "docker") and image):
        install = mistakes.attempt(runtime.install_spec, hv, method or "docker", "0", image)
        if install is not None:
            mistakes.attempt(runtime.server_settings, hv, "check", install, "")
    mistakes.raise_any()


def with_replicas(plan: dict[str, Any], b: Any, hv: HostVars) -> dict[str, Any]:
    """The host's plan with its GPU sets (sglang_replicas, sglang_replica_gpus; site/replicas.py): unchanged for a
    server that takes every GPU; one server pinned to its set; or several replicas, each a server plan of its own
    (the host's plan is the first one's, with `replicas` listing all of them)."""
    host, rec = plan["host"], plan["recipe"]
    sets = replicas.gpu_sets(host, hv, rec, int(b.platform.get("gpus_per_node") or 0), placement_value)
    if sets is None:
        return plan
    ports = b.catalog.ports
    out = []
    for index, gpus in enumerate(sets):
        name = replicas.name(plan["instance"], index, len(sets))
        if not _INSTANCE_NAME.match(name):
            raise RecipeError(f"sglang_instance: {name!r} must be letters, digits, '.', '_' or '-' (it names a unit)")
        build = b
        if len(sets) > 1:
            port, nccl = replicas.ports(rec["port"], index, int(ports["replica_step"]), int(ports["replica_nccl_offset"]))
            build = recipe_engine.replica_build(b, port, nccl)
        argv = recipe_engine.node_args(build, 0, None)
        env = {**plan["env"], **replicas.gpu_env(plan["vendor"], plan["install"]["method"], gpus)}
        replica = {**plan, "instance": name, "unit": unit_of(name), "recipe": recipe_engine.recipe_of(build),
                   "argv": argv, "env": env, "command": command_text(["sglang", "serve"], argv), "gpus": gpus,
                   "settings": runtime.server_settings(hv, name, plan["install"], plan["vendor"])}
        if len(sets) > 1:
            replica.update(replica=index, replica_of=plan["instance"])
        out.append(replica)
    if len(out) == 1:
        return out[0]
    return {**out[0], "replicas": out}


def verify_expectations(model: Any, release: str) -> dict[str, Any]:
    """What a working server of the model answers under the release that runs it (playbooks/verify.yml judges it):
    its name, its parsers (`auto` resolved from the release's parser table where it can be), the request fields that
    turn reasoning and tool calls on, and what opens reasoning or a tool call left in `content` (recipe/parsers.py)."""
    return parser_facts.expectations(model, release)


def router_policies() -> list[str]:
    return list(load_catalog().router.get("policies") or [])


def not_a_group(group: Any, groups: dict[str, list[str]]) -> str:
    """What would work instead of a group name the inventory lacks: the group it was probably meant to be (Ansible
    group names take '_' where a '-' was written, and case matters), else the groups there are."""
    names = sorted(g for g in groups if g not in ("all", "ungrouped"))
    wanted = re.sub(r"[^A-Za-z0-9]", "_", str(group)).lower()
    same = [g for g in names if re.sub(r"[^A-Za-z0-9]", "_", g).lower() == wanted]
    close = same or difflib.get_close_matches(str(group), names, n=2, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(close)}?"
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return f"the inventory's groups are {shown or '(none but all)'}"


def router_plan(host: str, hostvars: dict[str, HostVars], groups: dict[str, list[str]],
                servers: dict[str, dict[str, Any]], errors: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """One router's plan; every mistake of its own variables and of its pool is named at once."""
    hv = hostvars[host]
    mistakes = Mistakes()
    own = mistakes.attempt(_router_own, host, hv)
    pool = mistakes.attempt(_router_pool, host, hv, hostvars, groups, servers, errors or {})
    mistakes.raise_any()
    (port, metrics_port, policy, instance, install, method), (group, heads, served, mode) = own, pool
    prefill = [p for p in served if p["recipe"]["pd_role"] == "prefill"]
    decode = [p for p in served if p["recipe"]["pd_role"] == "decode"]
    urls = {(p["host"], p["instance"]): worker_url(p) for p in served}
    spec = {"mode": mode,
            "prefill": [{"url": urls[(p["host"], p["instance"])], "bootstrap_port": p["recipe"]["bootstrap_port"]}
                        for p in prefill],
            "decode": [urls[(p["host"], p["instance"])] for p in decode], "workers": list(urls.values()),
            "host": hv.get("sglang_host") or "0.0.0.0", "port": port, "metrics_port": int(metrics_port),
            "policy": policy,
            "extra_args": placement_value(hv, "sglang_router_extra_args")}
    args, warnings = recipe_engine.router_command(spec)
    answering = (decode or served)[0]
    return {
        "host": host,
        "role": "router",
        "vendor": None,
        "install_method": method,
        "install": install,
        "image": install["image"],
        "rack": placement_value(hv, "sglang_rack"),
        "instance": instance,
        "unit": unit_of(instance),
        "mode": mode,
        "workers_group": group,
        "workers": list(urls.values()),
        "worker_hosts": [p["host"] for p in heads],
        "port": int(port),
        "metrics_port": int(metrics_port),
        "listen_address": listen_address(host, hv),
        # what clients see through the router: the model, its name and parsers of the answering workers
        "model": answering["recipe"]["model"],
        "served_model_name": answering["recipe"]["served_model_name"],
        "verify": answering["verify"],
        "worker_argv": answering["argv"],
        "argv": args,
        "settings": runtime.router_settings(hv, install),
        "inputs": runtime.inputs(hv, ("sglang_install", "sglang_router")),
        "resolved": [],
        "command": command_text(["python3", "-m", "sglang_router.launch_router"], args),
        "warnings": warnings,
    }


def _router_own(host: str, hv: HostVars) -> tuple[Any, ...]:
    """A router's own settings, checked (every mistake at once): ports, policy, unit name, listen address, install."""
    mistakes = Mistakes()
    port = mistakes.attempt(placement_value, hv, "sglang_router_port")
    metrics_port = mistakes.attempt(placement_value, hv, "sglang_router_metrics_port")
    for name, value in (("sglang_router_port", port), ("sglang_router_metrics_port", metrics_port)):
        if value is not None and not 1 <= int(value) <= 65535:
            mistakes.add(f"{name}: {value} (router {host}) is not a TCP port (1-65535)")
    if port is not None and metrics_port is not None and int(metrics_port) == int(port):
        mistakes.add(f"sglang_router_metrics_port: {metrics_port} (router {host}) is also its serving port "
                     f"(sglang_router_port); give the Prometheus endpoint its own port (default "
                     f"{load_catalog().ports['router_metrics']})")
    policy = mistakes.attempt(placement_value, hv, "sglang_router_policy")
    if policy and policy not in router_policies():
        mistakes.add(f"sglang_router_policy: {policy!r} (router {host}) is not a policy of sglang-router "
                     f"{load_catalog().versions['router_pinned']}; it has {', '.join(router_policies())}")
    instance = mistakes.attempt(placement_value, hv, "sglang_instance") or "router"
    if not _INSTANCE_NAME.match(str(instance)):
        mistakes.add(f"sglang_instance: {instance!r} must be letters, digits, '.', '_' or '-' (it names a unit)")
    if hv.get("sglang_host"):
        mistakes.attempt(input_checks.check_listen_address, hv["sglang_host"], "sglang_host", "sglang_router_port")
    install = mistakes.attempt(_router_install, host, hv)
    mistakes.raise_any()
    return port, metrics_port, policy, instance, install[0], install[1]


def _router_install(host: str, hv: HostVars) -> tuple[dict[str, Any], str]:
    catalog = load_catalog()
    spec = catalog.variables["recipe"]["sglang_install_method"]  # the one owner of its default and choices
    method = str(coerce(hv.get("sglang_install_method") or spec["default"], "str", "sglang_install_method"))
    if method not in spec["choices"]:
        raise RecipeError(f"sglang_install_method: {method!r} is not one of {', '.join(spec['choices'])}")
    if method == "uv" and hv.get("sglang_image"):
        raise RecipeError(f"sglang_install_method is uv but sglang_image is set on router {host}; drop one")
    release = str(hv.get("sglang_version") or catalog.versions["pinned"]).lstrip("v")
    image = hv.get("sglang_image") or catalog.router.get("image")
    return runtime.install_spec(hv, method, release, image), method


def server_key(hv: HostVars) -> Any:
    """The API key a server takes: sglang_server_api_key, which defaults to sglang_api_key (roles/sglang_server)."""
    return hv.get("sglang_server_api_key") or hv.get("sglang_api_key")


def unplanned_workers(router: str, group: str, broken: list[str]) -> str:
    """A router waits for the servers of its group that cannot be planned; their problems are theirs."""
    return (f"sglang_router_workers_group: {group} (on router {router}) holds servers that cannot be planned: "
            f"{', '.join(broken)} (their problems are listed under their names); the router is planned once they are")


def waiting_routers(plans: dict[str, dict[str, Any]], hostvars: dict[str, HostVars], groups: dict[str, list[str]],
                    errors: dict[str, list[str]]) -> Iterator[tuple[str, str]]:
    """Routers placed before their servers were refused (the stages' inputs, the site's coherence): they wait as
    placement makes them wait, instead of naming URLs no planned server serves."""
    for host, plan in plans.items():
        if plan.get("role") != "router" or host in errors:
            continue
        group = placement_value(hostvars.get(host) or {}, "sglang_router_workers_group")
        broken = sorted(w for w in groups.get(str(group or ""), []) if w in errors)
        if broken:
            yield host, unplanned_workers(host, str(group), broken)


def _router_pool(host: str, hv: HostVars, hostvars: dict[str, HostVars], groups: dict[str, list[str]],
                 servers: dict[str, dict[str, Any]], errors: dict[str, list[str]]) -> tuple[Any, ...]:
    """(group, heads, serving instances, mode) of the servers a router fronts. A server of the group that cannot be
    planned is named, not its problems (they are listed under its own name)."""
    group = placement_value(hv, "sglang_router_workers_group")
    if not group:
        raise RecipeError(f"sglang_router_workers_group: router {host} fronts no workers; name the inventory group "
                          "of the servers it routes to")
    if group not in groups:
        raise RecipeError(f"sglang_router_workers_group: {group!r} (on router {host}) is not an inventory group; "
                          f"{not_a_group(group, groups)}")
    members = sorted(groups[group])
    not_serving = [w for w in members if w in hostvars and role_of(hostvars[w]) != "server"]
    if not_serving:
        raise RecipeError(f"sglang_router_workers_group: {group} (on router {host}) holds "
                          f"{', '.join(not_serving)}, which serve nothing (sglang_role is not server); a router's "
                          "group holds only servers")
    broken = [w for w in members if w not in servers and w in errors]
    if broken:
        raise RecipeError(unplanned_workers(host, group, broken))
    heads = [servers[w] for w in members if w in servers and servers[w]["rank"] == 0]
    if not heads:
        raise RecipeError(f"sglang_router_workers_group: {group} (on router {host}) has no servers")
    # every serving instance of the group: each replica of a host with sglang_replicas is a worker of its own
    served = [i for p in heads for i in replicas.instances_of(p)]
    return group, heads, served, _router_mode(host, hv, hostvars, group, heads, served)


def _router_mode(host: str, hv: HostVars, hostvars: dict[str, HostVars], group: str, heads: list[dict[str, Any]],
                 served: list[dict[str, Any]]) -> str:
    prefill = [p for p in served if p["recipe"]["pd_role"] == "prefill"]
    decode = [p for p in served if p["recipe"]["pd_role"] == "decode"]
    plain = [p for p in served if not p["recipe"]["pd_role"]]
    mode = placement_value(hv, "sglang_router_mode") or ("pd" if prefill or decode else "plain")
    if mode == "plain" and (prefill or decode):
        raise RecipeError(f"sglang_router_mode: router {host} is plain but {group} holds PD workers; use pd")
    if mode == "pd" and plain:
        raise RecipeError(f"sglang_router_workers_group: router {host} is a PD router but {group} also holds plain "
                          f"servers ({', '.join(dict.fromkeys(p['host'] for p in plain))}), which a PD router cannot "
                          "use; give them sglang_pd or move them to another router's group")
    if mode == "pd" and not (prefill and decode):
        raise RecipeError(f"sglang_router_workers_group: router {host} is a PD router but {group} holds "
                          f"{len(prefill)} prefill and {len(decode)} decode worker(s); it needs at least one of each")
    router_address = listen_address(host, hv) if hv.get("ansible_host") or hv.get("sglang_host") else host
    for p in heads:
        if is_loopback(p["listen_address"]) and not same_machine(host, hv, p["host"], hostvars[p["host"]]):
            raise RecipeError(f"sglang_host: {p['host']} listens on {p['listen_address']} only, but router {host} "
                              f"({router_address}) is another machine; use 0.0.0.0 or an address the router reaches")
    return str(mode)


def worker_url(plan: dict[str, Any]) -> str:
    """The URL a router is given for one serving instance (a server's plan, or one replica's): where it listens, its
    --port. The router's command line and upgrade.yml's drains and re-admissions read it here."""
    return f"http://{recipe_engine.format_address(plan['listen_address'], plan['recipe']['port'])}"


def machine_of(host: str, hv: HostVars) -> str:
    """The machine an inventory name stands for: its ansible_host, else the name itself."""
    return str(hv.get("ansible_host") or host).strip().lower()


def same_machine(a: str, hva: HostVars, b: str, hvb: HostVars) -> bool:
    return machine_of(a, hva) == machine_of(b, hvb)


def none_plan(host: str, hv: HostVars) -> dict[str, Any]:
    vendor = None
    gpu = hv.get("sglang_gpu") or detected_gpu(hv)
    if gpu:
        platform = load_catalog(None, hv.get("sglang_gpu_platforms")).gpus.get(str(gpu))
        vendor = (platform or {}).get("vendor")
    return {"host": host, "role": "none", "vendor": vendor, "warnings": [], "resolved": []}
