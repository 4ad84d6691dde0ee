# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_resolve: a thin plugin over plugins/plugin_utils/drivers/nvidia.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_resolve
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The driver version every pinned package publishes, and the install list pinned as NVIDIA pins it
description:
  - Used by the nvidia_driver role; the logic is in plugins/plugin_utils/drivers/nvidia.py.
  - A requested version (580.95.05, no package revision) must be published for every pinned package; empty takes
    the newest such version of the branch. Refusals list what the repository has for each package.
  - Pins are "<name>=<version>*" (apt) and "<name>-<version>" (dnf), as NVIDIA's own driver container pins them.
positional: _input, packages, branch, version
options:
  _input:
    description: The output of "apt-cache madison <pinned packages>" or "dnf list --showduplicates --available ...".
    type: str
    required: true
  packages:
    description: The node's packages (metalserve.sglang.nvidia_packages).
    type: dict
    required: true
  branch:
    description: The driver branch (nvidia_driver_branch).
    type: raw
    required: true
  version:
    description: The requested driver version (nvidia_driver_version), may be empty.
    type: str
    default: ''
"""

RETURN = r"""
_value:
  description: version (the driver version), install (pins, then the unpinned packages), published (package -> versions),
    version_lock (apt - file and text of NVIDIA's APT version lock at that version).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_resolve(published: str, packages: dict[str, Any], branch: Any, version: str = "") -> dict[str, Any]:
    """The driver version and the install list (pinned names as the vendor pins them, then the unpinned ones)."""
    fmt = packages["format"]
    table = nv.parse_madison(published) if fmt == "apt" else nv.parse_dnf_list(published)
    chosen = nv.resolve(branch, version, table, packages["pinned"], packages["probe"], fmt)
    return {"version": chosen, "install": nv.pins(packages["pinned"], chosen, fmt) + list(packages["unpinned"]),
            "published": table, "version_lock": nv.version_lock(chosen) if fmt == "apt" else None}


class FilterModule:
    """The filter metalserve.sglang.nvidia_resolve."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_resolve": wrap(nvidia_resolve)}
