# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.bench_report action plugin (it runs on the controller, where the
collection's data/ is; the logic is in plugins/plugin_utils/checks/bench.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: bench_report
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Compare sglang.bench_serving results with the cookbook's published numbers for the cell
description:
  - Reads the JSON lines that C(sglang.bench_serving --output-file) appends, matches the cell in
    C(data/models/<model>/cookbook/<revision>/benchmarks.yml) and writes C(<out_dir>/<host>.md) (a table with ratios) and
    C(<out_dir>/<host>.png) (tokens/s per GPU and TPOT against concurrency; only when matplotlib is installed).
  - Published tokens/s per GPU is total (input plus output) throughput over the cell's GPUs, so ours is
    bench_serving's C(total_throughput) divided by the GPUs of the instance.
  - Also writes C(<out_dir>/<host>.json), the run in the form playbooks/size.yml reads (per concurrency the median
    TTFT and TPOT and the tokens/s per GPU, with the cell, the GPUs and the workload), so the site's measured
    points are sized beside the published ones.
  - An action plugin - it runs on the controller and reads files there; in check mode it computes and writes nothing.
options:
  results:
    description: Path of the bench_serving JSON-lines file.
    type: path
    required: true
  host: {description: Host the numbers come from., type: str, required: true}
  model: {description: Model id (its benchmarks.yml is read)., type: str, required: true}
  cell:
    description:
      - The cell, with gpu, quant, strategy and nodes, and cookbook_revision (the upstream revision whose
        published numbers to compare with; unset means the newest shipped).
    type: dict
    required: true
  gpus: {description: GPUs of the instance., type: int, required: true}
  sglang: {description: SGLang release that ran., type: str, default: ""}
  note: {description: A line added under the heading (e.g. that the endpoint was a test double)., type: str, default: ""}
  isl: {description: Input tokens per request of the run (--random-input-len)., type: int}
  osl: {description: Output tokens per request of the run (--random-output-len)., type: int}
  recipes:
    description: The site's sglang_recipes, where the model comes from a site's own folder (its benchmarks.yml).
    type: list
    elements: raw
    default: []
    version_added: 0.3.0
  out_dir: {description: Folder of the report., type: path, required: true}
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Report
  metalserve.sglang.bench_report:
    results: rendered/benchmark/node1.jsonl
    host: node1
    model: glm-5.3
    cell: {gpu: h200, quant: fp8, strategy: balanced, nodes: 1}
    gpus: 8
    out_dir: rendered/benchmark
"""

RETURN = r"""
rows:
  description: Per concurrency, ours and published throughput per GPU, TPOT and TTFT, with ratios.
  returned: always
  type: list
  elements: dict
report:
  description: Path of the Markdown report.
  returned: always
  type: str
plot:
  description: Path of the PNG, or empty when matplotlib is missing (or in check mode).
  returned: always
  type: str
published:
  description: Whether the cookbook publishes numbers for the cell (false leaves the published columns empty).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"results": {"type": "path", "required": True},
                 "host": {"type": "str", "required": True},
                 "model": {"type": "str", "required": True},
                 "cell": {"type": "dict", "required": True},
                 "gpus": {"type": "int", "required": True},
                 "sglang": {"type": "str", "default": ""},
                 "note": {"type": "str", "default": ""},
                 "isl": {"type": "int"},
                 "osl": {"type": "int"},
                 "out_dir": {"type": "path", "required": True},
                 "recipes": {"type": "list", "elements": "raw", "default": []}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.bench_report runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
