# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site plan, made once: every host's plan, in the order the parts depend on each other. Pure.

    placement     servers (command, rank, head, install, unit settings), then routers (they read the servers)
    monitoring    exporters and their ports on every planned host
    stages        what the node stages get: the GPU driver, RDMA, the container runtime, the weights
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

from typing import Any, Iterable, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import site as site_checker
from ansible_collections.metalserve.sglang.plugins.plugin_utils import secret_shapes
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import coherence, monitoring, placement, stages, units


def check_pd_has_router(plan: dict[str, Any], routers: dict[str, dict[str, Any]]) -> None:
    if plan["recipe"]["pd_role"] and plan["rank"] == 0 and not any(
            plan["host"] in r["worker_hosts"] for r in routers.values()):
        raise RecipeError(
            f"sglang_pd: {plan['host']} is a PD {plan['recipe']['pd_role']} worker but no router fronts it; add a host "
            "with sglang_role: router and sglang_router_workers_group naming a group that contains it")


def plan_site(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> dict[str, Any]:
    """Every host's plan, made once: {plans: {host: plan}, errors: {host: [message, ...]}, monitoring: {...}}."""
    plans: dict[str, dict[str, Any]] = {}
    errors: dict[str, list[str]] = {}

    def attempt(host: str, make: Any) -> None:
        try:
            plans[host] = make()
        except RecipeError as exc:
            errors.setdefault(host, []).append(str(exc))

    roles: dict[str, str] = {}
    for host in sorted(hostvars):
        try:
            roles[host] = placement.role_of(hostvars[host])
        except RecipeError as exc:
            errors.setdefault(host, []).append(str(exc))
        errors_here = placement.variable_errors(host, hostvars[host])
        if errors_here:
            errors.setdefault(host, []).extend(errors_here)
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
    for host, plan in servers.items():
        try:
            check_pd_has_router(plan, routers)
        except RecipeError as exc:
            errors.setdefault(host, []).append(str(exc))
    monitoring.attach(plans, hostvars, groups, errors)  # exporters and their ports, before the site checks
    stages.attach(plans, hostvars, groups, errors)  # driver, RDMA, runtime, weights: before the site checks
    for host, message in coherence.site_problems(plans, hostvars, groups, errors):
        errors.setdefault(host, []).append(message)
    for host, plan in plans.items():
        if host in errors or plan["role"] == "none":
            continue
        try:
            plan["files"] = units.host_files(plan, plans, hostvars)
        except RecipeError as exc:
            errors.setdefault(host, []).append(str(exc))
    site_monitoring = monitoring.site_monitoring(plans, hostvars, groups, errors)
    site = {"plans": plans, "errors": errors, "monitoring": site_monitoring}
    # the independent judge: what the nodes would get, read back as files (checks/site.py), over every host the
    # planner accepted: a host refused elsewhere in the inventory must not spare the others (a --limit run
    # converges them with that host's problem as a warning)
    accepted = {h: p for h, p in plans.items() if h not in errors}
    if accepted:
        judged = site_checker.nodes_from_site({"plans": accepted, "monitoring": site_monitoring}, hostvars)
        for host, message in site_checker.check_site(judged):
            errors.setdefault(host, []).append(message)
        for host, plan in accepted.items():
            found = secret_shapes.exposed(plan)
            if found:
                errors.setdefault(host, []).append(exposure_text(host, found, hostvars.get(host) or {}))
    site["errors"] = {h: _unique(m) for h, m in sorted(errors.items())}
    return site


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


def refusal_text(where: str, variable_errors: dict[str, dict[str, list[str]]], problems: dict[str, list[str]],
                 checked: int, planned: int) -> str:
    """The one message of a refused site: the argument-spec refusals (check_variables), then the plan's own problems;
    a problem both name (a variable that cannot be templated) is said once. Tokens are masked."""
    parts = [f"refused before anything changed (reported once for the site, on {where}; the hosts at fault are named "
             "below)"]
    if variable_errors:
        parts.append(variables.redact(variables.failure_text(variable_errors, checked)))
    said = {h: {m for ms in v.values() for m in ms} for h, v in variable_errors.items()}
    rest = {h: [m for m in ms if m not in said.get(h, set())] for h, ms in problems.items()}
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
