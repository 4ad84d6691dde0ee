# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_repository: a thin plugin over plugins/plugin_utils/drivers/nvidia.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_repository
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The CUDA network repository of a distribution and architecture
description:
  - Used by the nvidia_driver role; the logic is in plugins/plugin_utils/drivers/nvidia.py, the data in data/nvidia/repository.yml.
positional: _input, version, arch, base_url
options:
  _input:
    description: Distribution (Ubuntu, Debian, RedHat, Rocky).
    type: str
    required: true
  version:
    description: Distribution version (24.04, 12, 9).
    type: str
    required: true
  arch:
    description: CPU architecture (x86_64, aarch64).
    type: str
    required: true
  base_url:
    description: A mirror replacing NVIDIA's base URL.
    type: str
"""

EXAMPLES = r"""
- name: NVIDIA's CUDA repository for Ubuntu 24.04 on x86_64
  ansible.builtin.debug:
    msg: "{{ 'Ubuntu' | metalserve.sglang.nvidia_repository('24.04', 'x86_64') }}"

- name: The same from a mirror
  ansible.builtin.debug:
    msg: "{{ 'Ubuntu' | metalserve.sglang.nvidia_repository('24.04', 'x86_64', 'https://mirror.example.com/cuda') }}"
"""

RETURN = r"""
_value:
  description: url, key_url, key_fingerprint, folder, arch (x86_64 or sbsa), format (apt or dnf), family; apt suite,
    keyring, pin_file and pin (NVIDIA's cuda-<distro>.pin); dnf repo_id, priority, versionlock_package.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_repository(distribution: str, version: str, arch: str, base_url: str = "") -> dict[str, Any]:
    return nv.repository(distribution, version, arch, base_url or None)


class FilterModule:
    """The filter metalserve.sglang.nvidia_repository."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_repository": wrap(nvidia_repository)}
