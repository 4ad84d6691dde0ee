# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.upgrade_record action plugin (it runs on the controller; the logic is in
plugins/plugin_utils/upgrade/)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: upgrade_record
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Record a step of playbooks/upgrade.yml in rendered/upgrade/state.json, judge a unit, write the report
description:
  - C(phase) moves a unit (or a router) to O(phase); C(promoted) also counts its hosts as running the target, so an
    interrupted upgrade resumes past it; C(rolled_back) closes the upgrade as rolled back.
  - C(measured) keeps the sglang.bench_serving runs of O(runs_file) (one JSON object per run) with the prompt count
    each was given (O(prompts)), and the verify checks' rows (O(verify)), as the unit's O(side) measurement.
  - C(judged) compares the unit's measurement after the upgrade with the one before, metric by metric against
    O(judge) (thresholds, runs, requests, noise; a wave measured once per side borrows the canary's noise), fails the
    verdict on any failed verify check, and returns it.
  - C(committed) closes the upgrade; every host counts as running the target.
  - Every event rewrites C(REPORT.md) (and C(report.png) for C(judged), C(rolled_back) and C(committed), when
    matplotlib is installed). Reports changed=false (bookkeeping on the controller). Check mode records nothing.
options:
  dest:
    description: The upgrade's folder on the controller (C(rendered/upgrade)), holding C(state.json).
    type: path
    required: true
  event:
    description: What happened.
    type: str
    required: true
    choices: [phase, measured, judged, promoted, rolled_back, committed, report]
  unit:
    description: The unit id (or router host) it happened to.
    type: str
    default: ""
  phase:
    description: The phase reached, with O(event=phase).
    type: str
    default: ""
  side:
    description: C(before) or C(after), with O(event=measured).
    type: str
    choices: [before, after]
    default: before
  runs_file:
    description: The bench_serving JSON-lines file on the controller, with O(event=measured).
    type: path
  prompts:
    description: The prompts each concurrency was given (concurrency to prompts), with O(event=measured).
    type: dict
    default: {}
  verify:
    description: The verify checks' rows (the P(metalserve.sglang.verify_rows#filter) filter), with O(event=measured).
    type: list
    elements: dict
    default: []
  data:
    description: More facts about the unit to keep (the image ID it ran, seconds a rollback took, why it failed).
    type: dict
    default: {}
  judge:
    description:
      - With O(event=judged), C(thresholds) (per metric C(throughput), C(ttft), C(itl), C(errors)), C(min_runs),
        C(min_requests) and C(max_noise).
    type: dict
    default: {}
  note:
    description: A line kept with the event.
    type: str
    default: ""
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Judge the canary
  metalserve.sglang.upgrade_record:
    dest: rendered/upgrade
    event: judged
    unit: glm-5.3@node1
    judge: {thresholds: {ttft: 0.1}, min_runs: 3, min_requests: 20, max_noise: 0.2}
  register: verdict
"""

RETURN = r"""
verdict:
  description: With O(event=judged), C(ok), C(summary) (the failing metric, concurrency and numbers first) and C(rows).
  returned: when event is judged
  type: dict
status:
  description: The upgrade's status after the event (C(in_progress), C(rolled_back), C(committed)).
  returned: always
  type: str
report:
  description: Path of REPORT.md.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"dest": {"type": "path", "required": True},
                 "event": {"type": "str", "required": True,
                           "choices": ["phase", "measured", "judged", "promoted", "rolled_back", "committed", "report"]},
                 "unit": {"type": "str", "default": ""},
                 "phase": {"type": "str", "default": ""},
                 "side": {"type": "str", "choices": ["before", "after"], "default": "before"},
                 "runs_file": {"type": "path"},
                 "prompts": {"type": "dict", "default": {}},
                 "verify": {"type": "list", "elements": "dict", "default": []},
                 "data": {"type": "dict", "default": {}},
                 "judge": {"type": "dict", "default": {}},
                 "note": {"type": "str", "default": ""}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.upgrade_record runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
