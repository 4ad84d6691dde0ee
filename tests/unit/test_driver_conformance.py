"""Conformance of the driver roles' logic to what NVIDIA and AMD publish.

Expectations come from tests/vendor/{nvidia,amd}.yml (the tests' own vendor facts, each with its source), never from
data/: platform (HGX H200, HGX B300, GB300, PCIe H200 without NVSwitch, MI300X, MI325X, MI355X) x OS (Ubuntu 22.04,
24.04, Debian 12, RHEL 9) x branch/release -> repository lines, pins, packages, holds and refusals. Where ordering
of Debian versions matters the oracle is dpkg itself (dpkg --compare-versions).
"""
from __future__ import annotations

import fnmatch
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

NV = yaml.safe_load((ROOT / "tests" / "vendor" / "nvidia.yml").read_text())
AMD = yaml.safe_load((ROOT / "tests" / "vendor" / "amd.yml").read_text())
GPUS = load_catalog().gpus
OSES = {"ubuntu2204": ("Ubuntu", "22.04"), "ubuntu2404": ("Ubuntu", "24.04"), "debian12": ("Debian", "12"),
        "rhel9": ("RedHat", "9.4")}
FAMILY = {"Ubuntu": "ubuntu", "Debian": "debian", "RedHat": "rhel"}
BRANCH = 580


def platform(kind: str) -> dict[str, Any]:
    facts = NV["platforms"][kind]
    entry = dict(GPUS[facts["gpu"]], id=facts["gpu"])
    if kind == "pcie-h200":           # a PCIe H200 box: the same GPU without the HGX board's NVSwitches
        entry["nvswitch"] = False
    return entry


def published(folder: str) -> dict[str, list[str]]:
    pub = NV["published"][folder]
    pub = NV["published"][pub["same_as"]] if "same_as" in pub else pub
    return {name: spec["versions"] for name, spec in pub["packages"].items()}


def expected_names(kind: str, folder: str, flavor: str) -> tuple[list[str], list[str]]:
    """(pinned, unpinned) names a node of this kind needs, from the vendor facts."""
    facts = NV["platforms"][kind]
    distribution = OSES[folder][0]
    fam, fmt = FAMILY[distribution], "dnf" if distribution == "RedHat" else "apt"
    driver = NV["driver"][fam][flavor]
    names = driver["packages"] if fam == "rhel" else driver
    pinned = [n.format(branch=BRANCH) for n in names]
    needs = (NV["needs"]["nvswitch"] if facts["nvswitch"] else []) \
        + (NV["needs"]["nvlink5"] if facts["nvswitch"] and facts["nvlink5"] else []) \
        + (NV["needs"]["imex"] if facts["imex"] else [])
    unpinned = []
    for key in needs:
        extra = NV["extras"][key]
        if fmt not in extra or (extra.get("amd64_only") and facts["arch"] != "x86_64"):
            continue
        if key == "modprobe" and fam != "ubuntu":       # GDC pins nvidia-modprobe in its Ubuntu images only
            continue
        (unpinned if extra.get("unpinned") else pinned).append(extra[fmt])
    return pinned, unpinned


def madison(table: dict[str, list[str]], url: str) -> str:
    """What `apt-cache madison` prints for a repository publishing `table`."""
    return "".join(f" {name} | {version} | {url} Packages\n" for name, versions in table.items() for version in versions)


CASES = [(kind, folder) for kind in NV["platforms"] for folder in OSES]


def test_the_platform_table_agrees_with_the_hardware_facts() -> None:
    for kind, facts in NV["platforms"].items():
        entry = platform(kind)
        assert (bool(entry["nvswitch"]), bool(entry["nvlink5"]), bool(entry["imex"]), bool(entry["open_modules"]),
                entry["cpu_arch"]) == (facts["nvswitch"], facts["nvlink5"], facts["imex"], facts["open_required"],
                                       facts["arch"]), kind


