# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What moves together in an upgrade, which unit is the canary, and the waves after it. Pure.

A *unit* is what one upgrade step moves: one serving instance with all its members (a TP16 pair, any multi-node
instance), a host of several servers (sglang_replicas: its replicas share the install and the weights, so they move
together), or, behind a PD router, a prefill instance with the decode instance it is paired with. PD pairs are
formed per router: its prefill heads and its decode heads, each sorted, the i-th of one with the i-th of the other
(the router mixes any prefill with any decode, so moving them two by two keeps one old and one new pair serving
while a pair is out); what is left over joins the router's last pair (a PD worker alone cannot be
measured). Units never split across a canary, a wave or a rollback.

A *pool* is the set of units one router sends traffic to. Every unit in a wave is taken out of its pools while it
moves, so a wave must leave every pool at least one unit that serves: the planner splits a wave that would empty a
pool, and flags the one case it cannot avoid (a pool of a single unit) as an outage the operator must allow.
"""
from __future__ import annotations

from typing import Any, Iterable

Plans = dict[str, dict[str, Any]]
Unit = dict[str, Any]


class WavePlanError(ValueError):
    """A canary or wave setting that cannot be met (the message names the variable and what would work)."""


def instances(plans: Plans) -> dict[str, list[str]]:
    """Every serving instance, by its head host: the members (rank order)."""
    out: dict[str, list[str]] = {}
    for host, plan in sorted(plans.items()):
        if plan.get("role") == "server":
            out.setdefault(str(plan["head"]), list(plan["members"]))
    return out


def pd_pairs(plans: Plans) -> list[tuple[str, ...]]:
    """(prefill head, decode head) pairs, per PD router: i-th sorted prefill with i-th sorted decode. A head already
    paired by an earlier router (sorted by name) keeps that pair. The router's heads left over (more prefill than
    decode, or the other way) join its last pair: a PD worker alone cannot be measured (a prefill answers nothing
    without a decode), so it moves, and is rolled back, with a pair it can serve with."""
    paired: set[str] = set()
    out: list[tuple[str, ...]] = []
    for _router, plan in sorted(plans.items()):
        if plan.get("role") != "router" or plan.get("mode") != "pd":
            continue
        heads = [h for h in plan.get("worker_hosts") or [] if h not in paired]
        prefill = sorted(h for h in heads if plans[h]["recipe"].get("pd_role") == "prefill")
        decode = sorted(h for h in heads if plans[h]["recipe"].get("pd_role") == "decode")
        pairs: list[tuple[str, ...]] = list(zip(prefill, decode))
        left = prefill[len(pairs):] + decode[len(pairs):]
        if pairs and left:
            pairs[-1] = pairs[-1] + tuple(left)
        elif left:  # this router's other workers were paired by an earlier router: join the last such pair
            mine = set(plan.get("worker_hosts") or [])
            at = max((i for i, group in enumerate(out) if mine & set(group)), default=None)
            if at is not None:
                out[at] = out[at] + tuple(left)
                paired.update(left)
        for group in pairs:
            out.append(group)
            paired.update(group)
    return out


def _instance(plan: dict[str, Any]) -> str:
    """The instance a head's plan names; a host of several servers (sglang_replicas) by the name its replicas share:
    its replicas move together (one install, one weights folder, one server role run)."""
    return str(plan.get("replica_of") or plan["instance"])


def _rack(plans: Plans, host: str) -> str:
    return str(plans[host].get("rack") or "")


def movable_units(plans: Plans) -> list[Unit]:
    """Every unit of the site (servers only; routers move on their own after the servers), sorted by (rack, id).

    id: '<instance>@<head>', and '<prefill id>+<decode id>' for a PD pair."""
    heads = instances(plans)
    pairs = pd_pairs(plans)
    in_pair = {h for pair in pairs for h in pair}
    groups: list[list[str]] = [list(pair) for pair in pairs] + [[h] for h in sorted(heads) if h not in in_pair]
    routers_of: dict[str, list[str]] = {}
    for router, plan in sorted(plans.items()):
        if plan.get("role") == "router":
            for head in plan.get("worker_hosts") or []:
                routers_of.setdefault(head, []).append(router)
    units = []
    for group in groups:
        members = [m for head in group for m in heads[head]]
        ids = [f"{_instance(plans[h])}@{h}" for h in group]
        units.append({
            "id": "+".join(ids),
            "heads": list(group),
            "instances": [_instance(plans[h]) for h in group],
            "hosts": members,
            "rack": _rack(plans, group[0]),
            "racks": sorted({_rack(plans, m) for m in members}),
            "routers": sorted({r for h in group for r in routers_of.get(h, [])}),
            "pd": bool(plans[group[0]]["recipe"].get("pd_role")),
        })
    return sorted(units, key=lambda u: (u["rack"], u["id"]))


def changed_units(units: list[Unit], changed_hosts: Iterable[str]) -> list[Unit]:
    """The units any of whose hosts changes (a unit moves whole even when one member alone changes)."""
    changed = set(changed_hosts)
    return [u for u in units if changed & set(u["hosts"])]


def pools(units: list[Unit]) -> dict[str, list[str]]:
    """Each router's pool: the ids of the units it sends traffic to."""
    out: dict[str, list[str]] = {}
    for unit in units:
        for router in unit["routers"]:
            out.setdefault(router, []).append(unit["id"])
    return out


