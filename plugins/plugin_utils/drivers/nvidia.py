# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an NVIDIA node installs from the CUDA repository, from data/nvidia/*.yml and the GPU platform table. Pure.

repository()      the CUDA network repository of a distribution and CPU: URL, key, apt pin or dnf priority
node_packages()   the driver and the extras a platform needs, which of them are pinned, and the unit names
pins()            "<name>=<version>*" (apt) or "<name>-<version>" (dnf), as NVIDIA's own installers pin
parse_madison() / parse_dnf_list()   the versions a repository publishes, from apt-cache madison / dnf list
resolve()         the driver version: the requested one or the newest every pinned package has; refuses with lists
lock_set()        the packages to hold: the pinned ones plus every installed package of the driver at that version
reboot()          reboot, refuse, skip or nothing, from the loaded module against the installed driver
"""
from __future__ import annotations

import fnmatch
import functools
import re
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import reboot as reboot_policy
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

FAMILIES = {"Ubuntu": "ubuntu", "Debian": "debian", "RedHat": "rhel", "Rocky": "rhel"}
DRIVER_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


@functools.lru_cache(maxsize=None)
def data(name: str) -> dict[str, Any]:
    """data/nvidia/<name>.yml (repository, packages, services), its node folders filled in (data/node.yml)."""
    return node.expand(read_yaml(DATA_DIR / "nvidia" / f"{name}.yml"))


def family(distribution: str) -> str:
    fam = FAMILIES.get(distribution)
    if fam is None:
        raise RecipeError(f"nvidia_driver: {distribution} is not a distribution NVIDIA's CUDA repository serves here; "
                          f"supported: {', '.join(sorted(FAMILIES))}")
    return fam


def repository(distribution: str, major_version: str | int, arch: str, base_url: str | None = None) -> dict[str, Any]:
    """The CUDA repository of a node: URL, key, and the apt pin file or the dnf repository settings."""
    repo = data("repository")
    key = f"{distribution}-{str(major_version).split('.', maxsplit=1)[0]}"
    folder = repo["folders"].get(key)
    if folder is None:
        raise RecipeError(f"nvidia_driver: {distribution} {major_version} has no CUDA repository we know; supported: "
                          f"{', '.join(sorted(repo['folders']))} (or set nvidia_driver_repo_base_url to a mirror)")
    repo_arch = repo["arches"].get(arch)
    if repo_arch is None:
        raise RecipeError(f"nvidia_driver: CPU architecture {arch} is not one of {', '.join(sorted(repo['arches']))}")
    url = f"{(base_url or repo['base_url']).rstrip('/')}/{folder}/{repo_arch}/"
    fmt = "dnf" if family(distribution) == "rhel" else "apt"
    spec = repo[fmt]
    out: dict[str, Any] = {"url": url, "folder": folder, "arch": repo_arch, "format": fmt, "family": family(distribution),
                           "key_url": url + spec["key_file"], "key_fingerprint": spec["key_fingerprint"]}
    if fmt == "apt":
        out.update(suite=spec["suite"], keyring=spec["keyring"], pin_file=spec["pin_file"],
                   pin=apt_preferences(spec["pin"]), release_label=spec["release_label"])
    else:
        out.update(repo_id=spec["repo_id"].format(folder=folder, arch=repo_arch), priority=spec["priority"],
                   keyring=spec["keyring"],
                   versionlock_package=spec["versionlock_package"])
    return out


def apt_preferences(stanzas: list[dict[str, Any]]) -> str:
    """apt_preferences(5) text of stanzas {package, pin, priority}, blank-line separated."""
    return "\n".join(f"Package: {s['package']}\nPin: {s['pin']}\nPin-Priority: {s['priority']}\n" for s in stanzas)


def flavor(requested: str, platform: dict[str, Any], gpu: str) -> str:
    """open or proprietary: auto is open; proprietary is refused where the GPU needs the open modules."""
    if requested not in ("auto", "open", "proprietary"):
        raise RecipeError(f"nvidia_driver_flavor: {requested!r} is not one of auto, open, proprietary")
    if requested == "proprietary" and platform.get("open_modules"):
        raise RecipeError(f"nvidia_driver_flavor: {gpu} ({platform.get('arch')}) needs the open kernel modules "
                          "(NVIDIA: the proprietary modules are unsupported on Grace Hopper and Blackwell); "
                          "set nvidia_driver_flavor: open (or auto)")
    return "proprietary" if requested == "proprietary" else "open"


def _extra_name(key: str, fmt: str, branch: int) -> str | None:
    pkgs = data("packages")
    names = pkgs["extras"][key].get(fmt)
    if names is None:
        return None
    name = names["since"] if branch >= int(pkgs["renamed_at"]) else names["before"]
    return str(name).format(branch=branch)


def node_packages(platform: dict[str, Any], branch: int, kind: str, distribution: str, arch: str = "x86_64",
                  imex: bool | None = None) -> dict[str, Any]:
    """The packages of one node: the driver set, the extras its platform needs, which are pinned to the driver's
    version and which are not, the module stream (dnf), the modules to load at boot and the units to start."""
    pkgs = data("packages")
    fam = family(distribution)
    fmt = "dnf" if fam == "rhel" else "apt"
    driver = [str(n).format(branch=branch) for n in pkgs["driver"][fam][kind]]
    probe = str(pkgs["driver"][fam]["probe"][kind]).format(branch=branch)
    wants_imex = bool(platform.get("imex")) if imex is None else bool(imex)
    needs: list[str] = []
    if platform.get("nvswitch"):
        needs += pkgs["needs"]["nvswitch"]
        if platform.get("nvlink5"):
            needs += pkgs["needs"]["nvlink5"]
    if wants_imex:
        needs += pkgs["needs"]["imex"]
    extras: dict[str, str] = {}
    for key in needs:
        spec = pkgs["extras"][key]
        if spec.get("amd64_only") and arch != "x86_64":
            continue
        if spec.get("families") and fam not in spec["families"]:
            continue
        name = _extra_name(key, fmt, branch)
        if name:
            extras[key] = name
    unpinned = [extras[k] for k in extras if pkgs["extras"][k].get("unpinned")]
    pinned = driver + [extras[k] for k in extras if not pkgs["extras"][k].get("unpinned")]
    units = data("services")["units"]
    start = [units["persistenced"]] + ([units["fabricmanager"]] if "fabricmanager" in extras else []) \
        + ([units["imex"]] if "imex" in extras else [])
    stream = data("repository")["dnf"]["module_stream"][kind].format(branch=branch) if fmt == "dnf" else None
    return {"family": fam, "format": fmt, "flavor": kind, "branch": branch, "driver": driver, "probe": probe,
            "fabricmanager": extras.get("fabricmanager"), "nscq": extras.get("nscq"), "nvsdm": extras.get("nvsdm"),
            "imex": extras.get("imex"), "nvlsm": extras.get("nvlsm"), "extras": extras,
            "pinned": pinned, "unpinned": unpinned, "dnf_module": stream,
            "modules_load": list(pkgs["nvlink5_modules"]) if "nvlsm" in extras else [], "units": start}


def pins(names: list[str], version: str, fmt: str) -> list[str]:
    """Each package pinned to the driver version as NVIDIA's installers pin it (=<version>* / -<version>)."""
    pattern = data("packages")["pin"][fmt]
    return [pattern.format(name=name, version=version) for name in names]


