# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.preflight action plugin (it runs on the controller)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: preflight
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Refuse recipes the hardware cannot hold, for every host at once
description:
  - Checks each planned server against the facts gathered on it (M(metalserve.sglang.gpu_facts),
    M(metalserve.sglang.fabric_facts), mounts and the weights path) and, for multi-node instances, against its
    members. GPU model and count, GPU memory for the checkpoint, free disk, MIG, open kernel modules on Blackwell,
    NVLink fabric registration and Fabric Manager, Secure Boot, head address resolution and ACTIVE RDMA ports.
  - Fails with one message listing every problem of every host, the fix for each, and the recipes each node can
    run instead. Warnings do not fail.
  - Run it once (run_once) after the facts were gathered on all hosts.
options:
  plans:
    description: The C(plans) of M(metalserve.sglang.plan).
    type: dict
    required: true
  plan_errors:
    description: The C(errors) of M(metalserve.sglang.plan) (hosts whose inventory describes no recipe).
    type: dict
  vram_headroom:
    description: Fraction of GPU memory kept free beyond the checkpoint size (KV cache, activations).
    type: float
    default: 0.10
  disk_headroom:
    description: Fraction of free disk wanted beyond the checkpoint size.
    type: float
    default: 0.05
  require_rdma:
    description: Fail multi-node and PD hosts without an ACTIVE IB/RoCE port (else only warn).
    type: bool
    default: true
  fail:
    description: Fail the task on problems (false only reports them).
    type: bool
    default: true
  only_with_facts:
    description: Check only the hosts whose GPU facts are known (render.yml uses cached facts this way).
    type: bool
    default: false
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
notes:
  - It reads facts already gathered.
"""

EXAMPLES = r"""
- name: Check the site
  metalserve.sglang.preflight:
    plans: "{{ site_plan.plans }}"
    plan_errors: "{{ site_plan.errors }}"
  run_once: true
"""

RETURN = r"""
report:
  description: Per host, ok, problems, warnings, alternatives (recipes the node can run) and summary.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"plans": {"type": "dict", "required": True},
                 "plan_errors": {"type": "dict"},
                 "vram_headroom": {"type": "float", "default": 0.10},
                 "disk_headroom": {"type": "float", "default": 0.05},
                 "require_rdma": {"type": "bool", "default": True},
                 "fail": {"type": "bool", "default": True},
                 "only_with_facts": {"type": "bool", "default": False}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.preflight runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
