# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade's memory on the controller: rendered/upgrade/state.json. Pure functions over the state dict, plus
load() and save() (atomic).

    target        digest of the target's files (change.target_digest): the same target resumes, another starts anew
    status        in_progress | rolled_back | committed
    running       {host: inputs the node runs} (secrets masked): the running plan of the next run is made from these
    target_inputs {host: inputs of the target}
    canary, waves the unit ids, in order
    units         {id: {hosts, heads, wave, phase, before, after, verify_before, verify_after, verdict, rollback...}}
    routers       {host: {phase, ...}}
    events        [{at, unit, event, note}]

A unit's phase moves pending -> out -> measured -> upgrading -> upgraded -> judged -> promoted, or to rolled_back from
any of them. A promoted unit's hosts run the target: their `running` inputs become the target's, so an interrupted
upgrade resumes with them counted as moved.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import atomic

PHASES = ("pending", "out", "measured", "upgrading", "upgraded", "judged", "promoted", "rolled_back")
#: what a run keeps of each bench_serving run (the raw lines stay in rendered/upgrade/<unit>/<side>.jsonl)
RUN_KEYS = ("max_concurrency", "prompts", "completed", "duration", "total_throughput", "output_throughput",
            "request_throughput", "mean_ttft_ms", "median_ttft_ms", "median_itl_ms", "mean_itl_ms", "median_tpot_ms")


def load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def save(path: Path, state: dict[str, Any]) -> bool:
    """Write atomically; False when the file already holds this state."""
    return atomic.write_text(path, json.dumps(state, indent=1, sort_keys=True) + "\n", 0o600)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new(target: str, running: dict[str, dict[str, Any]], target_inputs: dict[str, dict[str, Any]],
        units: list[dict[str, Any]], canary: str, waves: list[dict[str, Any]], routers: list[str],
        settings: dict[str, Any]) -> dict[str, Any]:
    """A fresh upgrade: every moving unit and router pending."""
    wave_of = {uid: i + 1 for i, w in enumerate(waves) for uid in w["units"]}
    wave_of[canary] = 0
    return {
        "version": 1, "target": target, "status": "in_progress", "started": now(), "updated": now(),
        "running": running, "target_inputs": target_inputs, "canary": canary,
        "waves": [w["units"] for w in waves], "settings": settings,
        "units": {u["id"]: {"hosts": u["hosts"], "heads": u["heads"], "instances": u["instances"], "rack": u["rack"],
                            "routers": u["routers"], "wave": wave_of[u["id"]], "phase": "pending"}
                  for u in units if u["id"] in wave_of},
        "routers": {r: {"phase": "pending"} for r in routers},
        "events": [],
    }


def event(state: dict[str, Any], unit: str, what: str, note: str = "") -> None:
    state["events"].append({"at": now(), "unit": unit, "event": what, **({"note": note} if note else {})})
    state["updated"] = now()


def set_phase(state: dict[str, Any], unit: str, phase: str, note: str = "") -> None:
    if phase not in PHASES:
        raise ValueError(f"phase {phase!r} is not one of {', '.join(PHASES)}")
    entry = state["units"].get(unit) if unit in state["units"] else state["routers"].get(unit)
    if entry is None:
        raise KeyError(f"{unit} is not a unit or router of this upgrade")
    entry["phase"] = phase
    if phase == "promoted":
        hosts = entry.get("hosts") or [unit]
        for host in hosts:
            state["running"][host] = state["target_inputs"][host]
    if phase == "rolled_back":
        state["status"] = "rolled_back"
    event(state, unit, phase, note)


def keep_runs(runs: list[dict[str, Any]], prompts: dict[int, int]) -> list[dict[str, Any]]:
    """bench_serving runs as the state keeps them, each with the prompt count it was given."""
    out = []
    for run in runs:
        kept = {k: run[k] for k in RUN_KEYS if k in run and k != "prompts"}
        kept["prompts"] = int(prompts.get(int(run.get("max_concurrency") or 0), run.get("completed", 0)))
        out.append(kept)
    return out


def pending_units(state: dict[str, Any]) -> list[str]:
    return [uid for uid, u in state["units"].items() if u["phase"] != "promoted"]


def done(state: dict[str, Any]) -> bool:
    return not pending_units(state) and all(r["phase"] == "promoted" for r in state["routers"].values())


def commit(state: dict[str, Any]) -> None:
    state["status"] = "committed"
    state["running"] = dict(state["target_inputs"])
    event(state, "-", "committed")
