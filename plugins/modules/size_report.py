# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.size_report action plugin (it runs on the controller; the logic is in
plugins/plugin_utils/sizing/capacity.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: size_report
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Write rendered/SIZING.md and its plot from a capacity result
description:
  - Writes C(<dest>/SIZING.md) - per cookbook cell the operating point within the TTFT/TPOT limits, what one
    instance serves, the instances and nodes a target load needs, or why a cell has none - and
    C(<dest>/sizing.png) - TTFT and TPOT against tokens/s per GPU for every cell's published (and measured) points,
    with the limits and each cell's operating point (only when matplotlib is installed).
  - The input is the result of the P(metalserve.sglang.capacity#filter) filter.
  - An action plugin - it runs on the controller and writes there; a file is rewritten only when its content
    changes, and in check mode nothing is written.
options:
  result:
    description: The result of P(metalserve.sglang.capacity#filter).
    type: dict
    required: true
  dest:
    description: Folder the report and the plot go to (e.g. rendered/).
    type: path
    required: true
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Size GLM-5.3 on H200 for 20 requests/s
  metalserve.sglang.size_report:
    result: "{{ {'model': 'glm-5.3', 'gpu': 'h200', 'requests_per_s': 20, 'ttft_ms': 3000} | metalserve.sglang.capacity }}"
    dest: rendered
"""

RETURN = r"""
report:
  description: Path of SIZING.md.
  returned: always
  type: str
plot:
  description: Path of sizing.png, or empty when matplotlib is missing.
  returned: always
  type: str
rows:
  description: The rows of the capacity result (see the capacity filter).
  returned: always
  type: list
  elements: dict
"""


from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"result": {"type": "dict", "required": True},
                 "dest": {"type": "path", "required": True}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.size_report runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
