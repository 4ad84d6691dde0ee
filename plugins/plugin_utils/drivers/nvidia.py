# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an NVIDIA node needs, from data/nvidia/driver.yml and the GPU platform table. Pure.

repository()    the CUDA network repository of a distribution and CPU architecture
packages()      driver (open or proprietary), Fabric Manager, NSCQ, nvlsm, IMEX, persistenced, and the holds
check_branch()  the requested branch/version against what the repository has
reboot()        whether to reboot, refuse, or skip, after the driver changed
"""
from __future__ import annotations

import functools
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import reboot as reboot_policy
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


@functools.lru_cache(maxsize=None)
def driver_data() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "nvidia" / "driver.yml")


def repository(distribution: str, major_version: str | int, arch: str, base_url: str | None = None) -> dict[str, Any]:
    data = driver_data()["repository"]
    key = f"{distribution}-{str(major_version).split('.', maxsplit=1)[0]}"
    folder = data["distros"].get(key)
    if folder is None:
        raise RecipeError(f"nvidia_driver: {distribution} {major_version} has no CUDA repository we know; supported: "
                          f"{', '.join(sorted(data['distros']))} (or set nvidia_driver_repo_url to a mirror)")
    repo_arch = data["arches"].get(arch)
    if repo_arch is None:
        raise RecipeError(f"nvidia_driver: CPU architecture {arch} is not one of {', '.join(sorted(data['arches']))}")
    url = f"{(base_url or data['base_url']).rstrip('/')}/{folder}/{repo_arch}/"
    return {"url": url, "key_url": url + data["key_file"], "folder": folder, "arch": repo_arch,
            "format": "dnf" if folder.startswith("rhel") else "apt"}


def _named(entry: Any, branch: int) -> str:
    names = driver_data()["packages"]
    if isinstance(entry, dict):
        entry = entry["since"] if branch >= int(names["renamed_at"]) else entry["before"]
    return str(entry).format(branch=branch)


def flavor(requested: str, platform: dict[str, Any], gpu: str) -> str:
    """open or proprietary: auto is open; proprietary is refused where the GPU needs the open modules."""
    if requested not in ("auto", "open", "proprietary"):
        raise RecipeError(f"nvidia_driver_flavor: {requested!r} is not one of auto, open, proprietary")
    if requested == "proprietary" and platform.get("open_modules"):
        raise RecipeError(f"nvidia_driver_flavor: {gpu} ({platform.get('arch')}) needs the open kernel modules; "
                          "set nvidia_driver_flavor: open (or auto)")
    return "proprietary" if requested == "proprietary" else "open"


def packages(branch: int, kind: str, platform: dict[str, Any], version: str = "",
             imex: bool | None = None) -> dict[str, Any]:
    """Packages (with =version pins where a version is given) and what must be held, for one node."""
    names = driver_data()["packages"]
    pin = f"={version}" if version else ""
    driver = _named(names[kind], branch)
    extras: dict[str, str | None] = {
        "fabricmanager": _named(names["fabricmanager"], branch) if platform.get("nvswitch") else None,
        "nscq": _named(names["nscq"], branch) if platform.get("nvswitch") else None,
        "nvlsm": names["nvlsm"] if platform.get("nvlink5") and platform.get("nvswitch") else None,
        "imex": _named(names["imex"], branch) if (platform.get("imex") if imex is None else imex) else None,
    }
    # Fabric Manager, NSCQ and IMEX must match the driver exactly: they get the same version pin
    install = [driver + pin, names["persistenced"] + pin]
    install += [name + pin for key, name in extras.items() if name and key != "nvlsm"]
    if extras["nvlsm"]:
        install.append(extras["nvlsm"])
    holds = [driver, names["persistenced"]] + [n for n in extras.values() if n]
    return {"driver": driver, "install": install, "holds": holds, **extras,
            "modules_load": ["ib_umad"] if extras["nvlsm"] else []}


def dnf_module(branch: int, kind: str) -> str:
    return driver_data()["packages"]["dnf_module"].format(branch=branch, suffix="-open" if kind == "open" else "")


def check_branch(branch: Any, version: str, available: list[str], package: str) -> str:
    """The version to install (exact or newest of the branch); an error lists what the repository has."""
    if isinstance(branch, bool) or not str(branch).isdigit():
        raise RecipeError(f"nvidia_driver_branch: {branch!r} is not a driver branch number such as 580")
    in_branch = [v for v in available if v.split(".")[0] == str(branch)]
    if not available:
        raise RecipeError(f"nvidia_driver_branch: the repository has no {package}; branch {branch} does not exist "
                          "there (check nvidia_driver_branch and the repository URL)")
    if version:
        if version not in available:
            raise RecipeError(f"nvidia_driver_version: {version} is not in the repository; {package} has "
                              f"{', '.join(available)}")
        return version
    if not in_branch:
        raise RecipeError(f"nvidia_driver_branch: {package} has no {branch}.x version; it has {', '.join(available)}")
    return sorted(in_branch, key=_version_key)[-1]


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in v.replace("-", ".").split("."))


def newest_kernel(kernels: list[str]) -> str | None:
    """The newest of the installed kernels (vmlinuz-<version> names or bare versions)."""
    versions = [k.split("vmlinuz-", 1)[-1] for k in kernels if k]
    return sorted(versions, key=_version_key)[-1] if versions else None


def reboot(*, installed: str | None, running: str | None, changed: bool, allow: bool, container: bool,
           control_node: bool, kernels: list[str] | None = None, running_kernel: str = "") -> dict[str, Any]:
    """Reboot only when the module changed and the running one differs, or when the install pulled a newer
    kernel than the one running (the new driver was built for it). Policy in reboot_policy."""
    reasons = []
    if changed and installed and running != installed:
        reasons.append(f"the installed driver is {installed} and the running module is {running or 'not loaded'}")
    newest = newest_kernel(kernels or [])
    if changed and newest and running_kernel and newest != running_kernel:
        reasons.append(f"the install pulled kernel {newest} while {running_kernel} runs (the driver was built for it)")
    return reboot_policy.decide(why="; ".join(reasons), allow=allow, container=container, control_node=control_node,
                                allow_var="nvidia_driver_allow_reboot")
