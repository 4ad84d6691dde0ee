# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.preflight: check every planned host against its gathered facts.

Run once per play after gpu_facts/fabric_facts ran on the hosts. Collects every problem of every host
and fails with one message (each problem with its fix, and the recipes each node could run instead).
"""
from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.preflight import (
    Limits,
    check_host,
    report_text,
)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def _get(view: Any, key: str) -> Any:
    try:
        return to_plain(view[key]) if key in view else None
    except Exception:  # noqa: BLE001 - an undefined or broken var reads as absent
        return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def host_facts(self, hostvars: Any, host: str) -> dict[str, Any]:
        view = hostvars[host]
        facts = _get(view, "ansible_facts") or {}
        weights = _get(view, "preflight_weights") or {}
        return {"gpu": facts.get("metalserve_gpu"), "fabric": facts.get("metalserve_fabric"),
                "mounts": facts.get("mounts"), "weights_path": weights.get("path"),
                "weights_staged": weights.get("staged", False)}

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        plans = to_plain(args.get("plans") or {})
        plan_errors = to_plain(args.get("plan_errors") or {})
        limits = Limits(vram_headroom=float(args.get("vram_headroom", 0.10)),
                        disk_headroom=float(args.get("disk_headroom", 0.05)),
                        require_rdma=bool(args.get("require_rdma", True)))
        hostvars = task_vars["hostvars"]
        servers = {h: p for h, p in plans.items() if p.get("role") == "server"}
        facts = {h: self.host_facts(hostvars, h) for h in hostvars if h in plans or h in
                 {m for p in servers.values() for m in p.get("members", [])}}
        reports = []
        only_with_facts = bool(args.get("only_with_facts", False))
        for host, plan in sorted(servers.items()):
            if only_with_facts and not facts.get(host, {}).get("gpu"):
                continue
            view = hostvars[host]
            try:
                catalog = load_catalog(_get(view, "sglang_recipes"), _get(view, "sglang_gpu_platforms"))
            except RecipeError as exc:
                plan_errors[host] = str(exc)
                continue
            reports.append(check_host(plan, facts, catalog, limits))
        warnings = [f"{r.host}: {w}" for r in reports for w in r.warnings]
        if warnings:
            result["warnings"] = warnings
        result.update(changed=False, report={r.host: r.as_dict() for r in reports}, plan_errors=plan_errors)
        if plan_errors or any(r.problems for r in reports):
            result["msg"] = report_text(reports, plan_errors)
            result["failed"] = bool(args.get("fail", True))
        else:
            result["msg"] = f"preflight: {len(reports)} server(s) can hold their recipes"
        return result
