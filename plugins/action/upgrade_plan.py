# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.upgrade_plan: one run of playbooks/upgrade.yml, decided on the controller
(plugins/plugin_utils/upgrade/planner.py): the running and target plans, CHANGE.md, the canary, the waves and the
state it starts or resumes."""
from __future__ import annotations

import functools

from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils import atomic
from ansible_collections.metalserve.sglang.plugins.modules.upgrade_plan import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify as verify_checks
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import inventory_vars, placement, replicas
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import change, planner, waves
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import state as st


def _write(path: Path, text: str) -> None:
    atomic.write_text(path, text, 0o644)


def pool_entries(unit: dict[str, Any], plans: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Where each serving instance of a unit sits in each router's pool: the worker URL the router was given
    (placement.worker_url; one per replica of a host with sglang_replicas), its type and the prefill's bootstrap port
    (what POST /workers needs to put it back)."""
    out = []
    for router in unit["routers"]:
        rp = plans[router]
        # the router's API where it binds (its health URL's base: 127.0.0.1 when it binds every address)
        base = str(rp.get("health_url") or f"http://127.0.0.1:{rp['port']}/health").removesuffix("/health")
        for head in unit["heads"]:
            for served in replicas.instances_of(plans[head]):
                url = placement.worker_url(served)
                if url not in rp["workers"]:
                    continue
                role = served["recipe"].get("pd_role") or "regular"
                out.append({"router": router, "router_port": rp["port"], "router_base": base, "url": url,
                            "head": head, "instance": served["instance"], "worker_type": role,
                            "bootstrap_port": served["recipe"].get("bootstrap_port") if role == "prefill" else None})
    return out


def verify_of(unit: dict[str, Any], plans: dict[str, dict[str, Any]], decode: str, pd: bool) -> dict[str, Any]:
    """What verify asks of the unit under one plan (the running one before the move and after a rollback, the target
    after the move), judged as verify.yml judges it: a PD unit as a router of its workers (the routes sglang-router
    lacks not asked), anything else as its (first) server. `skip`: the checks not asked (verify_endpoint.py --skip)."""
    plan = plans[decode]
    if pd:
        target = verify_checks.through_router(unit["id"], None, plan["recipe"].get("served_model_name"), plan["argv"],
                                              plan.get("verify") or {})
    else:
        target = {**verify_checks.targets(plan)[0], "instance": unit["id"]}
    return {**target, "skip": sorted(target.get("not_applicable") or {})}


