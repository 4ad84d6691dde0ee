# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One upgrade step of playbooks/upgrade.yml, decided on the controller: the running and target plans, what changes,
the canary and the waves, and whether this run starts, resumes, commits or has nothing to do. Pure (the action
upgrade_plan reads and writes the files).

Statuses:
    nothing   every node runs the target and no upgrade is open: the run changes nothing
    commit    every unit and router of the open upgrade moved: the run only commits it
    start     a new upgrade (no state, or the last one finished with another target)
    resume    the open upgrade of this very target goes on where it stopped
"""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import replicas
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import change, waves
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import state as st

PlanSite = Callable[[dict[str, dict[str, Any]], dict[str, list[str]]], dict[str, Any]]


class UpgradeRefused(ValueError):
    """The upgrade cannot start or go on; the message says why and what would work."""


def cell_of(target: dict[str, Any], running: dict[str, Any], head: str) -> dict[str, Any]:
    rec = target["plans"][head]["recipe"]
    before = (running["plans"].get(head) or {}).get("install") or {}
    return {"model": rec["model"], "gpu": rec["gpu"], "quant": rec["quant"], "strategy": rec["strategy"],
            "nodes": int(rec["nodes"]), "cookbook_revision": rec.get("cookbook_revision"),
            "gpus": int(rec["gpus_per_node"]) * int(rec["nodes"]), "release": target["plans"][head]["install"]["release"],
            "from_release": before.get("release")}


def decide(plan_site: PlanSite, inventory: dict[str, dict[str, Any]], groups: dict[str, list[str]],
           node_units: dict[str, dict[str, str]], saved: dict[str, Any] | None, options: dict[str, Any]
           ) -> dict[str, Any]:
    """Everything upgrade.yml needs for this run. options: upgrade_from, upgrade_from_groups, canary, wave_by,
    batch_size, allow_outage, retry, settings. Raises UpgradeRefused (or change.ChangeError, waves.WavePlanError)."""
    target_inputs = change.masked(inventory)
    warnings: list[str] = []
    recorded, source = _recorded(inventory, groups, saved, options, target_inputs, warnings)
    target = change.plan_both(plan_site, target_inputs, groups, "target")
    first = change.plan_both(plan_site, recorded, groups, "running")
    inputs, refused = change.pick_running(first["plans"], target["plans"], node_units, recorded, target_inputs)
    if refused:
        raise UpgradeRefused("the nodes do not run what this upgrade would roll back to:\n"
                             + "\n".join(f"  - {h}: {why}" for h, why in sorted(refused.items())))
    running = first if inputs == recorded else change.plan_both(plan_site, inputs, groups, "running")
    changes = change.diff(running, target)
    units_t = waves.movable_units(target["plans"])
    moving_hosts = sorted(h for h, items in changes.items() if {c["stage"] for c in items} & set(change.MOVED_STAGES))
    moving = waves.changed_units(units_t, moving_hosts)
    problems = _problems(running, target, changes, moving, moving_hosts)
    if problems:
        raise UpgradeRefused("the target cannot be reached by an upgrade:\n" + "\n".join(f"  - {p}" for p in problems))
    routers = [h for h in moving_hosts if target["plans"][h]["role"] == "router"]
    digest = change.digest({h: {n: t for n, (_s, t) in change.host_texts(p, target.get("monitoring")).items()}
                            for h, p in sorted(target["plans"].items()) if p.get("role") in ("server", "router")})
    # previous: the plan a rollback returns to (the recorded inputs; a unit half-way through is rolled back to it)
    out: dict[str, Any] = {"target_digest": digest, "running_from": source, "changes": changes, "running": running,
                           "previous": first, "target": target, "units": units_t, "warnings": warnings,
                           "moving_hosts": moving_hosts}
    open_upgrade = _open_upgrade(saved, digest, options)
    if (open_upgrade and st.done(open_upgrade)) or (not open_upgrade and not moving and not routers):
        out.update(status="commit" if open_upgrade else "nothing", canary=None, waves=[], routers=[], state=open_upgrade)
        return out
    if open_upgrade:  # the open upgrade's own list: a unit half-way through moves again, whatever its node runs
        new_state, status = open_upgrade, "resume"
    else:
        new_state, status = _new_state(digest, inputs, target_inputs, target, running, moving, routers, options), "start"
    units_by_id = {u["id"]: u for u in units_t}
    canary = units_by_id[new_state["canary"]] if new_state["canary"] else None
    plan = [{"units": ids, **_wave_fields(ids, units_by_id, units_t)} for ids in new_state["waves"]]
    _refuse_outages(canary, plan, units_t, options)
    left = set(st.pending_units(new_state))
    out.update(status=status, state=new_state, canary=canary if canary and canary["id"] in left else None,
               waves=[dict(w, units=[u for u in w["units"] if u in left],
                           hosts=[h for u in w["units"] if u in left for h in units_by_id[u]["hosts"]])
                      for w in plan if set(w["units"]) & left],
               routers=[r for r in sorted(new_state["routers"])
                        if new_state["routers"].get(r, {}).get("phase") != "promoted"])
    return out


def _recorded(inventory: dict[str, dict[str, Any]], groups: dict[str, list[str]], saved: dict[str, Any] | None,
              options: dict[str, Any], target_inputs: dict[str, Any], warnings: list[str]) -> tuple[dict[str, Any], str]:
    """The inputs the nodes were planned from (the state's, upgrade_from's, or the inventory's), and where from."""
    if saved:
        recorded = saved["running"]
        source = "rendered/upgrade/state.json (what the last upgrade moved the nodes to)"
        if options.get("upgrade_from") or options.get("upgrade_from_groups"):
            warnings.append("upgrade_from is ignored: rendered/upgrade/state.json records what the nodes run")
    elif options.get("upgrade_from") or options.get("upgrade_from_groups"):
        recorded = change.masked(change.with_overrides(inventory, groups, options.get("upgrade_from") or {},
                                                       options.get("upgrade_from_groups") or {}))
        source = "the inventory with upgrade_from"
    else:
        recorded = target_inputs
        source = "the inventory (no state and no upgrade_from: the nodes must already run it)"
    return {h: recorded.get(h, target_inputs[h]) for h in target_inputs}, source  # hosts new to the inventory


def _problems(running: dict[str, Any], target: dict[str, Any], changes: dict[str, Any], moving: list[dict[str, Any]],
              moving_hosts: list[str]) -> list[str]:
    """What an upgrade cannot do: other stages, role settings, weights in place, instances or replicas reshaped."""
    problems = (change.refuse_other_stages(changes) + change.refuse_role_settings(running, target)
                + change.refuse_weights_in_place(running, target))
    shape_r = {u["id"]: u["hosts"] for u in waves.movable_units(running["plans"])}
    reshaped = [u["id"] for u in moving if shape_r.get(u["id"]) != u["hosts"]]
    if reshaped:
        problems.append(f"the target changes which hosts form {', '.join(reshaped)} (instances, members or PD pairs); "
                        "upgrade.yml moves instances as they are: reshape the site with site.yml")
    for host in moving_hosts:  # a host's servers (sglang_replicas) move as they are: their count and names stay
        before, after = _servers(running["plans"].get(host)), _servers(target["plans"].get(host))
        if before and after and before != after:
            problems.append(f"the target changes the servers {host} runs ({', '.join(before)} -> {', '.join(after)}: "
                            "sglang_replicas); upgrade.yml moves a host's servers as they are: change them with "
                            "site.yml first")
    return problems


def _open_upgrade(saved: dict[str, Any] | None, digest: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The open upgrade of this very target, None when there is none; another target open, or this target rolled
    back (without upgrade_retry), is refused."""
    open_upgrade = saved if saved and saved.get("status") == "in_progress" else None
    if open_upgrade and open_upgrade["target"] != digest:
        pending = ", ".join(f"{u} ({open_upgrade['units'][u]['phase']})" for u in st.pending_units(open_upgrade)) \
            or "its routers"
        raise UpgradeRefused(f"an upgrade to another target ({open_upgrade['target']}) is open: {pending} still to move; "
                             "give the inventory that target again to finish it, or remove rendered/upgrade/state.json "
                             "and give upgrade_from to start over from what the nodes run")
    if saved and saved.get("status") == "rolled_back" and saved["target"] == digest and not options.get("retry"):
        failed = [f"{u}: {e.get('reason') or (e.get('verdict') or {}).get('summary') or 'failed'}"
                  for u, e in saved["units"].items() if e.get("phase") == "rolled_back"]
        raise UpgradeRefused("this target was rolled back (" + "; ".join(failed) + "); fix it and change the target, "
                             "or run again with -e upgrade_retry=true")
    return open_upgrade


def _new_state(digest: str, inputs: dict[str, Any], target_inputs: dict[str, Any], target: dict[str, Any],
               running: dict[str, Any], moving: list[dict[str, Any]], routers: list[str],
               options: dict[str, Any]) -> dict[str, Any]:
    """A new upgrade's state: the canary, the waves of the other moving units, the routers, each unit's cell."""
    units_t = waves.movable_units(target["plans"])
    canary = waves.choose_canary(units_t, moving, str(options.get("canary") or "")) if moving else None
    rest = [u for u in moving if canary is None or u["id"] != canary["id"]]
    plan = waves.plan_waves(units_t, rest, str(options.get("wave_by") or "batch"), int(options.get("batch_size") or 1))
    state = st.new(digest, inputs, target_inputs, units_t, canary["id"] if canary else "", plan, routers,
                   dict(options.get("settings") or {}))
    units_by_id = {u["id"]: u for u in units_t}
    for uid, entry in state["units"].items():
        entry["cell"] = cell_of(target, running, units_by_id[uid]["heads"][0])
    return state


def _refuse_outages(canary: dict[str, Any] | None, plan: list[dict[str, Any]], units: list[dict[str, Any]],
                    options: dict[str, Any]) -> None:
    all_pools = waves.pools(units)
    outages = []
    if canary and waves.outage_of([canary], all_pools):
        outages.append(f"the canary {canary['id']} is the only unit behind {', '.join(waves.outage_of([canary], all_pools))}")
    outages += [f"wave {i + 1} ({', '.join(w['units'])}) is all of {', '.join(w['outage'])}'s pool"
                for i, w in enumerate(plan) if w["outage"]]
    if outages and not options.get("allow_outage"):
        raise UpgradeRefused("moving would leave a router with no worker to send traffic to: " + "; ".join(outages)
                             + "; add an instance to that pool, or accept the outage with -e upgrade_allow_outage=true")


def _servers(plan: dict[str, Any] | None) -> list[str]:
    """The serving instances a server host's plan runs (its replicas', or its own), [] for anything else."""
    if not plan or plan.get("role") != "server":
        return []
    return [str(p["instance"]) for p in replicas.instances_of(plan)]


def _wave_fields(ids: list[str], by_id: dict[str, dict[str, Any]], units: list[dict[str, Any]]) -> dict[str, Any]:
    chosen = [by_id[i] for i in ids]
    return {"hosts": [h for u in chosen for h in u["hosts"]], "racks": sorted({r for u in chosen for r in u["racks"]}),
            "outage": waves.outage_of(chosen, waves.pools(units))}


def change_markdown(decision: dict[str, Any]) -> str:
    """rendered/upgrade/CHANGE.md: per host what its files become, the units, the canary and the waves."""
    changes = decision["changes"]
    target = decision["target"]["plans"]
    lines = ["# What the upgrade changes", "",
             f"Target `{decision['target_digest']}`; the running plan is made from {decision['running_from']}.", ""]
    if not changes:
        lines += ["Nothing: every node runs the target.", ""]
        return "\n".join(lines)
    lines += ["| host | role | instance | stages | files |", "| --- | --- | --- | --- | --- |"]
    for host, items in sorted(changes.items()):
        plan = target.get(host) or {}
        lines.append(f"| {host} | {plan.get('role', '-')} | {plan.get('instance', '-')} | "
                     f"{', '.join(sorted({c['stage'] for c in items}))} | {', '.join(c['name'] for c in items)} |")
    lines.append("")
    shown = sorted(h for h, items in changes.items() if h not in decision["moving_hosts"])
    if shown:
        lines += [f"Changes outside the serving stages ({', '.join(shown)}) are shown, not applied: run "
                  "`site.yml --tags monitoring` after the upgrade.", ""]
    canary = decision.get("canary")
    if decision.get("state"):
        s = decision["state"]
        lines += [f"Canary: {s.get('canary') or '-'}" + ("" if canary else " (already moved)"), ""]
        for i, ids in enumerate(s.get("waves", [])):
            lines.append(f"- wave {i + 1}: {', '.join(ids)}")
        if s.get("routers"):
            lines.append(f"- routers, one at a time: {', '.join(sorted(s['routers']))}")
        lines.append("")
    for host, items in sorted(changes.items()):
        lines += [f"## {host}", ""]
        for item in items:
            lines += ["```diff", item["diff"].rstrip("\n"), "```", ""]
    return "\n".join(lines)
