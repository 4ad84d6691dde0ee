# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the nvidia_driver role over plugins/plugin_utils/drivers/{nvidia,imex}.py (logic and unit tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import imex as im
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap


def nvidia_repository(distribution: str, version: str, arch: str, base_url: str = "") -> dict[str, Any]:
    return nv.repository(distribution, version, arch, base_url or None)


def nvidia_packages(platform: dict[str, Any], branch: int, flavor: str, distribution: str, arch: str = "x86_64",
                    imex: bool | None = None) -> dict[str, Any]:
    kind = nv.flavor(flavor, platform, platform.get("id", "this GPU"))
    return nv.node_packages(platform, int(branch), kind, distribution, arch, imex)


def nvidia_resolve(published: str, packages: dict[str, Any], branch: Any, version: str = "") -> dict[str, Any]:
    """The driver version and the install list (pinned names as the vendor pins them, then the unpinned ones)."""
    fmt = packages["format"]
    table = nv.parse_madison(published) if fmt == "apt" else nv.parse_dnf_list(published)
    chosen = nv.resolve(branch, version, table, packages["pinned"], packages["probe"], fmt)
    return {"version": chosen, "install": nv.pins(packages["pinned"], chosen, fmt) + list(packages["unpinned"]),
            "published": table, "version_lock": nv.version_lock(chosen) if fmt == "apt" else None}


def nvidia_lock(installed: dict[str, Any], pinned: list[str], version: str) -> list[str]:
    """installed: ansible_facts.packages (name -> [{version: ...}])."""
    versions = {name: [str(e.get("version", "")) for e in entries] for name, entries in (installed or {}).items()}
    return nv.lock_set(list(pinned), versions, version)


def nvidia_reboot(installed: str, running: str, changed: bool, allow: bool, container: bool,
                  control_node: bool, kernels: list[str] | None = None, running_kernel: str = "") -> dict[str, Any]:
    return nv.reboot(installed=installed or None, running=running or None, changed=bool(changed), allow=bool(allow),
                     container=bool(container), control_node=bool(control_node), kernels=list(kernels or []),
                     running_kernel=str(running_kernel or ""))


def nvidia_imex_ports(config: str) -> list[int]:
    """The TCP ports an IMEX daemon uses, from its config.cfg text."""
    return im.ports(config or "")


def nvidia_imex_channel_major(proc_devices: str) -> int | None:
    return im.channel_major(proc_devices or "")


class FilterModule:
    """metalserve.sglang NVIDIA driver filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {f.__name__: _wrap(f) for f in (nvidia_repository, nvidia_packages, nvidia_resolve, nvidia_lock,
                                               nvidia_reboot, nvidia_imex_ports, nvidia_imex_channel_major)}
