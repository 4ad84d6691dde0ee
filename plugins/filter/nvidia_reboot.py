# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_reboot: a thin plugin over plugins/plugin_utils/drivers/nvidia.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_reboot
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Whether a node reboots, refuses or skips after the driver changed
description:
  - Used by the nvidia_driver role; the logic is in plugins/plugin_utils/drivers/nvidia.py, the data in data/nvidia/.
  - A reboot is pending whenever the loaded module is not the installed driver, or when this run's install pulled
    a newer kernel; start_services says whether the driver's services can start now.
positional: _input, running, changed, allow, container, control_node, kernels, running_kernel
options:
  _input:
    description: The installed driver version.
    type: str
    required: true
  running:
    description: The running module's version (empty when none is loaded).
    type: str
    required: true
  changed:
    description: Whether the driver packages changed in this run.
    type: bool
    required: true
  allow:
    description: nvidia_driver_allow_reboot.
    type: bool
    required: true
  kernels:
    description: The installed kernels (vmlinuz-<version> names from /boot); a newer one than the running kernel
      after a change needs a reboot.
    type: list
    elements: str
  running_kernel:
    description: The running kernel (ansible_facts.kernel).
    type: str
extends_documentation_fragment:
  - metalserve.sglang.reboot
"""

EXAMPLES = r"""
- name: Decide about a reboot after the driver changed
  ansible.builtin.debug:
    msg: "{{ '580.95.05' | metalserve.sglang.nvidia_reboot('570.172.08', true, false, false, false) }}"
"""

RETURN = r"""
_value:
  description: needed, action (none, skip, refuse, reboot), msg, start_services.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_reboot(installed: str, running: str, changed: bool, allow: bool, container: bool,
                  control_node: bool, kernels: list[str] | None = None, running_kernel: str = "") -> dict[str, Any]:
    return nv.reboot(installed=installed or None, running=running or None, changed=bool(changed), allow=bool(allow),
                     container=bool(container), control_node=bool(control_node), kernels=list(kernels or []),
                     running_kernel=str(running_kernel or ""))


class FilterModule:
    """The filter metalserve.sglang.nvidia_reboot."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_reboot": wrap(nvidia_reboot)}