def choose_canary(units: list[Unit], candidates: list[Unit], wanted: str = "") -> Unit:
    """The canary among the changed units (`candidates`): the one `wanted` names (a unit id, an instance's head or
    any member host), else the first, by (rack, id), whose routers keep another unit serving while it is out."""
    if not candidates:
        raise WavePlanError("upgrade_canary: nothing changes, so there is no canary to choose")
    if wanted:
        for unit in candidates:
            if wanted == unit["id"] or wanted in unit["hosts"]:
                return unit
        known = [u for u in units if wanted == u["id"] or wanted in u["hosts"]]
        why = "it does not change with this target" if known else "it is not a server host or unit of this site"
        raise WavePlanError(f"upgrade_canary: {wanted!r} cannot be the canary: {why}; choose one of "
                            f"{', '.join(u['id'] for u in candidates)} (a unit id or any of its hosts)")
    sizes = {router: len(ids) for router, ids in pools(units).items()}
    for unit in candidates:
        if all(sizes[r] > 1 for r in unit["routers"]):
            return unit
    return candidates[0]


def outage_of(wave: list[Unit], all_pools: dict[str, list[str]]) -> list[str]:
    """The routers a wave leaves without a serving unit (every unit of their pool is in the wave)."""
    ids = {u["id"] for u in wave}
    return sorted(r for r, pool in all_pools.items() if set(pool) <= ids and any(r in u["routers"] for u in wave))


def plan_waves(units: list[Unit], rest: list[Unit], by: str = "batch", batch_size: int = 1) -> list[dict[str, Any]]:
    """The waves after the canary: `rest` (changed units but the canary, in (rack, id) order) grouped per rack
    (`by: rack`) or `batch_size` units at a time (`by: batch`). A wave that would take every unit of a router's pool
    out at once is split: the units that empty it move to a wave of their own right after. A pool of one unit cannot
    be kept serving: its wave lists the router under `outage`.

    Each wave: {units: [id], hosts: [host], racks: [rack], outage: [router]}."""
    if by not in ("rack", "batch"):
        raise WavePlanError(f"upgrade_wave_by: {by!r} is not one of rack, batch")
    if by == "batch" and (not isinstance(batch_size, int) or batch_size < 1):
        raise WavePlanError(f"upgrade_batch_size: {batch_size!r} must be a whole number of units, 1 or more")
    all_pools = pools(units)
    groups: list[list[Unit]] = []
    if by == "rack":
        for unit in rest:
            if groups and groups[-1][0]["rack"] == unit["rack"]:
                groups[-1].append(unit)
            else:
                groups.append([unit])
    else:
        groups = [rest[i:i + batch_size] for i in range(0, len(rest), batch_size)]
    waves: list[list[Unit]] = []
    for group in groups:
        waves.extend(_keep_pools_serving(group, all_pools))
    return [{"units": [u["id"] for u in w], "hosts": [h for u in w for h in u["hosts"]],
             "racks": sorted({r for u in w for r in u["racks"]}), "outage": outage_of(w, all_pools)} for w in waves]


def _keep_pools_serving(group: list[Unit], all_pools: dict[str, list[str]]) -> list[list[Unit]]:
    """Split a group so that no part holds every unit of a pool of two or more."""
    parts: list[list[Unit]] = []
    pending = list(group)
    while pending:
        part: list[Unit] = []
        held: list[Unit] = []
        for unit in pending:
            trial = part + [unit]
            emptied = [r for r in outage_of(trial, all_pools) if len(all_pools[r]) > 1]
            if emptied:
                held.append(unit)
            else:
                part = trial
        if not part:  # cannot happen for pools of two or more; a guard against looping forever
            part, held = held[:1], held[1:]
        parts.append(part)
        pending = held
    return parts


def serial(waves: list[dict[str, Any]]) -> list[int]:
    """Ansible's `serial` for a play whose hosts are the waves' hosts in order: one batch per wave."""
    return [len(w["hosts"]) for w in waves]


def host_order(waves: list[dict[str, Any]]) -> list[str]:
    return [h for w in waves for h in w["hosts"]]