def measure_target(unit: dict[str, Any], target: dict[str, dict[str, Any]],
                   previous: dict[str, dict[str, Any]], router_port: int = 39100) -> dict[str, Any]:
    """Where and how the unit is measured: on its (decode) head, at the address it binds, with the client of the release it ran
    before (the same bench_serving before and after the upgrade). A PD unit is measured through a router of its own,
    started for the measurement on its first decode head (127.0.0.1:`router_port`, upgrade_measure_router_port),
    with every prefill and decode of the unit behind it. A host
    of several servers (sglang_replicas) is measured on its first replica (they share the cell, the install and the
    weights); the server role waits for every replica's /health when it moves or rolls back. `verify` holds what
    each side is judged by: `before` (also a rollback's proof) under the running plan, `after` under the target's."""
    heads = unit["heads"]
    decode = next((h for h in heads if target[h]["recipe"].get("pd_role") == "decode"), heads[0])
    pd = bool(target[decode]["recipe"].get("pd_role"))
    rec = target[decode]["recipe"]
    before = previous.get(decode) or target[decode]
    argv = target[decode]["argv"]
    local = str(target[decode].get("health_url") or f"http://127.0.0.1:{rec['port']}/health").removesuffix("/health")
    out: dict[str, Any] = {"host": decode, "port": rec["port"], "url": local,
                           "served_model_name": rec.get("served_model_name"),
                           "model_path": argv[argv.index("--model-path") + 1], "argv": argv,
                           "client": {"method": before["install"]["method"], "python": before["install"]["python"],
                                      "image": before["install"].get("image")},
                           "router": None, "gpus": int(rec["gpus_per_node"]) * int(rec["nodes"]),
                           "verify": {"before": verify_of(unit, previous if decode in previous else target, decode, pd),
                                      "after": verify_of(unit, target, decode, pd)}}
    if pd:
        # every prefill and decode of the unit behind it; the measuring head's decode where it answers locally
        spec: dict[str, Any] = {"mode": "pd", "host": "127.0.0.1", "port": router_port, "metrics_port": router_port + 1,
                                "prefill": [], "decode": []}
        for head in heads:
            role = target[head]["recipe"].get("pd_role")
            if role == "prefill":
                spec["prefill"].append({"url": placement.worker_url(target[head]),
                                        "bootstrap_port": target[head]["recipe"].get("bootstrap_port")})
            elif role == "decode":
                spec["decode"].append(local if head == decode else placement.worker_url(target[head]))
        try:
            args = recipe_engine.router_args(spec)  # the one writer of sglang-router command lines
        except RecipeError as exc:
            raise waves.WavePlanError(f"{unit['id']}: cannot be measured through a router of its own: {exc}") from exc
        out["router"] = {"args": args, "port": router_port}
        out["url"] = f"http://127.0.0.1:{router_port}"
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        dest = Path(args["dest"])
        broken: dict[str, list[str]] = {}
        hostvars, groups = inventory_vars.site_inputs(task_vars, broken)
        if broken:
            return {**result, "failed": True, "changed": False,
                    "msg": site_plan.failure_text(broken, len(hostvars))}
        saved = st.load(dest / "state.json")
        options = {k: args[k] for k in ("upgrade_from", "upgrade_from_groups", "canary", "wave_by", "batch_size",
                                        "allow_outage", "retry", "settings")}
        try:
            origins = inventory_vars.variable_origins(task_vars["hostvars"], sorted(hostvars))
            decision = planner.decide(functools.partial(site_plan.plan_site, origins=origins), hostvars, groups,
                                      args["node_units"] or {}, saved, options)
        except (planner.UpgradeRefused, change.ChangeError, waves.WavePlanError) as exc:
            return {**result, "failed": True, "changed": False, "msg": variables.redact(str(exc))}
        _write(dest / "CHANGE.md", planner.change_markdown(decision))
        new_state = decision["state"]
        if new_state is not None and not self._task.check_mode and decision["status"] in ("start", "resume"):
            if decision["status"] == "start":
                st.event(new_state, "-", "started", decision["running_from"])
            st.save(dest / "state.json", new_state)
        target, previous = decision["target"]["plans"], decision["previous"]["plans"]
        by_id = {u["id"]: u for u in decision["units"]}
        moving = [decision["canary"]] if decision["canary"] else []
        moving += [by_id[uid] for w in decision["waves"] for uid in w["units"]]
        units = {}
        for unit in moving:
            kept = (new_state or {}).get("units", {}).get(unit["id"], {})
            try:
                measure = measure_target(unit, target, previous, args["measure_router_port"])
            except waves.WavePlanError as exc:
                return {**result, "failed": True, "changed": False, "msg": str(exc)}
            # taken out of the pools where the routers have it now (the running plan's URLs), put back where the plan
            # it ends on serves (the target's, or the running plan's after a rollback)
            entry = {**unit, "pool": pool_entries(unit, target), "pool_before": pool_entries(unit, previous),
                     "measure": measure,
                     "phase": kept.get("phase", "pending"), "measured_before": bool(kept.get("before")),
                     "image_ids": kept.get("image_ids") or {}, "wave": kept.get("wave", 0)}
            for host in unit["hosts"]:
                units[host] = entry
        summary = {h: [c["name"] for c in items] for h, items in decision["changes"].items()}
        sites = {k: {"plans": decision[k]["plans"], "errors": {}, "monitoring": decision[k].get("monitoring") or {}}
                 for k in ("target", "previous")}
        result.update(
            changed=False, status=decision["status"], target_digest=decision["target_digest"],
            target_site=sites["target"], previous_site=sites["previous"],
            canary_hosts=decision["canary"]["hosts"] if decision["canary"] else [],
            wave_hosts=waves.host_order(decision["waves"]), serial=waves.serial(decision["waves"]) or [1],
            waves=decision["waves"], routers=decision["routers"], units=units, change=summary,
            canary=decision["canary"]["id"] if decision["canary"] else "",
            state_file=str(dest / "state.json"), change_file=str(dest / "CHANGE.md"),
            msg=f"{decision['status']}: {len(summary)} host(s) change; canary "
                f"{decision['canary']['id'] if decision['canary'] else '-'}; {len(decision['waves'])} wave(s); "
                f"{len(decision['routers'])} router(s)")
        if decision["warnings"]:
            result["warnings"] = decision["warnings"]
        return result
