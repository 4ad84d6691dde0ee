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

from ansible_collections.metalserve.sglang.plugins.modules.preflight import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import preflight as checks


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        plans, plan_errors = args["plans"], args["plan_errors"] or {}
        limits = checks.Limits(vram_headroom=args["vram_headroom"], disk_headroom=args["disk_headroom"],
                               require_rdma=args["require_rdma"])
        hostvars = task_vars["hostvars"]
        servers = {h: p for h, p in plans.items() if p.get("role") == "server"}
        wanted = {h for h in hostvars if h in plans or h in {m for p in servers.values() for m in p.get("members", [])}}
        reports, catalog_errors = checks.site_reports(plans, checks.facts_of(hostvars, wanted), checks.catalog_for(hostvars), limits,
                                                      args["only_with_facts"])
        plan_errors.update(catalog_errors)
        warnings = [f"{r.host}: {w}" for r in reports for w in r.warnings]
        if warnings:
            result["warnings"] = warnings
        result.update(changed=False, report={r.host: r.as_dict() for r in reports}, plan_errors=plan_errors)
        if plan_errors or any(r.problems for r in reports):
            result["msg"] = checks.report_text(reports, plan_errors)
            result["failed"] = args["fail"]
        else:
            result["msg"] = f"preflight: {len(reports)} server(s) can hold their recipes"
        return result