@pytest.mark.parametrize("kind,folder", CASES)
def test_nvidia_repository(kind: str, folder: str) -> None:
    distribution, version = OSES[folder]
    arch = NV["platforms"][kind]["arch"]
    repo = nv.repository(distribution, version, arch)
    folder_name = NV["repository"]["folders"][distribution + "-" + version.split(".")[0]]
    url = f"{NV['repository']['base_url']}/{folder_name}/{NV['repository']['arches'][arch]}/"
    assert repo["url"] == url
    if distribution == "RedHat":
        facts = NV["repository"]["dnf"]
        assert repo["key_url"] == url + facts["key_file"] and repo["key_fingerprint"] == facts["key_fingerprint"]
        assert repo["repo_id"] == facts["repo_id"].format(arch=NV["repository"]["arches"][arch])
    else:
        facts = NV["repository"]["apt"]
        assert repo["key_url"] == url + facts["key_file"] and repo["key_fingerprint"] == facts["key_fingerprint"]
        assert repo["suite"] == "/" and facts["flat"]
        assert (repo["pin_file"], repo["pin"].strip()) == (facts["pin_file"], facts["pin"].strip())
        assert repo["release_label"] == facts["label"]       # the pin selects the repository by its Release Label


@pytest.mark.parametrize("kind,folder", CASES)
@pytest.mark.parametrize("flavor", ["open", "proprietary"])
def test_nvidia_packages_pins_and_refusals(kind: str, folder: str, flavor: str) -> None:
    facts = NV["platforms"][kind]
    distribution = OSES[folder][0]
    if flavor == "proprietary" and facts["open_required"]:
        with pytest.raises(RecipeError, match="needs the open kernel modules"):
            nv.flavor("proprietary", platform(kind), facts["gpu"])
        return
    kind_got = nv.flavor(flavor, platform(kind), facts["gpu"])
    got = nv.node_packages(platform(kind), BRANCH, kind_got, distribution, facts["arch"])
    pinned, unpinned = expected_names(kind, folder, flavor)
    assert (got["pinned"], got["unpinned"]) == (pinned, unpinned)
    assert not any(u.endswith(".service") and "nvlsm" in u for u in got["units"])     # no nvlsm unit: FM starts nvlsm
    if distribution == "RedHat":
        assert got["dnf_module"] == NV["driver"]["rhel"][flavor]["stream"].format(branch=BRANCH)
        want = [NV["pin"]["dnf"].format(name=n, version="580.126.20") for n in pinned]
        assert nv.pins(pinned, "580.126.20", "dnf") == want
        return
    pub = published(folder)
    for release in NV["releases"]:
        pins = nv.pins(pinned, release, "apt")
        assert pins == [NV["pin"]["apt"].format(name=n, version=release) for n in pinned]
        for pin in pins:                       # every pin selects exactly the release's build, whatever its revision
            name, pattern = pin.split("=", 1)
            hits = [v for v in pub[name] if fnmatch.fnmatchcase(v, pattern)]
            assert len(hits) == 1 and hits[0].startswith(release + "-"), (pin, pub[name])


@pytest.mark.parametrize("kind,folder", [c for c in CASES if c[1] != "rhel9"])
def test_nvidia_resolve_against_the_published_repository(kind: str, folder: str) -> None:
    facts = NV["platforms"][kind]
    distribution = OSES[folder][0]
    got = nv.node_packages(platform(kind), BRANCH, "open", distribution, facts["arch"])
    pub = published(folder)
    text = madison(pub, f"https://developer.download.nvidia.com/compute/cuda/repos/{folder}/x86_64")
    table = nv.parse_madison(text)
    assert table == pub
    newest = max(NV["releases"], key=lambda v: tuple(int(p) for p in v.split(".")))
    assert nv.resolve(BRANCH, "", table, got["pinned"], got["probe"], "apt") == newest
    for release in NV["releases"]:
        assert nv.resolve(BRANCH, release, table, got["pinned"], got["probe"], "apt") == release
    with pytest.raises(RecipeError, match=r"not a driver version; give the version without a package revision"):
        nv.resolve(BRANCH, pub[got["probe"]][0], table, got["pinned"], got["probe"], "apt")
    with pytest.raises(RecipeError, match=r"580\.1\.1 is not published for every package this node needs: "
                                          + got["probe"] + " has " + ", ".join(pub[got["probe"]])):
        nv.resolve(BRANCH, "580.1.1", table, got["pinned"], got["probe"], "apt")
    # a repository that lags on one package: the newest release every package has wins, and a request for the
    # lagging release is refused naming the package
    lagging = {**table, got["pinned"][-1]: [v for v in table[got["pinned"][-1]] if not v.startswith(newest)]}
    second = sorted(NV["releases"], key=lambda v: tuple(int(p) for p in v.split(".")))[-2]
    assert nv.resolve(BRANCH, "", lagging, got["pinned"], got["probe"], "apt") == second
    with pytest.raises(RecipeError, match=f"{newest} is not published for every package.*{got['pinned'][-1]} has"):
        nv.resolve(BRANCH, newest, lagging, got["pinned"], got["probe"], "apt")


