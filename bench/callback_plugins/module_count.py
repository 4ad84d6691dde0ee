# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/bench.py's callback: how many modules ran on each host (a loop item counts once), excluding the
actions that run on the controller only. Written as JSON to $BENCH_MODULE_COUNT when the play ends."""
from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: module_count
type: aggregate
short_description: Count module executions per host (bench/bench.py)
description:
  - Counts, per host, the task results that ran a module on that host; controller-only actions are left out, and so
    are node_probe answers that ran no module (C(node_reads=0), taken from the run's shared probe).
  - Writes them as JSON to the file named by the BENCH_MODULE_COUNT environment variable.
requirements: [enabled in ANSIBLE_CALLBACKS_ENABLED]
"""

#: actions that never run anything on the host
CONTROLLER_ONLY = {
    "assert", "debug", "fail", "set_fact", "include_tasks", "import_tasks", "include_role", "import_role", "meta",
    "group_by", "add_host", "validate_argument_spec", "check_variables", "include_vars", "set_stats", "pause", "plan", "preflight",
    "render_plan", "acceptance", "bench_report",
}


def short(action: str) -> str:
    return action.rsplit(".", 1)[-1]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "module_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()
        self.by_action: Counter[str] = Counter()

    def _count(self, result: Any) -> None:
        action = short(result._task.action)  # noqa: SLF001 - the callback API hands results this way
        if action in CONTROLLER_ONLY or result._task.delegate_to == "localhost":  # noqa: SLF001
            return
        if result._result.get("node_reads") == 0:  # noqa: SLF001 - node_probe answered without a module run
            return
        host = result._host.get_name()  # noqa: SLF001
        self.counts[host] += 1
        self.by_action[action] += 1

    def v2_runner_on_ok(self, result: Any) -> None:
        if not result._task.loop:  # noqa: SLF001
            self._count(result)

    v2_runner_on_failed = v2_runner_on_ok

    def v2_runner_item_on_ok(self, result: Any) -> None:
        self._count(result)

    v2_runner_item_on_failed = v2_runner_item_on_ok

    def v2_playbook_on_stats(self, stats: Any) -> None:
        path = os.environ.get("BENCH_MODULE_COUNT")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump({"hosts": dict(self.counts), "actions": dict(self.by_action)}, handle)
