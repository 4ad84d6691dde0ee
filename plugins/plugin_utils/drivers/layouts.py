# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the vendors publish about where their packages live and which driver a GPU needs. Pure; facts in
data/nvidia/repository.yml, data/nvidia/support.yml, data/amd/repository.yml and data/amd/releases.yml.

cuda_mirror()      a mirror of NVIDIA's CUDA repositories given with the folder the role appends (ubuntu2404/x86_64)
rocm_mirror()      a mirror URL of one of AMD's trees (rocm, graphics, amdgpu) that holds another tree, or another
                   release's folder, than the release the node installs
minimum_driver()   the oldest driver a GPU runs (its compute capability's first CUDA toolkit's minimum driver)
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp


def _segments(url: str) -> list[str]:
    return [s for s in urlsplit(url).path.split("/") if s]


def cuda_mirror(base_url: str) -> str | None:
    """Why a mirror of https://developer.download.nvidia.com/compute/cuda/repos is given too deep (None: it is not):
    the role appends <folder>/<arch>/ (ubuntu2404/x86_64/, NVIDIA's layout), so a URL that ends in a folder or an
    architecture doubles it."""
    repo = nv.data("repository")
    folders, arches = set(repo["folders"].values()), set(repo["arches"].values())
    segments = _segments(base_url)
    tail = [s for s in segments[-2:] if s in folders or s in arches]
    if not tail:
        return None
    depth = len(tail) if segments[-len(tail):] == tail else 0
    if not depth:
        return None
    base = base_url.rstrip("/").rsplit("/", depth)[0]
    return (f"{base_url!r} already ends in {'/'.join(tail)}, which the role appends for each node "
            f"({base_url.rstrip('/')}/{'/'.join(tail)}/); give the folder above it: {base}")


def _numbers() -> dict[str, str]:
    """Every folder number AMD publishes, with what it is: a ROCm release folder or an amdgpu driver folder."""
    out: dict[str, str] = {}
    for release, spec in rp.data("releases")["releases"].items():
        out.setdefault(str(spec["dir"]), f"ROCm {release}'s folder")
        out.setdefault(str(spec["driver"]), f"the amdgpu driver folder of ROCm {release}")
    return out


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in version.split(".")[:2])


def driver_runs(folder: str, release: str) -> bool:
    """Whether the amdgpu driver of `folder` (a driver folder AMD publishes: 30.30.3, 6.4.3) runs ROCm `release`'s
    userspace, by AMD's compatibility matrix (data/amd/releases.yml driver_runs)."""
    if folder not in {str(spec["driver"]) for spec in rp.data("releases")["releases"].values()}:
        return False
    span = rp.data("releases").get("driver_runs", {}).get(".".join(folder.split(".")[:2]))
    return bool(span) and _minor(span[0]) <= _minor(release) <= _minor(span[1])


def _tree_at(segments: list[str], tree: str) -> int | None:
    """The index just after a tree's path (rocm/apt -> the segment after apt) in a URL's path, or None."""
    parts = tree.split("/")
    for i in range(len(segments) - len(parts) + 1):
        if segments[i:i + len(parts)] == parts:
            return i + len(parts)
    return None


