# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ROCm release choice and repositories for AMD Instinct nodes, from data/amd/rocm.yml. Pure."""
from __future__ import annotations

import functools
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import reboot as reboot_policy
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


@functools.lru_cache(maxsize=None)
def rocm_data() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "amd" / "rocm.yml")


def os_key(distribution: str, version: str | int) -> str:
    return f"{distribution}-{str(version).split('.', maxsplit=1)[0]}"


def choose(gpu: str, platform: dict[str, Any], distribution: str, version: str | int, requested: str = "") -> str:
    """The ROCm release for a GPU on an OS: the requested one if the table allows it, else the GPU's default."""
    data = rocm_data()
    gfx, system = platform.get("gfx"), os_key(distribution, version)
    release = requested or data["default_by_gpu"].get(gpu)
    working = [r for r, spec in data["releases"].items() if gfx in spec["gfx"] and system in spec["os"]]
    offer = f"on {system} with {gpu} ({gfx}) these work: {', '.join(working) or 'none'}"
    if not release:
        raise RecipeError(f"rocm_driver_version: no default ROCm release for {gpu}; {offer}")
    spec = data["releases"].get(release)
    if spec is None:
        raise RecipeError(f"rocm_driver_version: ROCm {release} is not in the compatibility table "
                          f"({', '.join(data['releases'])}); {offer}")
    if gfx not in spec["gfx"]:
        raise RecipeError(f"rocm_driver_version: ROCm {release} does not support {gpu} ({gfx}); {offer}")
    if system not in spec["os"]:
        raise RecipeError(f"rocm_driver_version: ROCm {release} does not support {system}; {offer}")
    return release


def repositories(release: str, distribution: str, version: str | int, rocm_url: str = "",
                 amdgpu_url: str = "") -> dict[str, Any]:
    data = rocm_data()["repository"]
    system = os_key(distribution, version)
    if distribution in ("RedHat", "Rocky"):
        return {"format": "dnf", "rocm": (rocm_url or data["rhel_rocm_url"]).format(version=release),
                "amdgpu": (amdgpu_url or data["rhel_amdgpu_url"]).format(version=release), "key_url": data["key_url"]}
    suite = data["suites"].get(system)
    if suite is None:
        raise RecipeError(f"rocm_driver: {system} has no ROCm repository; supported: {', '.join(sorted(data['suites']))}"
                          ", RedHat-9, Rocky-9")
    return {"format": "apt", "suite": suite, "rocm": (rocm_url or data["rocm_url"]).format(version=release),
            "amdgpu": (amdgpu_url or data["amdgpu_url"]).format(version=release), "key_url": data["key_url"],
            "pin_priority": data["pin_priority"]}


def missing_kernel_args(cmdline: str, wanted: list[str]) -> list[str]:
    """The wanted kernel settings the running kernel was not booted with."""
    have = set(cmdline.split())
    return [arg for arg in wanted if arg not in have]


def reboot(*, loaded: str | None, on_disk: str | None, changed: bool, cmdline: str, kernel_args: list[str],
           allow: bool, container: bool, control_node: bool) -> dict[str, Any]:
    """Reboot when amdgpu changed in this run and the loaded module is not the one on disk (compared by
    srcversion), or when the kernel runs without the settings the role put into GRUB."""
    reasons = []
    if changed and on_disk and loaded != on_disk:
        reasons.append(f"amdgpu on disk is srcversion {on_disk} and the loaded module is {loaded or 'not loaded'}")
    missing = missing_kernel_args(cmdline, kernel_args)
    if missing:
        reasons.append(f"the kernel was booted without {' '.join(missing)}")
    return reboot_policy.decide(why="; ".join(reasons), allow=allow, container=container,
                                control_node=control_node, allow_var="rocm_driver_allow_reboot")
