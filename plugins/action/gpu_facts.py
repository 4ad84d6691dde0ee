# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for metalserve.sglang.gpu_facts: hand the module the GPU platform table and the node paths it reads.

The table lives once, in data/gpus.yml (plus the site's sglang_gpu_platforms), the Secure Boot variable in
data/node.yml; the module on the node needs them, and cannot read the collection's data there.
"""
from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.gpu_facts import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog


class ActionModule(ActionBase):
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        if not args["platforms"]:
            extra = task_vars.get("sglang_gpu_platforms")
            extra = to_plain(self._templar.template(extra)) if extra else None
            args["platforms"] = load_catalog(gpu_platforms=extra).gpus
        args["secure_boot_var"] = args["secure_boot_var"] or node.get("kernel.secure_boot")
        result.update(self._execute_module(module_name="metalserve.sglang.gpu_facts", module_args=args,
                                           task_vars=task_vars))
        return result