def matches(version: str, driver_version: str, fmt: str) -> bool:
    """Whether a published package version is the driver version as the pin selects it: apt globs the whole
    version string against "<version>*"; dnf takes "<name>-<version>" as version <version>, any release."""
    if fmt == "apt":
        return fnmatch.fnmatchcase(version, f"{driver_version}*")
    evr = version.split(":", 1)[-1]
    return evr == driver_version or evr.startswith(driver_version + "-")


def parse_madison(text: str) -> dict[str, list[str]]:
    """`apt-cache madison a b ...`: ' nvidia-fabricmanager | 580.95.05-1 | https://... Packages' per line."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[0] and parts[1] and "Sources" not in parts[2]:
            versions = out.setdefault(parts[0], [])
            if parts[1] not in versions:
                versions.append(parts[1])
    return out


def parse_dnf_list(text: str) -> dict[str, list[str]]:
    """`dnf list --showduplicates --available a b`: 'nvidia-fabricmanager.x86_64  3:580.126.20-1  cuda-rhel9-x86_64'."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and "." in parts[0] and re.match(r"^(\d+:)?\d", parts[1]):
            name = parts[0].rsplit(".", 1)[0]
            versions = out.setdefault(name, [])
            if parts[1] not in versions:
                versions.append(parts[1])
    return out


def upstream(version: str) -> str:
    """The driver version inside a package version: 1:580.95.05-0ubuntu1 -> 580.95.05."""
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v))