def closure(folder: str, roots: list[str], release: str) -> dict[str, str]:
    """What dpkg would have installed for `roots` at `release`: the facts' dependency graph, exact versions."""
    pub = NV["published"][folder]
    pub = NV["published"][pub["same_as"]] if "same_as" in pub else pub
    out: dict[str, str] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in out or name not in pub["packages"]:
            continue
        spec = pub["packages"][name]
        version = next(v for v in spec["versions"] if v.startswith(release + "-"))
        out[name] = version
        todo += [d.format(v=version).split(" ")[0] for d in spec.get("depends", [])]
    return out


@pytest.mark.parametrize("kind,folder", [c for c in CASES if c[1] != "rhel9"])
def test_nvidia_holds_cover_the_whole_driver(kind: str, folder: str) -> None:
    """GDC holds every pinned package; NVIDIA's version-locking page locks every package of the driver's version."""
    facts = NV["platforms"][kind]
    got = nv.node_packages(platform(kind), BRANCH, "open", OSES[folder][0], facts["arch"])
    release = NV["releases"][0]
    installed = closure(folder, got["pinned"], release)
    installed["nftables"] = "1.0.6-2+deb12u2"        # not NVIDIA's: never held
    holds = nv.lock_set(got["pinned"], {n: [v] for n, v in installed.items()}, release)
    driver = {n for n, v in installed.items() if v.startswith(release + "-")}
    assert set(holds) == driver | set(got["pinned"])
    assert "nftables" not in holds
    # NVIDIA's APT version lock selects, for every package of the driver, exactly the release's build
    lock = nv.version_lock(release)["text"].splitlines()
    patterns = next(line for line in lock if line.startswith("Package: ")).split()[1:]
    version_glob = next(line for line in lock if line.startswith("Pin: version ")).split()[-1]
    pub = published(folder)
    for package in driver:
        assert any(fnmatch.fnmatchcase(package, p) for p in patterns if not p.startswith("src:")), package
        assert [v for v in pub[package] if fnmatch.fnmatchcase(v, version_glob)] == [installed[package]], package


def test_nvidia_branch_before_580_keeps_the_suffix() -> None:
    got = nv.node_packages(platform("hgx-h200"), 575, "open", "Ubuntu", "x86_64")
    assert got["fabricmanager"] == NV["extras"]["fabricmanager"]["before_580_apt"].format(branch=575)
    assert got["nscq"] == NV["extras"]["nscq"]["before_580_apt"].format(branch=575)
    rhel = nv.node_packages(platform("hgx-h200"), 575, "open", "RedHat", "x86_64")
    assert rhel["fabricmanager"] == NV["extras"]["fabricmanager"]["before_580_dnf"]


def test_nvidia_no_repository_no_branch() -> None:
    with pytest.raises(RecipeError, match=r"the repository has no nvidia-open-575; branch 575 does not exist"):
        nv.resolve(575, "", {}, ["nvidia-open-575"], "nvidia-open-575", "apt")


# ---------------------------------------------------------------- AMD

AMD_GPUS = ["mi300x", "mi325x", "mi355x"]
AMD_OSES = [("Ubuntu", "22.04"), ("Ubuntu", "24.04"), ("Debian", "12"), ("RedHat", "9.4"), ("RedHat", "9.7"),
            ("Rocky", "9.6")]


def amd_supported(release: str, gpu: str, system: str) -> bool:
    row = AMD["support"][AMD["releases"][release]["support"]]
    return system in row[f"{GPUS[gpu]['gfx']}-{gpu}"]


