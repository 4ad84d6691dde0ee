"""GPU parsers on real H200 captures, an 8-GPU layout in the same format, and documented AMD formats."""
from __future__ import annotations

import json

import pytest

from ansible_collections.metalserve.sglang.plugins.module_utils import gpu_probe
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, REAL_X2, SYNTH_X8, capture_fields, capture_rows

PLATFORMS = load_catalog().gpus


def test_real_h200_query() -> None:
    gpus = gpu_probe.parse_nvidia_query(capture_rows(REAL_X2), capture_fields(REAL_X2))
    assert [(g["index"], g["name"], g["pci_device_id"], g["memory_mib"], g["compute_capability"]) for g in gpus] == [
        (0, "NVIDIA H200", "0x2335", 143771, "9.0"), (1, "NVIDIA H200", "0x2335", 143771, "9.0")]
    assert all(g["persistence_mode"] and g["mig_mode"] == "Disabled" for g in gpus)
    assert gpus[0]["driver_version"] == "580.159.04" and gpus[1]["bus_id"] == "00000000:00:07.0"
    summary = gpu_probe.summarize(gpus, PLATFORMS)
    assert summary == {"count": 2, "gpu_id": "h200", "models": ["NVIDIA H200"], "uniform": True,
                       "memory_mib_per_gpu": 143771}


def test_real_topology_and_nvlink() -> None:
    topo = gpu_probe.parse_topology((REAL_X2 / "topo-m.txt").read_text())
    assert topo["gpus"] == ["GPU0", "GPU1"] and topo["links"] == {"0-1": "NV18"}
    assert topo["affinity"]["GPU1"] == {"cpu": "0-31", "numa": "0"}
    assert gpu_probe.nvlink_summary(topo) == {"pairs": 1, "nvlink_pairs": 1, "all_pairs_connected": True,
                                              "min_links": 18, "links": {"0-1": "NV18"}}


def test_real_xml_and_driver_version() -> None:
    detail = gpu_probe.parse_smi_xml((REAL_X2 / "q.xml").read_text())
    assert (detail["driver_version"], detail["cuda_version"]) == ("580.159.04", "13.0")
    assert [(g["bus_id"], g["architecture"], g["fabric_state"], g["fabric_status"]) for g in detail["gpus"]] == [
        ("00000000:00:06.0", "Hopper", "Completed", "Success"), ("00000000:00:07.0", "Hopper", "Completed", "Success")]
    assert gpu_probe.parse_proc_driver_version((REAL_X2 / "proc-driver-version.txt").read_text()) == {
        "version": "580.159.04", "flavor": "open"}
    proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.172.08  Tue Jul  8 17:53:48 UTC 2025\n"
    assert gpu_probe.parse_proc_driver_version(proprietary) == {"version": "570.172.08", "flavor": "proprietary"}
    assert gpu_probe.parse_proc_driver_version("") == {"version": None, "flavor": None}


def test_real_pci_listing() -> None:
    entries = [dict(zip(("bdf", "vendor", "device", "class", "numa_node"), line.split()))
               for line in (REAL_X2 / "pci-devices.txt").read_text().splitlines()]
    pci = gpu_probe.parse_pci_listing(entries)
    assert [(g["bus_id"], g["vendor"], g["pci_device_id"]) for g in pci["gpus"]] == [
        ("0000:00:06.0", "nvidia", "0x2335"), ("0000:00:07.0", "nvidia", "0x2335")]
    assert pci["nvswitches"] == []
    assert gpu_probe.summarize(pci["gpus"], PLATFORMS)["gpu_id"] == "h200"  # by PCI id, with no driver


def test_eight_gpu_layout() -> None:
    gpus = gpu_probe.parse_nvidia_query(capture_rows(SYNTH_X8), capture_fields(SYNTH_X8))
    assert gpu_probe.summarize(gpus, PLATFORMS)["count"] == 8
    topo = gpu_probe.parse_topology((SYNTH_X8 / "topo-m.txt").read_text())
    nvlink = gpu_probe.nvlink_summary(topo)
    assert (nvlink["pairs"], nvlink["nvlink_pairs"], nvlink["all_pairs_connected"], nvlink["min_links"]) == (
        28, 28, True, 18)
    assert topo["nic_names"] == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}
    assert topo["gpu_nic"]["GPU5"]["NIC2"] == "PIX" and topo["affinity"]["GPU5"]["numa"] == "1"
    assert len(gpu_probe.parse_smi_xml((SYNTH_X8 / "q.xml").read_text())["gpus"]) == 8


