# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.rocm_table: a thin plugin over plugins/plugin_utils/drivers/rocm.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: rocm_table
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The ROCm package names, holds and the userspace pins of a release
description:
  - Used by the rocm_driver role; logic in plugins/plugin_utils/drivers/rocm.py, data in data/amd/packages.yml.
positional: _input, fmt
options:
  _input:
    description: The ROCm release.
    type: str
    required: true
  fmt:
    description: apt or dnf.
    type: str
    default: apt
"""

EXAMPLES = r"""
- name: The ROCm package names and the userspace pins of 7.2.0
  ansible.builtin.debug:
    msg: "{{ '7.2.0' | metalserve.sglang.rocm_table }}"
"""

RETURN = r"""
_value:
  description: kernel, userspace, held, pins (e.g. rocm=7.2.4.*), and the rest of data/amd/packages.yml.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def rocm_table(release: str, fmt: str = "apt") -> dict[str, Any]:
    """The package names of data/amd/packages.yml and the userspace pins for a release."""
    return dict(rp.packages(), pins=rp.userspace_pins(release, fmt))


class FilterModule:
    """The filter metalserve.sglang.rocm_table."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"rocm_table": wrap(rocm_table)}
