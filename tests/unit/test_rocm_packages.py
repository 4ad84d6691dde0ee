"""ROCm logic beyond the conformance table: refusals and their messages, mirrors, the release move and the reboot."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

GPUS = load_catalog().gpus


def gpu(name: str) -> dict:
    return dict(GPUS[name], id=name)


def test_refusals_name_what_works() -> None:
    with pytest.raises(RecipeError, match=r"ROCm 6.4.3 does not support mi355x on Ubuntu-24; on Ubuntu-24 with mi355x "
                                          r"\(gfx950\) these work: 7.0.2, 7.1.1, 7.2.0, 7.2.1, 7.2.3, 7.2.4"):
        rp.choose("mi355x", gpu("mi355x"), "Ubuntu", "24.04", "6.4.3")
    with pytest.raises(RecipeError, match=r"ROCm 9.9 is not in the compatibility table \(6.4.3, 6.4.4, 7.0.2"):
        rp.choose("mi300x", gpu("mi300x"), "Ubuntu", "24.04", "9.9")
    with pytest.raises(RecipeError, match=r"ROCm 7.2.4 does not support mi300x on Debian-11; .* these work: none"):
        rp.choose("mi300x", gpu("mi300x"), "Debian", "11", "7.2.4")
    with pytest.raises(RecipeError, match=r"rocm_driver_gpu: mi9000 is not in AMD's support table"):
        rp.choose("mi9000", {"gfx": "gfx999"}, "Ubuntu", "24.04", "7.2.4")
    with pytest.raises(RecipeError, match=r"Ubuntu-20 has no ROCm repository"):
        rp.repositories("7.2.4", "Ubuntu", "20.04")


def test_mirrors_take_the_folder_names() -> None:
    repo = rp.repositories("7.2.0", "Ubuntu", "22.04", rocm_url="http://mirror/rocm/{dir}",
                           amdgpu_url="http://mirror/amdgpu/{driver}/ubuntu", graphics_url="http://mirror/g/{version}")
    assert (repo["rocm"], repo["amdgpu"], repo["graphics"]) == ("http://mirror/rocm/7.2", "http://mirror/amdgpu/30.30/ubuntu",
                                                                "http://mirror/g/7.2")
    rhel = rp.repositories("7.2.4", "Rocky", "9.6", amdgpu_url="http://mirror/amdgpu/{driver}/el/{el}")
    assert rhel["amdgpu"] == "http://mirror/amdgpu/30.30.4/el/9.6"


def test_nothing_to_remove_on_a_fresh_node_or_the_same_release() -> None:
    assert rp.remove_first({}, "7.2.4") == []
    assert rp.remove_first({"rocm-core": ["7.2.4.70204-93~22.04"]}, "7.2.4") == []
    within_7 = rp.remove_first({"rocm-core": ["7.2.3.70203-90~22.04"],
                                "amdgpu-dkms": ["1:6.16.13.30300300-2327507.22.04"]}, "7.2.4")
    # 30.30.3 -> 30.30.4: another amdgpu folder; the old DKMS driver goes too (state present would keep it)
    assert within_7 == ["rocm-core", "amdgpu-dkms"]


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
