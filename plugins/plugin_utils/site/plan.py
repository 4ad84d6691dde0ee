# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site plan, made once: every host's plan, in the order the parts depend on each other. Pure.

    placement     servers (command, rank, head, install, unit settings), then routers (they read the servers)
    monitoring    exporters and their ports on every planned host
    stages        what the node stages get: the GPU driver, RDMA, the container runtime, the weights, acceptance
    stage inputs  what those stages were given, judged as the vendors' tools read it (site/stage_inputs.py)
    coherence     the site-wide checks over the final commands, units, ports and node stacks
    units         the very text of the files the serving roles write
    monitoring    the monitoring hosts' files and every node's scrape firewall
    checks/site   the site checker: the files every node would get, read back and judged as a whole (a site
                  the planner accepted can still be refused here: it judges the output, not the inputs); it
                  judges every host the planner accepted, whatever the others' problems

This module is the only one that imports them all; none of them imports it, so there is no cycle to hide.
render.yml, the plan action and every role read what plan_site() returns; none recomputes it.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import site as site_checker
from ansible_collections.metalserve.sglang.plugins.plugin_utils import secret_shapes
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError, messages_of
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import (
    coherence, monitoring, placement, readers, stage_inputs, stages, units)


def check_pd_has_router(plan: dict[str, Any], routers: dict[str, dict[str, Any]], meant: set[str]) -> None:
    """A PD worker needs a router; one whose router exists but cannot be planned is that router's problem (`meant`:
    the hosts of every router's workers group)."""
    if plan["recipe"]["pd_role"] and plan["rank"] == 0 and plan["host"] not in meant and not any(
            plan["host"] in r["worker_hosts"] for r in routers.values()):
        raise RecipeError(
            f"sglang_pd: {plan['host']} is a PD {plan['recipe']['pd_role']} worker but no router fronts it; add a host "
            "with sglang_role: router and sglang_router_workers_group naming a group that contains it")


def check_monitoring_host(host: str, hv: dict[str, Any], groups: dict[str, list[str]]) -> None:
    """A host of the monitoring group that sets no sglang_role would be planned as a GPU server (the default role)."""
    if host in groups.get(monitoring.GROUP, []) and hv.get("sglang_role") is None:
        raise RecipeError(f"sglang_role: {host} is in the {monitoring.GROUP} group (Prometheus and the blackbox exporter "
                          "run there) but sets no sglang_role, so it would be planned as a GPU server (the default "
                          f"role); give the group sglang_role: none (group_vars/{monitoring.GROUP}.yml), or set "
                          f"sglang_role: server on {host} if it is a GPU server that also runs Prometheus")