def rocm_mirror(url: str, kind: str, release: str) -> str | None:
    """Why a mirror URL of AMD's `kind` tree (rocm, graphics, amdgpu) does not hold `release`'s packages (None: no
    sign of that). Its path must not carry another tree, and the number after its own tree must be the release's
    (rocm, graphics: the ROCm folder such as 7.2 for 7.2.0; amdgpu: the driver folder such as 30.30.4)."""
    trees = rp.data("repository")["trees"]
    spec = rp.data("releases")["releases"].get(release)
    segments = _segments(url)
    for other, paths in trees.items():
        if other != kind and any(_tree_at(segments, p) is not None for p in paths) \
                and not any(_tree_at(segments, p) is not None for p in trees[kind]):
            want = {"rocm": "rocm/apt/{dir}", "graphics": "graphics/{dir}/ubuntu", "amdgpu": "amdgpu/{driver}/ubuntu"}
            return (f"{url!r} is AMD's {other} tree, not the {kind} one; the {kind} mirror keeps AMD's layout "
                    f"(.../{want[kind]})")
    if spec is None:
        return None
    wanted = str(spec["driver"] if kind == "amdgpu" else spec["dir"])
    for path in trees[kind]:
        at = _tree_at(segments, path)
        if at is None or at >= len(segments) or segments[at] == wanted:
            continue
        found = segments[at]
        if not re.fullmatch(r"\d+(\.\d+)+", found) or (kind == "amdgpu" and driver_runs(found, release)):
            continue
        what = _numbers().get(found, "another release's folder")
        placeholder = "{driver}" if kind == "amdgpu" else "{dir}"
        return (f"{url!r} holds {path}/{found} ({what}), but the node installs ROCm {release}, whose {kind} folder is "
                f"{path}/{wanted}; write {placeholder} where the number goes and the role fills it in")
    return _tail(url, segments, kind, trees[kind])


#: what follows the release folder in AMD's trees (A-DOCS, A-RIOL: V): amdgpu/<driver>/ubuntu, graphics/<dir>/ubuntu
#: (apt) or .../el/<minor>/main/x86_64 (dnf); rocm/apt/<dir> is the archive itself (apt), rocm/el9/<dir>/main (dnf)
TAILS = {"amdgpu": ("ubuntu", "el"), "graphics": ("ubuntu", "el"), "rocm": ("main",)}


def _tail(url: str, segments: list[str], kind: str, paths: list[str]) -> str | None:
    """Why the path after a tree's release folder is not AMD's (None: it is, or the URL shows no release folder)."""
    for path in paths:
        at = _tree_at(segments, path)
        if at is None or at >= len(segments) or not re.fullmatch(r"\d+(\.\d+)*", segments[at]):
            continue
        rest = segments[at + 1:]
        if kind != "rocm" and not rest:
            return (f"{url!r} ends at the release folder; AMD's {kind} tree goes on with ubuntu (apt) or "
                    f"el/<minor>/main/x86_64 (dnf): {url.rstrip('/')}/ubuntu")
        if rest and rest[0] not in TAILS[kind]:
            fix = "/".join([*segments[:at + 1], *(["ubuntu"] if kind != "rocm" else [])])
            return (f"{url!r} goes on with {'/'.join(rest)} after {path}/{segments[at]}, which AMD's {kind} tree does "
                    f"not have (apt appends dists/<suite>/ to its base): .../{fix}")
    return None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def minimum_driver(gpu: str, platform: dict[str, Any]) -> tuple[str, str] | None:
    """(oldest driver version, why) for a GPU, or None when NVIDIA's facts say nothing of it."""
    facts = nv.data("support")
    capability = str(platform.get("compute_capability") or "")
    toolkit = facts["first_toolkit"].get(capability)
    if toolkit is None:
        return None
    version = str(facts["toolkit_driver"][toolkit])
    why = f"compute capability {capability} arrived with CUDA {toolkit}, which needs driver {version} or later"
    product = facts.get("products", {}).get(gpu)
    if product and _version_key(str(product)) > _version_key(version):
        version, why = str(product), f"NVIDIA requires {product} or later for {gpu}"
    return version, why


def driver_too_old(gpu: str, platform: dict[str, Any], branch: int, version: str) -> tuple[str, str] | None:
    """("branch" or "version", why) when the branch, or the pinned version, predates the GPU; None when it does not."""
    found = minimum_driver(gpu, platform)
    if found is None:
        return None
    least, why = found
    major = int(least.split(".", 1)[0])
    if branch < major:
        return "branch", f"branch {branch} predates {gpu} ({why}); use branch {major} or later"
    if version and _version_key(version) < _version_key(least):
        return "version", f"{version} predates {gpu} ({why}); use {least} or later"
    return None