def test_partial_nvlink_mesh() -> None:
    text = (SYNTH_X8 / "topo-m.txt").read_text().replace("GPU3\tNV18", "GPU3\tSYS", 1)
    assert gpu_probe.nvlink_summary(gpu_probe.parse_topology(text))["all_pairs_connected"] is False


def test_mixed_models_on_one_node() -> None:
    rows = capture_rows(REAL_X2).splitlines()
    rows[1] = rows[1].replace("NVIDIA H200", "NVIDIA H100 80GB HBM3").replace("0x233510DE", "0x233010DE")
    gpus = gpu_probe.parse_nvidia_query("\n".join(rows), capture_fields(REAL_X2))
    summary = gpu_probe.summarize(gpus, PLATFORMS)
    assert (summary["gpu_id"], summary["uniform"], summary["models"]) == (
        "mixed", False, ["NVIDIA H100 80GB HBM3", "NVIDIA H200"])


@pytest.mark.parametrize("name,gpu_id,gfx,mib,driver", [
    ("mi355x-x8-amd-smi-7.json", "mi355x", "gfx950", 294896, "6.14.14"),
    ("mi300x-x8-amd-smi-6.json", "mi300x", "gfx942", 196592, "6.7.0"),
])
def test_amd_smi_static_both_forms(name: str, gpu_id: str, gfx: str, mib: int, driver: str) -> None:
    gpus = gpu_probe.parse_amd_smi_static((FIXTURES / "amd" / name).read_text())
    assert len(gpus) == 8 and {g["gfx"] for g in gpus} == {gfx} and gpus[0]["driver_version"] == driver
    summary = gpu_probe.summarize(gpus, PLATFORMS)
    assert (summary["gpu_id"], summary["count"], summary["memory_mib_per_gpu"]) == (gpu_id, 8, mib)


def test_rocm_smi_json() -> None:
    parsed = gpu_probe.parse_rocm_smi((FIXTURES / "amd" / "mi325x-x8-rocm-smi.json").read_text())
    assert parsed["driver_version"] == "6.10.5"
    summary = gpu_probe.summarize(parsed["gpus"], PLATFORMS)
    assert (summary["gpu_id"], summary["count"], summary["memory_mib_per_gpu"]) == ("mi325x", 8, 262144)


def test_unknown_gpu_and_sysfs_amd_without_driver() -> None:
    assert gpu_probe.classify({"name": "NVIDIA L40S", "pci_device_id": "0x26b9"}, PLATFORMS) == "unknown"
    pci = gpu_probe.parse_pci_listing([
        {"bdf": "0000:05:00.0", "vendor": "0x1002", "device": "0x74a1", "class": "0x120000", "numa_node": "0"},
        {"bdf": "0000:c1:00.0", "vendor": "0x1002", "device": "0x1478", "class": "0x060400", "numa_node": "1"},
        {"bdf": "0000:e1:00.0", "vendor": "0x1a03", "device": "0x2000", "class": "0x030000", "numa_node": "1"},
    ])
    assert [(g["vendor"], g["pci_device_id"], g["numa_node"]) for g in pci["gpus"]] == [("amd", "0x74a1", 0)]
    assert gpu_probe.summarize(pci["gpus"], PLATFORMS)["gpu_id"] == "mi300x"


def test_nvswitch_on_the_pci_bus() -> None:
    pci = gpu_probe.parse_pci_listing(
        [{"bdf": f"0000:{b}:00.0", "vendor": "0x10de", "device": "0x22a3", "class": "0x068000"} for b in ("05", "06")])
    assert pci["nvswitches"] == ["0000:05:00.0", "0000:06:00.0"] and pci["gpus"] == []


def test_no_gpu_at_all() -> None:
    assert gpu_probe.summarize([], PLATFORMS) == {"count": 0, "gpu_id": None, "models": [], "uniform": True,
                                                  "memory_mib_per_gpu": None}
    assert gpu_probe.parse_topology("")["gpus"] == []
    assert json.loads("[]") == [] and gpu_probe.parse_amd_smi_static("[]") == []
