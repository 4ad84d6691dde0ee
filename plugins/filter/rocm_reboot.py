# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.rocm_reboot: a thin plugin over plugins/plugin_utils/drivers/rocm.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: rocm_reboot
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Whether an AMD node reboots, refuses or skips after amdgpu or the kernel command line changed
description:
  - Used by the rocm_driver role; the logic is in plugins/plugin_utils/drivers/rocm.py and reboot.py.
  - A reboot is needed when amdgpu-dkms changed in this run and the loaded module's srcversion differs from the
    module on disk, or when the running kernel lacks a setting of rocm_driver_kernel_args.
positional: _input, on_disk, changed, cmdline, kernel_args, allow, container, control_node
options:
  _input:
    description: srcversion of the loaded amdgpu module (empty when none is loaded).
    type: str
    required: true
  on_disk:
    description: srcversion of the amdgpu module modprobe would load.
    type: str
    required: true
  changed:
    description: Whether amdgpu-dkms changed in this run.
    type: bool
    required: true
  cmdline:
    description: /proc/cmdline.
    type: str
    required: true
  kernel_args:
    description: rocm_driver_kernel_args.
    type: list
    elements: str
    required: true
  allow:
    description: rocm_driver_allow_reboot.
    type: bool
    required: true
extends_documentation_fragment:
  - metalserve.sglang.reboot
"""

EXAMPLES = r"""
- name: Decide about a reboot after amdgpu-dkms changed
  ansible.builtin.debug:
    msg: >-
      {{ 'A1B2C3' | metalserve.sglang.rocm_reboot('D4E5F6', true, 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt',
         ['iommu=pt'], false, false, false) }}
"""

RETURN = r"""
_value:
  description: needed, action (none, skip, refuse, reboot), msg.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def rocm_reboot(loaded: str, on_disk: str, changed: bool, cmdline: str, kernel_args: list[str], allow: bool,
                container: bool, control_node: bool) -> dict[str, Any]:
    return rp.reboot(loaded=loaded or None, on_disk=on_disk or None, changed=bool(changed), cmdline=cmdline or "",
                     kernel_args=list(kernel_args or []), allow=bool(allow), container=bool(container),
                     control_node=bool(control_node))


class FilterModule:
    """The filter metalserve.sglang.rocm_reboot."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"rocm_reboot": wrap(rocm_reboot)}