def resolve(branch: Any, requested: str, published: dict[str, list[str]], pinned: list[str], probe: str,
            fmt: str) -> str:
    """The driver version to pin everything to. Requested: it must be a driver version (580.95.05, no Debian
    revision) of the branch that every pinned package publishes. Empty: the newest such version."""
    if isinstance(branch, bool) or not str(branch).isdigit():
        raise RecipeError(f"nvidia_driver_branch: {branch!r} is not a driver branch number such as 580")
    have = published.get(probe) or []
    if not have:
        raise RecipeError(f"nvidia_driver_branch: the repository has no {probe}; branch {branch} does not exist "
                          "there (check nvidia_driver_branch and the repository URL)")
    releases = sorted({upstream(v) for v in have if upstream(v).split(".")[0] == str(branch)}, key=_key)
    if requested:
        if not DRIVER_VERSION.match(requested):
            raise RecipeError(f"nvidia_driver_version: {requested!r} is not a driver version; give the version without "
                              f"a package revision, e.g. {releases[-1] if releases else '580.95.05'} (each package "
                              "has its own revision; they are pinned as <version>*)")
        if requested.split(".")[0] != str(branch):
            raise RecipeError(f"nvidia_driver_version: {requested} is not in branch {branch} (nvidia_driver_branch)")
        candidates = [requested]
    else:
        candidates = list(reversed(releases))
        if not candidates:
            raise RecipeError(f"nvidia_driver_branch: {probe} has no {branch}.x version; it has {', '.join(have)}")
    for version in candidates:
        missing = [p for p in pinned if not any(matches(v, version, fmt) for v in published.get(p, []))]
        if not missing:
            return version
        if requested:
            lists = "; ".join(f"{p} has {', '.join(published.get(p, [])) or 'nothing'}" for p in missing)
            raise RecipeError(f"nvidia_driver_version: {requested} is not published for every package this node "
                              f"needs: {lists}")
    lists = "; ".join(f"{p}: {', '.join(published.get(p, [])) or 'nothing'}" for p in pinned)
    raise RecipeError(f"nvidia_driver_branch: no {branch}.x version is published for all of {', '.join(pinned)} "
                      f"({lists})")


def version_lock(version: str) -> dict[str, str]:
    """NVIDIA's APT version lock at the driver version: {file, text} (apt_preferences(5))."""
    pkgs = data("packages")
    spec = pkgs["apt_version_lock"]
    text = ("# Managed by metalserve.sglang: the NVIDIA driver at one version (NVIDIA's APT version lock).\n"
            "# Moved by playbooks/nvidia_driver_upgrade.yml.\n"
            + apt_preferences([{"package": " ".join([*pkgs["lock_patterns"], *spec["sources"]]),
                                "pin": spec["pin"].format(version=version), "priority": spec["priority"]}]))
    return {"file": spec["file"], "text": text}


def lock_set(pinned: list[str], installed: dict[str, list[str]], version: str) -> list[str]:
    """What to hold: the pinned packages and every installed package of the driver at that version (NVIDIA's own
    lock is "versionlock *nvidia*<branch>*"). installed: name -> versions, as package_facts gives them."""
    patterns = data("packages")["lock_patterns"]
    found = {name for name, versions in installed.items()
             if any(fnmatch.fnmatchcase(name, p) for p in patterns)
             and any(upstream(str(v)) == version for v in versions)}
    return list(dict.fromkeys([*pinned, *sorted(found)]))


def newest_kernel(kernels: list[str]) -> str | None:
    """The newest of the installed kernels (vmlinuz-<version> names or bare versions)."""
    versions = [k.split("vmlinuz-", 1)[-1] for k in kernels if k]
    return sorted(versions, key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.-]", v)))[-1] \
        if versions else None


def reboot(*, installed: str | None, running: str | None, changed: bool, allow: bool, container: bool,
           control_node: bool, kernels: list[str] | None = None, running_kernel: str = "") -> dict[str, Any]:
    """A reboot is pending whenever the loaded module is not the installed driver (a fresh node, an upgrade, a run
    that was refused before), or when this run's install pulled a newer kernel than the one running.
    Policy (refuse, reboot, skip in containers) in reboot_policy."""
    reasons = []
    if installed and running != installed:
        reasons.append(f"the installed driver is {installed} and the running module is {running or 'not loaded'}")
    newest = newest_kernel(kernels or [])
    if changed and newest and running_kernel and newest != running_kernel:
        reasons.append(f"the install pulled kernel {newest} while {running_kernel} runs (the driver was built for it)")
    decision = reboot_policy.decide(why="; ".join(reasons), allow=allow, container=container,
                                    control_node=control_node, allow_var="nvidia_driver_allow_reboot")
    decision["start_services"] = bool(installed) and running == installed and decision["action"] in ("none", "skip")
    return decision
