# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.rocm_remove_first: a thin plugin over plugins/plugin_utils/drivers/rocm.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: rocm_remove_first
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: What to remove before another ROCm release is installed
description:
  - Used by the rocm_driver role; logic in plugins/plugin_utils/drivers/rocm.py, data in data/amd/packages.yml.
  - rocm-core (it takes the ROCm userspace with it) whenever the release changes, and, when the driver moves from
    the 6.x numbering to 30.x (ROCm 6.4 to 7.x), every installed driver-repository package that carries an epoch
    (apt would keep a 1:6.x package over an epoch-less 30.x one).
positional: _input, target
options:
  _input:
    description: ansible_facts.packages.
    type: dict
    required: true
  target:
    description: The release to install.
    type: str
    required: true
"""

RETURN = r"""
_value:
  description: Package names to remove first (empty when nothing moves).
  type: list
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def rocm_remove_first(installed: dict[str, Any], target: str) -> list[str]:
    """installed: ansible_facts.packages (name -> [{version: ...}])."""
    versions = {name: [str(e.get("version", "")) for e in entries] for name, entries in (installed or {}).items()}
    return rp.remove_first(versions, target)


class FilterModule:
    """The filter metalserve.sglang.rocm_remove_first."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"rocm_remove_first": wrap(rocm_remove_first)}
