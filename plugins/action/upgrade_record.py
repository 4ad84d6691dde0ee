# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.upgrade_record: a step of playbooks/upgrade.yml into rendered/upgrade/state.json,
the verdict of a unit (plugins/plugin_utils/upgrade/compare.py) and REPORT.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.upgrade_record import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import compare, report
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import state as st

PLOTTED = ("judged", "rolled_back", "committed", "report")


def verify_failures(rows: list[dict[str, Any]]) -> list[str]:
    return [f"verify {r.get('check')}: {r.get('problem')}" for r in rows if not r.get("ok")]


def judged(state: dict[str, Any], unit: str, settings: dict[str, Any]) -> dict[str, Any]:
    entry = state["units"][unit]
    canary = state["units"].get(state.get("canary") or "") or {}
    min_runs = int(settings.get("min_runs", 3))
    borrowed = compare.noise_of(canary.get("before") or []) if min_runs < 2 and unit != state.get("canary") else None
    verdict = compare.judge(entry.get("before") or [], entry.get("after") or [], settings.get("thresholds") or {},
                            min_runs, int(settings.get("min_requests", 20)), float(settings.get("max_noise", 0.2)),
                            borrowed)
    checks = verify_failures(entry.get("verify_after") or [])
    if checks:
        verdict = {**verdict, "ok": False, "summary": "; ".join(checks + ([] if verdict["ok"] else [verdict["summary"]]))}
    return verdict


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars or {})
        p = validated(self, ARGUMENT_SPEC)
        dest = Path(p["dest"])
        state = st.load(dest / "state.json")
        if state is None:
            return {**result, "failed": True, "changed": False,
                    "msg": f"{dest / 'state.json'} does not exist: upgrade_plan starts an upgrade first"}
        unit, event = p["unit"], p["event"]
        known = unit in state["units"] or unit in state["routers"]
        if event in ("phase", "measured", "judged", "promoted", "rolled_back") and not known:
            return {**result, "failed": True, "changed": False,
                    "msg": f"{unit!r} is not a unit or router of the open upgrade ({', '.join(state['units'])})"}
        entry = state["units"].get(unit) or state["routers"].get(unit) or {}
        entry.update(p["data"])
        out: dict[str, Any] = {}
        if event == "phase":
            st.set_phase(state, unit, p["phase"], p["note"])
        elif event == "measured":
            try:
                runs = bench.parse_results(Path(p["runs_file"]).read_text(encoding="utf-8")) if p["runs_file"] else []
            except (OSError, ValueError) as exc:
                return {**result, "failed": True, "changed": False, "msg": f"{p['runs_file']}: {exc}"}
            prompts = {int(k): int(v) for k, v in p["prompts"].items()}
            entry[p["side"]] = st.keep_runs(runs, prompts)
            entry[f"verify_{p['side']}"] = p["verify"]
            st.set_phase(state, unit, "measured" if p["side"] == "before" else entry.get("phase", "upgraded"),
                         f"{len(runs)} run(s) {p['side']}")
        elif event == "judged":
            entry["verdict"] = out["verdict"] = judged(state, unit, p["judge"])
            st.set_phase(state, unit, "judged", out["verdict"]["summary"])
        elif event in ("promoted", "rolled_back"):
            st.set_phase(state, unit, event, p["note"])
        elif event == "committed":
            st.commit(state)
        if p["note"] and event == "report":
            state["note"] = p["note"]
        text = report.markdown(state)
        if not self._task.check_mode:
            st.save(dest / "state.json", state)
            (dest / "REPORT.md").write_text(text, encoding="utf-8")
            if event in PLOTTED:
                report.plot(state, dest / "report.png")
        return {**result, "changed": False, "status": state["status"], "report": str(dest / "REPORT.md"),
                "pending": st.pending_units(state),
                "routers_pending": sorted(r for r, e in state["routers"].items() if e["phase"] != "promoted"),
                "state": json.loads(json.dumps({k: state[k] for k in ("status", "target", "canary")})), **out}
