# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.size_report: on the controller, write rendered/SIZING.md and rendered/sizing.png
from a metalserve.sglang.capacity result (logic in plugins/plugin_utils/sizing/capacity.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.size_report import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import capacity as sizing


def _differs(path: Path, data: bytes) -> bool:
    return not path.is_file() or path.read_bytes() != data


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars or {})
        args = validated(self, ARGUMENT_SPEC)
        sizing_result, dest = args["result"], args["dest"]
        if "rows" not in sizing_result:
            return {**result, "failed": True,
                    "msg": "size_report: result must be the output of metalserve.sglang.capacity (it has no rows)"}
        out = Path(str(dest))
        report, image = out / "SIZING.md", out / "sizing.png"
        text = sizing.markdown(sizing_result).encode("utf-8")
        png = sizing.plot_png(sizing_result)
        changed = _differs(report, text) or (png is not None and _differs(image, png))
        if changed and not self._task.check_mode:
            out.mkdir(parents=True, exist_ok=True)
            report.write_bytes(text)
            if png is not None:
                image.write_bytes(png)
        return {**result, "changed": changed, "report": str(report), "plot": str(image) if png is not None else "",
                "rows": sizing_result["rows"]}
