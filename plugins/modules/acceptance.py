# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.acceptance action plugin (it runs on the controller; the logic is in
plugins/plugin_utils/checks/acceptance.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: acceptance
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Judge every node's acceptance probes against its platform's physical limits, in one message
description:
  - Reads C(node_acceptance_result) (what roles/node_acceptance's probes returned, or replayed) and
    C(_node_acceptance_overrides) (the host's thresholds, group_vars per rack included) of every host of the play.
  - Per node, GPU count and model, PCIe generation and width (also under load), ECC mode and uncorrectable errors,
    retired pages and row remapping, clock event (throttle) reasons, power limits, NVLink / xGMI links, Xid events
    since boot (data/xid.yml), the GPU memory pattern test and copy bandwidth, and the intra-node all-reduce bus
    bandwidth against C(allreduce_min_fraction) x C(allreduce_link_gb_s) of data/gpus.yml. Per multi-node instance,
    the cross-node all-reduce (failure, or busbw below the fraction of the fabric ports NCCL uses).
  - Writes C(<report_dir>/<host>.json), C(ACCEPTANCE.md) and C(acceptance.png) (the plot only with matplotlib; nothing
    in check mode) and fails with one message naming every refused host, the measured and expected figures and what
    to check; with C(enforce=false) the same message comes back as a warning.
options:
  plans:
    description: The C(plans) of M(metalserve.sglang.plan).
    type: dict
    required: true
  hosts:
    description: Hosts to judge (default the play's hosts).
    type: list
    elements: str
  report_dir:
    description: Controller folder of the reports.
    type: path
    default: rendered/acceptance
  enforce:
    description: Fail on refusals (false turns them into warnings).
    type: bool
    default: true
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
notes:
  - It reads what the node probes returned (each host's C(node_acceptance_result)).
"""

EXAMPLES = r"""
- name: Judge every node
  metalserve.sglang.acceptance:
    plans: "{{ site.plans }}"
    report_dir: rendered/acceptance
  run_once: true
"""

RETURN = r"""
refused:
  description: Hosts refused (or that would be, with enforce=false).
  returned: always
  type: list
  elements: str
report:
  description: Per host, ok, problems, checks_failed, warnings, limits, summary and fabric problems.
  returned: always
  type: dict
report_text:
  description: The message naming every refused host (empty when all are accepted); with enforce=false it is the
    warning the play shows.
  returned: always
  type: str
written:
  description: Files written on the controller.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"plans": {"type": "dict", "required": True},
                 "hosts": {"type": "list", "elements": "str"},
                 "report_dir": {"type": "path", "default": "rendered/acceptance"},
                 "enforce": {"type": "bool", "default": True}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.acceptance runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
