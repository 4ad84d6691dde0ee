"""NVIDIA repository URLs, package names per branch and platform, branch checks and the reboot policy."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

GPUS = load_catalog().gpus
BASE = "https://developer.download.nvidia.com/compute/cuda/repos"


@pytest.mark.parametrize("dist,ver,arch,url,fmt", [
    ("Ubuntu", "22.04", "x86_64", f"{BASE}/ubuntu2204/x86_64/", "apt"),
    ("Ubuntu", "24.04", "x86_64", f"{BASE}/ubuntu2404/x86_64/", "apt"),
    ("Ubuntu", "24.04", "aarch64", f"{BASE}/ubuntu2404/sbsa/", "apt"),
    ("Debian", "12", "x86_64", f"{BASE}/debian12/x86_64/", "apt"),
    ("RedHat", "9.4", "x86_64", f"{BASE}/rhel9/x86_64/", "dnf"),
    ("Rocky", "9", "aarch64", f"{BASE}/rhel9/sbsa/", "dnf"),
])
def test_repository(dist: str, ver: str, arch: str, url: str, fmt: str) -> None:
    repo = nv.repository(dist, ver, arch)
    assert (repo["url"], repo["format"], repo["key_url"]) == (url, fmt, url + "3bf863cc.pub")


def test_repository_mirror_and_refusals() -> None:
    assert nv.repository("Ubuntu", "24.04", "x86_64", "http://mirror.local/cuda/")["url"] == \
        "http://mirror.local/cuda/ubuntu2404/x86_64/"
    with pytest.raises(RecipeError, match=r"Ubuntu 20.04 has no CUDA repository we know; supported: Debian-12, "
                                          r"RedHat-9, Rocky-9, Ubuntu-22, Ubuntu-24"):
        nv.repository("Ubuntu", "20.04", "x86_64")
    with pytest.raises(RecipeError, match=r"CPU architecture ppc64le is not one of aarch64, x86_64"):
        nv.repository("Ubuntu", "24.04", "ppc64le")


@pytest.mark.parametrize("branch,fm,nscq,imex", [
    (570, "nvidia-fabricmanager-570", "libnvidia-nscq-570", "nvidia-imex-570"),
    (575, "nvidia-fabricmanager-575", "libnvidia-nscq-575", "nvidia-imex-575"),
    (580, "nvidia-fabricmanager", "libnvidia-nscq", "nvidia-imex"),
])
def test_package_rename_at_580(branch: int, fm: str, nscq: str, imex: str) -> None:
    hgx = nv.packages(branch, "open", GPUS["h200"], f"{branch}.1.1-1")
    assert (hgx["driver"], hgx["fabricmanager"], hgx["nscq"]) == (f"nvidia-open-{branch}", fm, nscq)
    assert f"{fm}={branch}.1.1-1" in hgx["install"]  # Fabric Manager pinned to exactly the driver's version
    assert nv.packages(branch, "open", GPUS["gb300"])["imex"] == imex


def test_platform_extras() -> None:
    h200, b300, gb300 = (nv.packages(580, "open", GPUS[g]) for g in ("h200", "b300", "gb300"))
    assert (h200["nvlsm"], h200["imex"], h200["modules_load"]) == (None, None, [])
    assert (b300["nvlsm"], b300["modules_load"]) == ("nvlsm", ["ib_umad"])
    assert (gb300["fabricmanager"], gb300["imex"], gb300["nvlsm"]) == (None, "nvidia-imex", None)
    pcie = nv.packages(580, "proprietary", dict(GPUS["h200"], nvswitch=False))
    assert pcie["install"] == ["cuda-drivers-580", "nvidia-persistenced"] and pcie["fabricmanager"] is None
    assert set(b300["holds"]) == {"nvidia-open-580", "nvidia-persistenced", "nvidia-fabricmanager", "libnvidia-nscq",
                                  "nvlsm"}


def test_flavor() -> None:
    assert nv.flavor("auto", GPUS["b300"], "b300") == "open"
    assert nv.flavor("proprietary", GPUS["h200"], "h200") == "proprietary"
    with pytest.raises(RecipeError, match=r"b200 \(blackwell\) needs the open kernel modules"):
        nv.flavor("proprietary", GPUS["b200"], "b200")
    assert nv.dnf_module(580, "open") == "nvidia-driver:580-open" and nv.dnf_module(570, "proprietary") == \
        "nvidia-driver:570"


def test_check_branch() -> None:
    have = ["580.105.08-1", "580.95.05-1", "570.172.08-1"]
    assert nv.check_branch(580, "", have, "nvidia-open-580") == "580.105.08-1"
    assert nv.check_branch("580", "580.95.05-1", have, "nvidia-open-580") == "580.95.05-1"
    with pytest.raises(RecipeError, match=r"nvidia_driver_version: 580.1.1-1 is not in the repository; "
                                          r"nvidia-open-580 has 580.105.08-1, 580.95.05-1, 570.172.08-1"):
        nv.check_branch(580, "580.1.1-1", have, "nvidia-open-580")
    with pytest.raises(RecipeError, match=r"the repository has no nvidia-open-575; branch 575 does not exist"):
        nv.check_branch(575, "", [], "nvidia-open-575")
    with pytest.raises(RecipeError, match=r"'latest' is not a driver branch number"):
        nv.check_branch("latest", "", have, "x")


@pytest.mark.parametrize("kw,action", [
    ({"installed": "580.95.05", "running": "580.95.05", "changed": True}, "none"),
    ({"installed": "580.105.08", "running": "580.95.05", "changed": False}, "none"),
    ({"installed": "580.105.08", "running": "580.95.05", "changed": True, "container": True}, "skip"),
    ({"installed": "580.105.08", "running": "580.95.05", "changed": True, "control_node": True}, "refuse"),
    ({"installed": "580.105.08", "running": None, "changed": True}, "refuse"),
    ({"installed": "580.105.08", "running": "580.95.05", "changed": True, "allow": True}, "reboot"),
])
def test_reboot_policy(kw: dict, action: str) -> None:
    args = {"allow": False, "container": False, "control_node": False, **kw}
    decision = nv.reboot(**args)
    assert decision["action"] == action
    if action == "refuse" and not kw.get("control_node"):
        assert decision["msg"].startswith("a reboot is pending: the installed driver is 580.105.08")
        assert "nvidia_driver_allow_reboot: true" in decision["msg"]


def test_a_newer_kernel_pulled_by_the_install_needs_a_reboot() -> None:
    base = {"installed": "580.95.05", "running": "580.95.05", "changed": True, "allow": False, "container": False,
            "control_node": False, "running_kernel": "6.8.0-45-generic"}
    assert nv.newest_kernel(["vmlinuz-6.8.0-45-generic", "vmlinuz-6.8.0-51-generic", "vmlinuz-6.8.0-9-generic"]) \
        == "6.8.0-51-generic"
    pulled = nv.reboot(**base, kernels=["vmlinuz-6.8.0-45-generic", "vmlinuz-6.8.0-51-generic"])
    assert pulled["action"] == "refuse"
    assert "the install pulled kernel 6.8.0-51-generic while 6.8.0-45-generic runs" in pulled["msg"]
    same = nv.reboot(**base, kernels=["vmlinuz-6.8.0-45-generic"])
    assert same["action"] == "none"
    unchanged = nv.reboot(**{**base, "changed": False}, kernels=["vmlinuz-6.8.0-51-generic"])
    assert unchanged["action"] == "none"
