"""The ROCm compatibility table: defaults per GPU, refusals with what would work, repository URLs."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

GPUS = load_catalog().gpus


@pytest.mark.parametrize("gpu,release", [("mi300x", "7.0.2"), ("mi325x", "7.0.2"), ("mi355x", "7.2.0")])
def test_default_release_per_gpu(gpu: str, release: str) -> None:
    assert rp.choose(gpu, GPUS[gpu], "Ubuntu", "24.04") == release


def test_gfx950_needs_rocm_7() -> None:
    with pytest.raises(RecipeError, match=r"ROCm 6.4.3 does not support mi355x \(gfx950\); on Ubuntu-24 with mi355x "
                                          r"\(gfx950\) these work: 7.0.2, 7.2.0"):
        rp.choose("mi355x", GPUS["mi355x"], "Ubuntu", "24.04", "6.4.3")
    assert rp.choose("mi300x", GPUS["mi300x"], "Ubuntu", "22.04", "6.4.3") == "6.4.3"


def test_os_and_unknown_release_refusals() -> None:
    with pytest.raises(RecipeError, match=r"ROCm 7.2.0 does not support Debian-12; on Debian-12 with mi355x "
                                          r"\(gfx950\) these work: 7.0.2"):
        rp.choose("mi355x", GPUS["mi355x"], "Debian", "12")
    with pytest.raises(RecipeError, match=r"ROCm 9.9 is not in the compatibility table \(6.4.3, 7.0.2, 7.2.0\)"):
        rp.choose("mi300x", GPUS["mi300x"], "Ubuntu", "24.04", "9.9")
    with pytest.raises(RecipeError, match=r"ROCm 7.0.2 does not support Debian-11"):
        rp.choose("mi300x", GPUS["mi300x"], "Debian", "11", "7.0.2")


def test_repositories() -> None:
    apt = rp.repositories("7.2.0", "Ubuntu", "24.04")
    assert (apt["rocm"], apt["amdgpu"], apt["suite"], apt["pin_priority"]) == (
        "https://repo.radeon.com/rocm/apt/7.2.0", "https://repo.radeon.com/amdgpu/7.2.0/ubuntu", "noble", 600)
    assert rp.repositories("7.0.2", "Debian", "12")["suite"] == "jammy"
    rhel = rp.repositories("7.0.2", "RedHat", "9.4")
    assert rhel["format"] == "dnf" and rhel["rocm"] == "https://repo.radeon.com/rocm/rhel9/7.0.2/main"
    mirror = rp.repositories("7.0.2", "Ubuntu", "22.04", rocm_url="http://mirror/rocm/{version}")
    assert mirror["rocm"] == "http://mirror/rocm/7.0.2"
    with pytest.raises(RecipeError, match=r"Ubuntu-20 has no ROCm repository"):
        rp.repositories("7.0.2", "Ubuntu", "20.04")


BASE = {"loaded": "A1", "on_disk": "A1", "changed": False, "cmdline": "ro quiet iommu=pt", "kernel_args": ["iommu=pt"],
        "allow": False, "container": False, "control_node": False}


@pytest.mark.parametrize("kw,action,says", [
    ({}, "none", ""),
    ({"changed": True}, "none", ""),
    ({"changed": True, "on_disk": "B2"}, "refuse", "amdgpu on disk is srcversion B2 and the loaded module is A1"),
    ({"changed": True, "loaded": "", "on_disk": "B2"}, "refuse", "the loaded module is not loaded"),
    ({"on_disk": "B2"}, "none", ""),
    ({"cmdline": "ro quiet"}, "refuse", "the kernel was booted without iommu=pt"),
    ({"cmdline": "ro quiet", "allow": True}, "reboot", "the kernel was booted without iommu=pt"),
    ({"cmdline": "ro quiet", "container": True, "allow": True}, "skip", "no reboot inside a container"),
    ({"cmdline": "ro", "allow": True, "control_node": True}, "refuse", "never rebooted by it"),
])
def test_reboot_policy(kw: dict, action: str, says: str) -> None:
    decision = rp.reboot(**{**BASE, **kw})
    assert decision["action"] == action
    assert says in decision["msg"]
    if action == "refuse" and not kw.get("control_node"):
        assert "rocm_driver_allow_reboot: true" in decision["msg"]


def test_missing_kernel_args_are_exact_tokens() -> None:
    assert rp.missing_kernel_args("BOOT_IMAGE=/vmlinuz iommu=ptx", ["iommu=pt"]) == ["iommu=pt"]
    assert rp.missing_kernel_args("iommu=pt amd_iommu=on", ["amd_iommu=on", "iommu=pt"]) == []
