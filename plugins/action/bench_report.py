# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.bench_report: on the controller, compare bench_serving results with the
cookbook's published numbers (data/models/<model>/cookbook/<revision>/benchmarks.yml) and write the report and plot."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.bench_report import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as br
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing.capacity import measured_run


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars or {})
        p = validated(self, ARGUMENT_SPEC)
        try:
            runs = br.parse_results(Path(p["results"]).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return {**result, "failed": True, "msg": f"{p['results']}: {exc}"}
        if not runs:
            return {**result, "failed": True,
                    "msg": f"{p['results']} holds no bench_serving run (did every request fail? see its log)"}
        gpus = p["gpus"]
        pub = br.published(p["model"], p["cell"], recipes=p["recipes"] or None)
        rows = br.compare(runs, pub["entry"], gpus, pub["doc"].get("workload") or {})
        out = Path(p["out_dir"])
        report, image, data = out / f"{p['host']}.md", out / f"{p['host']}.png", out / f"{p['host']}.json"
        text = br.markdown(p["host"], p["model"], p["cell"], gpus, rows, pub, str(p.get("sglang") or ""),
                           str(p.get("note") or ""))
        # what playbooks/size.yml sizes beside the published numbers (median TTFT/TPOT, tokens/s per GPU)
        shape = [int(p[k]) if p.get(k) not in (None, "") else None for k in ("isl", "osl")]
        points = json.dumps(measured_run(p["host"], p["model"], p["cell"], gpus, runs, str(p.get("sglang") or ""),
                                         *shape), indent=2, sort_keys=True) + "\n"
        changed, plotted = False, ""
        if not self._task.check_mode:
            out.mkdir(parents=True, exist_ok=True)
            changed = not report.exists() or report.read_text(encoding="utf-8") != text
            report.write_text(text, encoding="utf-8")
            data.write_text(points, encoding="utf-8")
            cell = p["cell"]
            if br.plot(rows, f"{p['model']} {cell['gpu']}/{cell['quant']}/{cell['strategy']} on {p['host']}", image):
                plotted = str(image)
        return {**result, "changed": changed, "rows": rows, "report": str(report), "plot": plotted,
                "published": bool(pub["entry"])}
