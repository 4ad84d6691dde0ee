# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_lock: a thin plugin over plugins/plugin_utils/drivers/nvidia.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_lock
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The packages to hold, the way NVIDIA locks a driver
description:
  - Used by the nvidia_driver role; the logic is in plugins/plugin_utils/drivers/nvidia.py.
  - The pinned packages plus every installed package of the driver at that version (NVIDIA's version-locking page
    locks "*nvidia*<branch>*"), so nothing of the driver moves under the loaded module.
positional: _input, pinned, version
options:
  _input:
    description: ansible_facts.packages.
    type: dict
    required: true
  pinned:
    description: The pinned package names (nvidia_packages(...).pinned).
    type: list
    elements: str
    required: true
  version:
    description: The driver version.
    type: str
    required: true
"""

RETURN = r"""
_value:
  description: Package names to hold.
  type: list
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_lock(installed: dict[str, Any], pinned: list[str], version: str) -> list[str]:
    """installed: ansible_facts.packages (name -> [{version: ...}])."""
    versions = {name: [str(e.get("version", "")) for e in entries] for name, entries in (installed or {}).items()}
    return nv.lock_set(list(pinned), versions, version)


class FilterModule:
    """The filter metalserve.sglang.nvidia_lock."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_lock": wrap(nvidia_lock)}
