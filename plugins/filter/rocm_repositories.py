# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.rocm_repositories: a thin plugin over plugins/plugin_utils/drivers/rocm.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: rocm_repositories
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: AMD's rocm, graphics and amdgpu repositories for a release and OS
description:
  - Used by the rocm_driver role; logic in plugins/plugin_utils/drivers/rocm.py, data in data/amd/.
  - Folders as AMD lays them out (X.Y.0 in X.Y; from 7.0 the driver in amdgpu/30.x; graphics/<dir> for 7.x;
    RHEL paths el9 and el/<minor>, refused where AMD publishes no folder for the node's minor).
positional: _input, distribution, version, rocm_url, amdgpu_url, graphics_url
options:
  _input:
    description: ROCm release.
    type: str
    required: true
  distribution:
    description: The node's distribution (ansible_facts.distribution); it picks apt or dnf repositories.
    type: str
    required: true
  version:
    description: Distribution version (ansible_facts.distribution_version; RHEL needs the minor).
    type: str
    required: true
  rocm_url:
    description: Mirror of the ROCm repository ({dir} or {version}, {driver}, {el} are replaced).
    type: str
  amdgpu_url:
    description: Mirror of the amdgpu repository.
    type: str
  graphics_url:
    description: Mirror of the graphics repository.
    type: str
"""

EXAMPLES = r"""
- name: AMD's repositories for ROCm 7.2.0 on Ubuntu 24.04
  ansible.builtin.debug:
    msg: "{{ '7.2.0' | metalserve.sglang.rocm_repositories('Ubuntu', '24.04') }}"
"""

RETURN = r"""
_value:
  description: format (apt or dnf), rocm, graphics (none before 7.0), amdgpu, key_url, dir, driver; apt suite,
    components, architectures, keyring, pin_file, pin; dnf el, priority.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def rocm_repositories(release: str, distribution: str, version: str, rocm_url: str = "", amdgpu_url: str = "",
                      graphics_url: str = "") -> dict[str, Any]:
    return rp.repositories(release, distribution, version, rocm_url, amdgpu_url, graphics_url)


class FilterModule:
    """The filter metalserve.sglang.rocm_repositories."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"rocm_repositories": wrap(rocm_repositories)}
