# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_packages: a thin plugin over plugins/plugin_utils/drivers/nvidia.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_packages
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The driver and the Fabric Manager, NSCQ, NVSDM, nvlsm and IMEX packages a node needs
description:
  - Used by the nvidia_driver role; the logic is in plugins/plugin_utils/drivers/nvidia.py, the data in data/nvidia/.
  - Names follow the packaging family (Ubuntu, Debian, RHEL) and the branch (the NVLink-side names lost their branch
    suffix at 580); pinned lists what must equal the driver version, unpinned what NVIDIA installs unpinned (nvlsm).
positional: _input, branch, flavor, distribution, arch, imex
options:
  _input:
    description: The GPU platform entry (metalserve.sglang.gpu_platform).
    type: dict
    required: true
  branch:
    description: Driver branch.
    type: int
    required: true
  flavor:
    description: auto, open or proprietary (proprietary is refused where the GPU needs the open modules).
    type: str
    required: true
  distribution:
    description: ansible_facts.distribution (Ubuntu, Debian, RedHat, Rocky).
    type: str
    required: true
  arch:
    description: ansible_facts.architecture (libnvsdm is x86_64 only).
    type: str
    default: x86_64
  imex:
    description: Override the platform's IMEX need.
    type: bool
"""

EXAMPLES = r"""
- name: The packages of an H200 node on driver branch 580
  ansible.builtin.debug:
    msg: "{{ 'h200' | metalserve.sglang.gpu_platform | metalserve.sglang.nvidia_packages(580, 'auto') }}"

- name: Pinned to one version
  ansible.builtin.debug:
    msg: "{{ ('h200' | metalserve.sglang.gpu_platform | metalserve.sglang.nvidia_packages(580, 'open', '580.95.05-1')).install }}"
"""

RETURN = r"""
_value:
  description: family, format, flavor, driver, probe, pinned, unpinned, fabricmanager, nscq, nvsdm, imex, nvlsm,
    dnf_module, modules_load, units.
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_packages(platform: dict[str, Any], branch: int, flavor: str, distribution: str, arch: str = "x86_64",
                    imex: bool | None = None) -> dict[str, Any]:
    kind = nv.flavor(flavor, platform, platform.get("id", "this GPU"))
    return nv.node_packages(platform, int(branch), kind, distribution, arch, imex)


class FilterModule:
    """The filter metalserve.sglang.nvidia_packages."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_packages": wrap(nvidia_packages)}
