# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.weights_wait: wait for a background weight transfer, printing progress.

Every `poll` seconds it asks the node for the job's state (ansible.builtin.async_status) and for how
much of the checkpoint is there (metalserve.sglang.weights_check), and prints one line such as
`h200-a01: zai-org/GLM-5.3 42% (317 of 755 GB)`. Ansible's own until/retries loop cannot show a
changing percentage; this can, from the controller.
"""
from __future__ import annotations

import time
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.metalserve.sglang.plugins.modules.weights_wait import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated

display = Display()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        jid, poll, timeout = args["jid"], args["poll"], args["timeout"]
        label = args["label"] or args["path"]
        check_args = {k: v for k, v in {"path": args["path"], "manifest": args["manifest"]}.items() if v}
        host = task_vars.get("inventory_hostname")
        # what ansible.builtin.async_status's own action adds before it runs the module
        async_dir = self.get_shell_option("async_dir", default="~/.ansible_async")
        deadline = time.monotonic() + timeout
        last = None
        while True:
            job = self._execute_module(module_name="ansible.builtin.async_status",
                                       module_args={"jid": jid, "_async_dir": async_dir}, task_vars=task_vars)
            finished = bool(job.get("finished") or job.get("failed") and not job.get("started"))
            if check_args.get("path"):
                state = self._execute_module(module_name="metalserve.sglang.weights_check", module_args=check_args,
                                             task_vars=task_vars)
                line = self._line(label, state)
                if line != last:
                    display.display(f"{host}: {line}")
                    last = line
            if finished:
                break
            if time.monotonic() > deadline:
                result.update(failed=True, msg=f"{label}: transfer still running after {timeout}s (job {jid})")
                return result
            time.sleep(poll)
        self._execute_module(module_name="ansible.builtin.async_status",
                             module_args={"jid": jid, "mode": "cleanup", "_async_dir": async_dir}, task_vars=task_vars)
        failed = bool(job.get("failed")) or job.get("rc", 0) != 0
        result.update(changed=True, failed=failed, rc=job.get("rc"), cmd=job.get("cmd"),
                      stdout_lines=(job.get("stdout") or "").splitlines()[-20:],
                      stderr_lines=(job.get("stderr") or "").splitlines()[-20:])
        if failed:
            result["msg"] = f"{label}: the transfer failed (rc {job.get('rc')}): " + \
                " | ".join((job.get("stderr") or job.get("msg") or "").strip().splitlines()[-3:])
        return result

    @staticmethod
    def _size(n: float) -> str:
        return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"

    def _line(self, label: str, state: dict[str, Any]) -> str:
        present, expected, percent = state.get("present_bytes") or 0, state.get("expected_bytes"), state.get("percent")
        if expected:
            return f"{label} {percent}% ({self._size(present)} of {self._size(expected)})"
        return f"{label} {self._size(present)} so far" + (" (complete)" if state.get("complete") else "")