def roles_of(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
             errors: dict[str, list[str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(each host's role, the warnings of its variables): the names the collection does not read, retired ones, and a
    monitoring host that would be taken for a server are the hosts' problems."""
    roles: dict[str, str] = {}
    said: dict[str, list[str]] = {}  # given to the host's plan once it has one
    for host in sorted(hostvars):
        try:
            roles[host] = placement.role_of(hostvars[host])
            check_monitoring_host(host, hostvars[host], groups)
        except RecipeError as exc:
            roles.pop(host, None)
            errors.setdefault(host, []).extend(messages_of(exc))
        errors.setdefault(host, []).extend(placement.variable_errors(host, hostvars[host]))
        if not errors[host]:
            del errors[host]
        said[host] = placement.variable_warnings(hostvars[host])
    return roles, said


def plan_site(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
              origins: Optional[dict[str, dict[str, list[str]]]] = None,
              applied: Optional[dict[str, frozenset[str]]] = None) -> dict[str, Any]:
    """Every host's plan, made once: {plans: {host: plan}, errors: {host: [message, ...]}, monitoring: {...}}.
    `origins`: where each host's variables were set ({host: {variable: [group or "host <name>", ...]}}, from the
    inventory's sources: inventory_vars.variable_origins); without it they are inferred from the values. `applied`:
    roles a play applies itself ({role: hosts}), which read their variables on those hosts whatever site.yml does."""
    errors: dict[str, list[str]] = {}
    plans = place(hostvars, groups, errors)  # servers, then the routers that read them
    monitoring.attach(plans, hostvars, groups, errors)  # exporters and their ports, before the site checks
    stages.attach(plans, hostvars, groups, errors)  # driver, RDMA, runtime, weights: before the site checks
    # what the stages were given, read as the vendors' tools read it, on each host and across a rack's weights
    for host, message in stage_inputs.problems(plans, hostvars, groups, errors):
        errors.setdefault(host, []).append(message)
    for host, message in coherence.site_problems(plans, hostvars, groups, errors):
        errors.setdefault(host, []).append(message)
    for host, message in list(placement.waiting_routers(plans, hostvars, groups, errors)):
        errors.setdefault(host, []).append(message)
    for host, plan in plans.items():
        if host in errors or plan["role"] == "none":
            continue
        try:
            plan["files"] = units.host_files(plan, plans, hostvars)
        except RecipeError as exc:
            errors.setdefault(host, []).extend(messages_of(exc))
    site_monitoring = monitor(plans, hostvars, groups, errors)
    judge(plans, site_monitoring, hostvars, errors)
    # last: a variable nothing reads is a mistake of its own, and must not keep the checker from judging its host
    check_unread(plans, hostvars, groups, origins, errors, applied)
    return {"plans": plans, "errors": {h: _unique(m) for h, m in sorted(errors.items())}, "monitoring": site_monitoring}


def place(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
          errors: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """Placement: every host's role, the servers' and the idle hosts' plans, then the routers' (they read the
    servers), and a PD worker's router; each plan starts with its variables' warnings."""
    plans: dict[str, dict[str, Any]] = {}

    def attempt(host: str, make: Any) -> None:
        try:
            plans[host] = make()
        except RecipeError as exc:
            errors.setdefault(host, []).extend(messages_of(exc))

    roles, said = roles_of(hostvars, groups, errors)
    for host, role in roles.items():
        if role == "server":
            attempt(host, lambda h=host: placement.server_plan(h, hostvars, groups))
        elif role == "none":
            attempt(host, lambda h=host: placement.none_plan(h, hostvars[h]))
    servers = {h: p for h, p in plans.items() if p["role"] == "server"}
    for host, role in roles.items():
        if role == "router":
            attempt(host, lambda h=host: placement.router_plan(h, hostvars, groups, servers, errors))
    routers = {h: p for h, p in plans.items() if p["role"] == "router"}
    meant = {w for h, role in roles.items() if role == "router"
             for w in groups.get(str(hostvars[h].get("sglang_router_workers_group") or ""), [])}
    for host, plan in servers.items():
        try:
            check_pd_has_router(plan, routers, meant)
        except RecipeError as exc:
            errors.setdefault(host, []).extend(messages_of(exc))
    for host, plan in plans.items():
        plan["warnings"] = said.get(host, []) + plan.get("warnings", [])
    return plans


def monitor(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
            errors: dict[str, list[str]]) -> dict[str, Any]:
    """The monitoring hosts' files; a site-wide setting they cannot take is the problem of the host it is read from."""
    try:
        return monitoring.site_monitoring(plans, hostvars, groups, errors)
    except RecipeError as exc:
        source = monitoring.site_settings(hostvars, groups)[0]
        errors.setdefault(source, []).extend(messages_of(exc))
        return {"hosts": [], "warnings": [], "files": {}, "settings_from": source, "settings_refused": messages_of(exc)}


def judge(plans: dict[str, dict[str, Any]], site_monitoring: dict[str, Any], hostvars: dict[str, dict[str, Any]],
          errors: dict[str, list[str]]) -> None:
    """The independent judge: what the nodes would get, read back as files (checks/site.py), over every host the
    planner accepted (a host refused elsewhere in the inventory must not spare the others: a --limit run converges
    them with that host's problem as a warning); then no secret in any accepted plan."""
    accepted = {h: p for h, p in plans.items() if h not in errors}
    if not accepted:
        return
    judged = site_checker.nodes_from_site({"plans": accepted, "monitoring": site_monitoring}, hostvars)
    for host, message in site_checker.check_site(judged):
        errors.setdefault(host, []).append(message)
    for host, plan in accepted.items():
        found = secret_shapes.exposed(plan)
        if found:
            errors.setdefault(host, []).append(exposure_text(host, found, hostvars.get(host) or {}))


def check_unread(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
                 origins: Optional[dict[str, dict[str, list[str]]]], errors: dict[str, list[str]],
                 applied: Optional[dict[str, frozenset[str]]] = None) -> None:
    """Variables the inventory sets where nothing reads them (site/readers.py): refusals and warnings. A variable
    another check already named on that host is not said twice."""
    if not plans:
        return
    site_host, _settings = monitoring.site_settings(hostvars, groups)
    for host, level, message in readers.unread_variables(plans, hostvars, groups, origins, site_host, monitoring.GROUP,
                                                         applied or {}):
        name = message.split(":", 1)[0]
        if any(name in said for said in errors.get(host, [])):
            continue
        if level == "error":
            errors.setdefault(host, []).append(message)
        elif message not in plans[host].setdefault("warnings", []):
            plans[host]["warnings"].append(message)


def warning_lines(plans: dict[str, dict[str, Any]], hosts: Optional[Iterable[str]] = None, shown: int = 3) -> list[str]:
    """The plans' warnings for the play output, one line per distinct warning: the hosts that share it, named up to
    `shown` and counted beyond (a site of 2,048 hosts on one unpinned image gets one line, not 2,048). PLAN.md keeps
    every host's own."""
    wanted = set(plans) if hosts is None else set(hosts)
    by_text: dict[str, list[str]] = {}
    for host, plan in sorted(plans.items()):
        if host in wanted:
            for text in plan.get("warnings", []):
                by_text.setdefault(text, []).append(host)
    lines = []
    for text, owners in by_text.items():
        if len(owners) <= shown:
            lines.append(f"{', '.join(owners)}: {text}")
        else:
            lines.append(f"{len(owners)} hosts ({', '.join(owners[:shown])} and {len(owners) - shown} more): {text}")
    return lines


def exposure_text(host: str, found: tuple[str, str, str], hv: dict[str, Any]) -> str:
    """A secret-shaped value somewhere in a host's plan (a stage's settings, a readable file): where, which variable
    brought it (the inventory variable whose value holds it, or is held by it), never the value."""
    where, kind, text = found
    names = sorted(name for name, value in hv.items() if isinstance(value, (str, dict, list)) and value
                   and (str(value) in text or text in str(value)))
    source = f" (from {', '.join(names[:3])})" if names else ""
    return (f"{host}'s plan holds {kind} at {where}{source}: the plan artifact (rendered/plan.json), rendered/ and "
            "--diff would show it. Give a credential through its own secret variable (vaulted: sglang_hf_token, "
            "sglang_api_key, sglang_install_registry_password) or a file on the node, never inside a URL or a "
            "setting")


def _unique(messages: list[str]) -> list[str]:
    return list(dict.fromkeys(messages))


def failure_text(errors: dict[str, list[str]], total: int) -> str:
    """All hosts' problems in one message, one line per problem."""
    lines = [f"{len(errors)} of {total} host(s) cannot be planned:"]
    for host, messages in sorted(errors.items()):
        lines += [f"  - {host}: {m}" for m in messages]
    return "\n".join(lines)


#: how Ansible's argument-spec validator names the variable whose type it refuses (check_variables' messages)
_SPEC_ARGUMENT = re.compile(r"^argument '(\w+)' is of type")
#: how the plan refuses the same (runtime._coerce)
_PLAN_TYPE = re.compile(r"^(\w+): expected \w+ \(its argument spec\)")


def _type_refusal(message: str) -> str | None:
    """The variable a plan problem refuses for its type (as the argument spec would), else None."""
    found = _PLAN_TYPE.match(message)
    return found.group(1) if found else None


def refusal_text(where: str, variable_errors: dict[str, dict[str, list[str]]], problems: dict[str, list[str]],
                 checked: int, planned: int) -> str:
    """The one message of a refused site: the argument-spec refusals (check_variables), then the plan's own problems;
    a problem both name (a variable that cannot be templated, or one whose type the spec refused on that host: a
    site-wide setting would otherwise be said again on every host) is said once. Tokens are masked."""
    parts = [f"refused before anything changed (reported once for the site, on {where}; the hosts at fault are named "
             "below)"]
    if variable_errors:
        parts.append(variables.redact(variables.failure_text(variable_errors, checked)))
    said = {h: {m for ms in v.values() for m in ms} for h, v in variable_errors.items()}
    refused = {h: {n for m in ms for n in _SPEC_ARGUMENT.findall(m)} for h, ms in said.items()}
    rest = {h: [m for m in ms if m not in said.get(h, set()) and _type_refusal(m) not in refused.get(h, set())]
            for h, ms in problems.items()}
    rest = {h: ms for h, ms in rest.items() if ms}
    if rest:
        parts.append(variables.redact(failure_text(rest, planned)))
    return "\n".join(parts)


def host_plan(host: str, hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> dict[str, Any]:
    """The plan of one host (planning the whole site it belongs to); raises its first problem."""
    site = plan_site(hostvars, groups)
    if host in site["errors"]:
        raise RecipeError(site["errors"][host][0])
    return site["plans"][host]
