# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ROCm release choice, AMD's repository layout and the release-to-release move for Instinct nodes, from
data/amd/*.yml. Pure.

choose()        the release for a GPU on an OS, checked against AMD's GPU x OS table
repositories()  rocm, graphics (7.x) and amdgpu repositories of a release, with AMD's folder rules
remove_first()  what must go before another release is installed (AMD's way, and the 6.4 -> 7.x epoch trap)
reboot()        reboot, refuse, skip or nothing after amdgpu or the kernel command line changed
"""
from __future__ import annotations

import functools
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import reboot as reboot_policy
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


@functools.lru_cache(maxsize=None)
def data(name: str) -> dict[str, Any]:
    """data/amd/<name>.yml (repository, releases, packages), its node folders filled in (data/node.yml)."""
    return node.expand(read_yaml(DATA_DIR / "amd" / f"{name}.yml"))


def os_key(distribution: str, version: str | int) -> str:
    return f"{distribution}-{str(version).split('.', maxsplit=1)[0]}"


def supported(release: str, gpu: str, system: str) -> bool:
    spec = data("releases")["releases"][release]
    return system in (data("releases")["support"][spec["support"]].get(gpu) or [])


def choose(gpu: str, platform: dict[str, Any], distribution: str, version: str | int, requested: str = "") -> str:
    """The ROCm release for a GPU on an OS: the requested one if AMD supports that GPU there, else the GPU's
    default; refusals list the releases that would work."""
    table = data("releases")
    system = os_key(distribution, version)
    release = requested or table["default_by_gpu"].get(gpu)
    working = [r for r in table["releases"] if supported(r, gpu, system)]
    none = f"none (AMD supports {gpu} on {system} with no ROCm release)"
    offer = f"on {system} with {gpu} ({platform.get('gfx')}) these work: {', '.join(working) or none}"
    if not release:
        raise RecipeError(f"rocm_driver_version: no default ROCm release for {gpu}; {offer}")
    if release not in table["releases"]:
        raise RecipeError(f"rocm_driver_version: ROCm {release} is not in the compatibility table "
                          f"({', '.join(table['releases'])}); {offer}")
    if not any(gpu in rows for rows in table["support"].values()):
        raise RecipeError(f"rocm_driver_gpu: {gpu} is not in AMD's support table ({', '.join(table['default_by_gpu'])})")
    if not supported(release, gpu, system):
        raise RecipeError(f"rocm_driver_version: ROCm {release} does not support {gpu} on {system}; {offer}")
    return release


def repositories(release: str, distribution: str, version: str | int, rocm_url: str = "", amdgpu_url: str = "",
                 graphics_url: str = "") -> dict[str, Any]:
    """AMD's repositories of a release for a node. apt: suite, rocm, graphics (7.x), amdgpu, pin; dnf: el9 paths
    with the node's RHEL minor, priority. Mirrors take {dir} (or {version}), {driver} and {el}."""
    repo = data("repository")
    spec = data("releases")["releases"].get(release)
    if spec is None:
        raise RecipeError(f"rocm_driver_version: ROCm {release} is not in the compatibility table")
    system = os_key(distribution, version)
    fields = {"dir": spec["dir"], "version": spec["dir"], "driver": spec["driver"]}
    if distribution in ("RedHat", "Rocky"):
        minor = ".".join(str(version).split(".")[:2])
        if minor not in spec["el9"]:
            raise RecipeError(f"rocm_driver: ROCm {release} publishes RHEL 9 packages for {', '.join(spec['el9'])}, not "
                              f"{minor} (repo.radeon.com has no el/{minor} folder for it); update the node or pick "
                              "another rocm_driver_version")
        fields["el"] = minor
        urls = repo["dnf"]
        fmt: dict[str, Any] = {"format": "dnf", "priority": urls["priority"], "el": minor, "keyring": urls["keyring"]}
    else:
        suite = repo["apt"]["suites"].get(system)
        if suite is None:
            raise RecipeError(f"rocm_driver: {system} has no ROCm repository; supported: "
                              f"{', '.join(sorted(repo['apt']['suites']))}, RedHat-9, Rocky-9")
        urls = repo["apt"]
        pin = urls["pin"]
        fmt = {"format": "apt", "suite": suite, "components": urls["components"], "architectures": urls["architectures"],
               "keyring": urls["keyring"], "pin_file": urls["pin_file"],
               "pin": f"Package: {pin['package']}\nPin: {pin['pin']}\nPin-Priority: {pin['priority']}\n"}
    return {**fmt, "release": release, "dir": spec["dir"], "driver": spec["driver"], "key_url": repo["key_url"],
            "key_fingerprint": repo["key_fingerprint"],
            "rocm": (rocm_url or urls["rocm"]).format(**fields),
            "graphics": (graphics_url or urls["graphics"]).format(**fields) if spec["graphics"] else None,
            "amdgpu": (amdgpu_url or urls["amdgpu"]).format(**fields)}


def packages() -> dict[str, Any]:
    return data("packages")


def userspace_pins(release: str, fmt: str) -> list[str]:
    pkgs = data("packages")
    return [pkgs["userspace_pin"][fmt].format(name=name, release=release) for name in pkgs["userspace"]]


def installed_release(installed: dict[str, list[str]]) -> str:
    """The ROCm release installed (from rocm-core's version, 7.2.4.70204-93~24.04 -> 7.2.4), or ''."""
    versions = installed.get("rocm-core") or []
    return ".".join(str(versions[0]).split(":", 1)[-1].split(".")[:3]) if versions else ""


def remove_first(installed: dict[str, list[str]], target: str) -> list[str]:
    """What to remove before installing `target` over another release: rocm-core (it takes the ROCm userspace
    with it; AMD removes the old release first), and, when the amdgpu driver folder changes (6.4.x -> 30.x, or
    30.30.3 -> 30.30.4), every installed package of the old driver repository (apt keeps an installed package
    under state present, and would keep a 1:6.x one over an epoch-less 30.x one even at pin 600)."""
    pkgs = data("packages")
    current = installed_release(installed)
    if not current or current == target:
        return []
    out = [p for p in pkgs["remove_on_release_change"] if p in installed]
    releases = data("releases")["releases"]
    old_driver = releases.get(current, {}).get("driver", current)
    new_driver = releases[target]["driver"]
    if str(old_driver) != str(new_driver):
        # another amdgpu folder: the old driver's packages out too, as AMD's amdgpu-install --uninstall does; the
        # install that follows (state present) would otherwise keep the old DKMS module and hold it again
        out += [p for p in pkgs["driver_repo_packages"] if p in installed]
    return list(dict.fromkeys(out))


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
