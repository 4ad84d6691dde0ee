# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.weights_wait action plugin."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: weights_wait
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Wait for a background weight transfer and print its progress
description:
  - Polls the async job O(jid) and, with O(path), how much of the checkpoint is present
    (M(metalserve.sglang.weights_check)), printing a progress line such as C(node0 - repo 42% (317.0 of 755.0 GB))
    whenever the figure moves. Fails when the job fails or O(timeout) passes.
options:
  jid:
    description: The C(ansible_job_id) of the transfer started with C(async) and C(poll=0).
    type: str
    required: true
  path:
    description: Checkpoint directory being filled.
    type: path
  manifest:
    description: Expected files (name to size, sha256) for the percentage.
    type: dict
  label:
    description: What the progress lines call the transfer.
    type: str
  poll:
    description: Seconds between polls.
    type: int
    default: 15
  timeout:
    description: Seconds before giving up.
    type: int
    default: 21600
extends_documentation_fragment:
  - metalserve.sglang.attributes.node_action
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode: {support: none}
  diff_mode: {support: none}
"""

EXAMPLES = r"""
- name: Wait for the download
  metalserve.sglang.weights_wait:
    jid: "{{ download.ansible_job_id }}"
    path: /var/lib/sglang/models/zai-org/GLM-5.3
    label: zai-org/GLM-5.3
"""

RETURN = r"""
rc:
  description: Exit status of the transfer.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


# The task's arguments: the action plugin checks them against this spec (plugin_utils/action_args.py)
ARGUMENT_SPEC = {"jid": {"type": "str", "required": True},
                 "path": {"type": "path"},
                 "manifest": {"type": "dict"},
                 "label": {"type": "str"},
                 "poll": {"type": "int", "default": 15},
                 "timeout": {"type": "int", "default": 21600}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC).fail_json(msg="metalserve.sglang.weights_wait runs as an action plugin")


if __name__ == "__main__":
    main()