@pytest.mark.parametrize("gpu", AMD_GPUS)
@pytest.mark.parametrize("dist,ver", AMD_OSES)
@pytest.mark.parametrize("release", list(AMD["releases"]))
def test_rocm_gpu_os_table_and_repositories(gpu: str, dist: str, ver: str, release: str) -> None:
    system = f"{dist}-{ver.split('.')[0]}"
    entry = dict(GPUS[gpu], id=gpu)
    if not amd_supported(release, gpu, system):
        with pytest.raises(RecipeError, match=f"ROCm {release} does not support {gpu} on {system}"):
            rp.choose(gpu, entry, dist, ver, release)
        return
    assert rp.choose(gpu, entry, dist, ver, release) == release
    spec = AMD["releases"][release]
    fields = {"dir": spec["dir"], "driver": spec["driver"]}
    if dist in ("RedHat", "Rocky"):
        if ver not in spec["el9"]:
            with pytest.raises(RecipeError, match=f"publishes RHEL 9 packages for {', '.join(spec['el9'])}, not {ver}"):
                rp.repositories(release, dist, ver)
            return
        urls, fields = AMD["repository"]["dnf"], {**fields, "el": ver}
        repo = rp.repositories(release, dist, ver)
        assert repo["priority"] == urls["priority"]
    else:
        urls = AMD["repository"]["apt"]
        repo = rp.repositories(release, dist, ver)
        assert repo["suite"] == urls["suites"][system] and repo["components"] == urls["components"]
        assert (repo["pin_file"], repo["pin"].strip()) == (urls["pin_file"], urls["pin"].strip())
    assert repo["rocm"] == urls["rocm"].format(**fields)
    assert repo["amdgpu"] == urls["amdgpu"].format(**fields)
    assert repo["graphics"] == (urls["graphics"].format(**fields) if spec["graphics"] else None)
    assert repo["key_url"] == AMD["repository"]["key_url"]


def test_rocm_folder_rules_on_their_own() -> None:
    """X.Y.0 in X.Y, the 7.x driver folders 30.x, never amdgpu/7.2 (AMD's layout as published)."""
    for release, spec in AMD["releases"].items():
        repo = rp.repositories(release, "Ubuntu", "24.04")
        assert not repo["rocm"].endswith(".0") and f"/rocm/apt/{spec['dir']}" in repo["rocm"]
        if release.startswith("7."):
            assert "/amdgpu/30." in repo["amdgpu"] and f"/amdgpu/{release}" not in repo["amdgpu"]


def test_mi355x_has_no_release_on_debian12_or_rocky9() -> None:
    for system in (("Debian", "12"), ("Rocky", "9.6")):
        with pytest.raises(RecipeError, match=r"these work: none"):
            rp.choose("mi355x", dict(GPUS["mi355x"], id="mi355x"), *system)


@pytest.mark.parametrize("gpu", AMD_GPUS)
@pytest.mark.parametrize("ver", ["22.04", "24.04"])
def test_rocm_default_release_is_one_amd_supports_on_ubuntu(gpu: str, ver: str) -> None:
    release = rp.choose(gpu, dict(GPUS[gpu], id=gpu), "Ubuntu", ver)
    assert amd_supported(release, gpu, f"Ubuntu-{ver.split('.')[0]}")


def dpkg_gt(a: str, b: str) -> bool:
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b], check=False).returncode == 0


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="dpkg is the oracle of Debian version order")
@pytest.mark.parametrize("old,new", [("6.4.3", "7.2.3"), ("6.4.3", "7.2.4"), ("7.2.3", "7.2.4")])
def test_rocm_upgrade_removes_what_apt_would_keep(old: str, new: str) -> None:
    """Every installed package that apt would keep over the new release's build (the 6.4 epoch-1 firmware against
    the epoch-less 30.x one) is removed before the new release goes in; rocm-core always, as AMD moves releases."""
    installed = {name: [version] for name, version in AMD["published"][old].items()}
    target = AMD["published"][new]
    keep = {n for n, versions in installed.items() if n in target and dpkg_gt(versions[0], target[n])}
    removed = set(rp.remove_first(installed, new))
    assert keep <= removed, keep - removed
    assert "rocm-core" in removed
    if old.startswith("6."):
        assert "amdgpu-dkms-firmware" in keep          # the trap is real in the facts
    assert rp.remove_first(installed, old) == []


def test_rocm_userspace_pins_select_the_release_build() -> None:
    for release, pkgs in AMD["published"].items():
        for pin in rp.userspace_pins(release, "apt"):
            name, pattern = pin.split("=", 1)
            assert fnmatch.fnmatchcase(pkgs[name], pattern)
            assert not any(fnmatch.fnmatchcase(other[name], pattern)
                           for r, other in AMD["published"].items() if r != release)
