# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.node_probe: the node_state requests of a host's stages (plugin_utils/site/probe.py,
their one home), asked in one module run and cut back into each stage's answer; or one stage's answer, from that
shared answer while it holds, else from its own module run."""
from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.node_probe import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils import warm
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import probe, runtime

#: what site.yml registers the answer of every stage as, and the facts the roles set when they changed the host
SHARED = "metalserve_node"
DIRTY = ("sglang_install_node_dirty", "model_weights_node_dirty", "sglang_server_node_dirty")

# the strategy imports this module in the controller's main process: load the Jinja plugins there (plugin_utils/warm.py)
warm.load()


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        drift = runtime.drift(args["inputs"], [self._seen(task_vars, name) for name in args["inputs"]])
        if drift:
            raise AnsibleActionFail("; ".join(drift))
        secrets = {key: self._secret(task_vars, names) for key, names in probe.SECRET_VARS.items()}
        if args["stage"]:
            request = probe.stage_wants(args["plan"], args["stage"], args["replica"], args["play_hosts"], secrets,
                                        args["router_start"])
            shared = probe.reusable(to_plain(task_vars.get(SHARED)), args["stage"], args["replica"], request,
                                    any(to_plain(task_vars.get(name)) is True for name in DIRTY))
            if shared is not None:
                result.update(changed=False, reused=True, node_reads=0, **shared)
                return self._judged(result, args["stage"], task_vars)
            if not any(request.values()):  # nothing to compare (a stage that does not apply to this host)
                result.update(changed=False, reused=False, node_reads=0, differ=[], state={})
                return self._judged(result, args["stage"], task_vars)
            answer = self._node_state(request, task_vars)
            if answer.get("failed"):
                result.update(answer)
                return result
            result.update(changed=False, reused=False, node_reads=1, differ=answer["differ"],
                          state=probe.public(answer["state"]))
            return self._judged(result, args["stage"], task_vars)
        stages = probe.stages_in_run(args["run_tags"], args["skip_tags"])
        wants = probe.host_wants(args["plan"], args["play_hosts"], secrets, args["router_start"], stages)
        answer = self._node_state(probe.merge(wants), task_vars)
        result.update(answer if answer.get("failed") else {"changed": False, "node_reads": 1,
                                                           "stages": probe.split(wants, answer)})
        return result

    def _judged(self, result: dict[str, Any], stage: str, task_vars: dict[str, Any]) -> dict[str, Any]:
        """A server's answer says whether this member changed (probe.server_changed: the instance's members read each
        other's to restart together); the image it compares with is the install stage's (sglang_install_info)."""
        if stage == "server":
            info = to_plain(self._templar.template(task_vars.get("sglang_install_info") or {})) or {}
            result["member_changed"] = probe.server_changed(result["differ"], result["state"],
                                                            info.get("image_id") if isinstance(info, dict) else None)
        return result

    def _seen(self, task_vars: dict[str, Any], name: str) -> Any:
        """A variable as this play gives it to the role (rendered), or None where it is not set here."""
        return to_plain(self._templar.template(task_vars[name])) if name in task_vars else None

    def _secret(self, task_vars: dict[str, Any], names: tuple[str, ...]) -> Any:
        """The first of `names` this play defines, rendered (a role default is a template), else '': what the role
        sees - its own variable whenever it is set (even empty), else the site-wide one its default falls back to.
        Kept as its type: the role writes an API key given as a number as YAML writes a number."""
        for name in names:
            if name in task_vars:
                value = to_plain(self._templar.template(task_vars[name]))
                return "" if value is None else value
        return ""

    def _node_state(self, request: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """node_state's answer to `request`, the module run with no_log (the request holds digests of files with
        secrets: not logged on the node) and without its invocation (not shown here, even on a failure at -vvv).
        The task itself is not no_log: what it returns has no digest."""
        no_log, self._task.no_log = self._task.no_log, True
        try:
            answer = self._execute_module(module_name="metalserve.sglang.node_state", module_args=request,
                                          task_vars=task_vars)
        finally:
            self._task.no_log = no_log
        answer.pop("invocation", None)
        return answer
