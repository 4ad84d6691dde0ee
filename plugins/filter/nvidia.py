# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the nvidia_driver role over plugins/plugin_utils/drivers/nvidia.py (logic and unit tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap


def nvidia_repository(distribution: str, version: str, arch: str, base_url: str = "") -> dict[str, Any]:
    return nv.repository(distribution, version, arch, base_url or None)


def nvidia_packages(platform: dict[str, Any], branch: int, flavor: str, version: str = "",
                    imex: bool | None = None) -> dict[str, Any]:
    kind = nv.flavor(flavor, platform, platform.get("id", "this GPU"))
    return dict(nv.packages(int(branch), kind, platform, version, imex), flavor=kind,
                dnf_module=nv.dnf_module(int(branch), kind))


def nvidia_check_branch(available: list[str], branch: Any, version: str, package: str) -> str:
    return nv.check_branch(branch, version, available, package)


def nvidia_reboot(installed: str, running: str, changed: bool, allow: bool, container: bool,
                  control_node: bool, kernels: list[str] | None = None, running_kernel: str = "") -> dict[str, Any]:
    return nv.reboot(installed=installed or None, running=running or None, changed=bool(changed), allow=bool(allow),
                     container=bool(container), control_node=bool(control_node), kernels=list(kernels or []),
                     running_kernel=str(running_kernel or ""))


class FilterModule:
    """metalserve.sglang NVIDIA driver filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {f.__name__: _wrap(f) for f in (nvidia_repository, nvidia_packages, nvidia_check_branch, nvidia_reboot)}
