# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the rocm_driver role over plugins/plugin_utils/drivers/rocm.py (logic and tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap


def rocm_release(platform: dict[str, Any], distribution: str, version: str, requested: str = "") -> str:
    return rp.choose(platform.get("id", "?"), platform, distribution, version, requested)


def rocm_repositories(release: str, distribution: str, version: str, rocm_url: str = "", amdgpu_url: str = "",
                      graphics_url: str = "") -> dict[str, Any]:
    return rp.repositories(release, distribution, version, rocm_url, amdgpu_url, graphics_url)


def rocm_reboot(loaded: str, on_disk: str, changed: bool, cmdline: str, kernel_args: list[str], allow: bool,
                container: bool, control_node: bool) -> dict[str, Any]:
    return rp.reboot(loaded=loaded or None, on_disk=on_disk or None, changed=bool(changed), cmdline=cmdline or "",
                     kernel_args=list(kernel_args or []), allow=bool(allow), container=bool(container),
                     control_node=bool(control_node))


def rocm_table(release: str, fmt: str = "apt") -> dict[str, Any]:
    """The package names of data/amd/packages.yml and the userspace pins for a release."""
    return dict(rp.packages(), pins=rp.userspace_pins(release, fmt))


def rocm_remove_first(installed: dict[str, Any], target: str) -> list[str]:
    """installed: ansible_facts.packages (name -> [{version: ...}])."""
    versions = {name: [str(e.get("version", "")) for e in entries] for name, entries in (installed or {}).items()}
    return rp.remove_first(versions, target)


class FilterModule:
    """metalserve.sglang ROCm filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {f.__name__: _wrap(f) for f in (rocm_release, rocm_repositories, rocm_reboot, rocm_table,
                                               rocm_remove_first)}
