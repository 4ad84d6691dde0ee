# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.acceptance: judge every node's probe results on the controller.

Run once (run_once) after roles/node_acceptance collected node_acceptance_result on each host. Judges each host
against its platform's data (data/gpus.yml acceptance:) and its own thresholds (_node_acceptance_overrides, which
carry group_vars per rack), judges each multi-node instance's cross-node all-reduce, writes
<report_dir>/<host>.json, ACCEPTANCE.md and acceptance.png, and fails with one message naming every refused host.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.acceptance import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import var_or_none
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def judge(host: str, view: Any, raw: dict[str, Any] | None, plan: dict[str, Any], xids: Any,
          result: dict[str, Any]) -> acceptance.HostReport:
    """One host's report: its probes' result judged against its platform's limits (and the overrides the role
    gave), or refused when the host has no result."""
    overrides = var_or_none(view, "_node_acceptance_overrides") or {}
    try:
        platforms = load_catalog(var_or_none(view, "sglang_recipes"), var_or_none(view, "sglang_gpu_platforms")).gpus
    except RecipeError as exc:
        platforms = load_catalog().gpus
        result.setdefault("warnings", []).append(f"{host}: {exc}")
    recipe = plan.get("recipe") or {}
    if not overrides.get("expected_gpus") and plan.get("role") == "server":
        overrides["expected_gpus"] = recipe.get("gpus_per_node")
    if raw is None:
        report = acceptance.HostReport(host, acceptance.Limits.of(recipe.get("gpu"), platforms, overrides))
        report.refuse("run", "no acceptance result: the host failed or was unreachable earlier in this run",
                      "the play's output for this host, then run playbooks/accept.yml --limit " + host)
        return report
    return acceptance.judge_host(host, raw, platforms, overrides, recipe.get("gpu"), xids, plan=plan)


def write_reports(report_dir: Path, reports: list[acceptance.HostReport], fabric: dict[str, list[str]],
                  raws: dict[str, dict[str, Any]], refused: list[str]) -> list[str]:
    """<host>.json per host, ACCEPTANCE.md and acceptance.png on the controller: the paths written."""
    report_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for report in reports:
        doc = dict(report.as_dict(), verdict="refused" if report.host in refused else "accepted",
                   fabric=fabric.get(report.host, []), raw=raws.get(report.host))
        path = report_dir / f"{report.host}.json"
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        written.append(str(path))
    (report_dir / "ACCEPTANCE.md").write_text(acceptance.table_markdown(reports, fabric), encoding="utf-8")
    written.append(str(report_dir / "ACCEPTANCE.md"))
    if acceptance.plot(reports, report_dir / "acceptance.png"):
        written.append(str(report_dir / "acceptance.png"))
    return written


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        plans, enforce = args["plans"], args["enforce"]
        hosts = [str(h) for h in (args["hosts"] or task_vars.get("ansible_play_hosts_all") or [])]
        hostvars = task_vars["hostvars"]
        xids = acceptance.xid_table()
        reports: list[acceptance.HostReport] = []
        raws: dict[str, dict[str, Any]] = {}
        for host in hosts:
            raw = var_or_none(hostvars[host], "node_acceptance_result")
            if raw is not None:
                raws[host] = raw
            reports.append(judge(host, hostvars[host], raw, plans.get(host) or {}, xids, result))
        fabric = self.judge_fabric(plans, raws, reports, hostvars)
        by_host = {r.host: r for r in reports}
        warnings = [f"{r.host}: {w}" for r in reports for w in r.warnings] + fabric.get("_warnings", [])
        refused = sorted({r.host for r in reports if r.problems} | {h for h in fabric if not h.startswith("_")})
        written = [] if self._task.check_mode else write_reports(Path(args["report_dir"]), reports, fabric, raws, refused)
        result.update(changed=False, refused=refused, written=written,
                      report={h: {k: v for k, v in dict(r.as_dict(), fabric=fabric.get(h, [])).items()
                                  if k not in ("summary", "limits")} for h, r in by_host.items()})
        result["report_text"] = acceptance.report_text(reports, fabric, enforce) if refused else ""
        if refused:
            message = result["report_text"]
            if enforce:
                result.update(failed=True, msg=message)
            else:
                warnings.append(message)
                result["msg"] = f"node acceptance: {len(refused)} host(s) would be refused (warnings only)"
        else:
            result["msg"] = f"node acceptance: {len(reports)} host(s) accepted"
        if warnings:
            result["warnings"] = result.get("warnings", []) + warnings
        return result

    @staticmethod
    def judge_fabric(plans: dict[str, Any], raws: dict[str, dict[str, Any]], reports: list[acceptance.HostReport],
                     hostvars: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"_warnings": []}
        by_host = {r.host: r for r in reports}
        done: set[str] = set()
        for host, plan in sorted(plans.items()):
            members = [str(m) for m in plan.get("members") or []]
            if plan.get("role") != "server" or len(members) < 2 or plan.get("instance") in done or host not in raws:
                continue
            done.add(plan["instance"])
            missing = [m for m in members if m not in raws]
            if missing:
                out["_warnings"].append(f"{plan['instance']}: cross-node all-reduce not judged: member(s) "
                                        f"{', '.join(missing)} not in this run")
                continue
            head = by_host.get(members[0])
            overrides = var_or_none(hostvars[members[0]], "_node_acceptance_overrides") or {}
            judged = acceptance.judge_fabric(plan["instance"], members, raws, overrides.get("fabric_min_fraction"),
                                             head.limits.allreduce_link_gb_s if head else None)
            out["_warnings"] += judged.pop("_warnings")
            for member, problems in judged.items():
                out.setdefault(member, []).extend(problems)
        return out
