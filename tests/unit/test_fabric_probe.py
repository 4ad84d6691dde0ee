"""Fabric facts from sysfs trees built to the kernel's documented layout: IB rails, RoCE, ports down, none."""
from __future__ import annotations

from pathlib import Path

from ansible_collections.metalserve.sglang.plugins.module_utils import fabric_probe
from ansible_collections.metalserve.sglang.tests.helpers import ib_tree

LINK_LOCAL = "fe80:0000:0000:0000:0c42:a103:00ab:cd01"
ROCE_GIDS = {0: (LINK_LOCAL, "IB/RoCE v1", "ens1f0np0"), 1: (LINK_LOCAL, "RoCE v2", "ens1f0np0"),
             2: ("0000:0000:0000:0000:0000:ffff:0a0a:020b", "IB/RoCE v1", "ens1f0np0"),
             3: ("0000:0000:0000:0000:0000:ffff:0a0a:020b", "RoCE v2", "ens1f0np0")}


def test_two_infiniband_rails(tmp_path: Path) -> None:
    ib_tree(tmp_path, {
        "mlx5_0": {"numa": 0, "pci": "0000:17:00.0", "netdevs": ["ibp23s0"], "ports": {1: {"state": "ACTIVE", "lid": "0x12"}}},
        "mlx5_1": {"numa": 1, "pci": "0000:9a:00.0", "netdevs": ["ibp154s0"], "ports": {1: {"state": "ACTIVE"}}},
    }, dev_entries=("uverbs0", "uverbs1", "rdma_cm", "umad0"))
    fabric = fabric_probe.read_fabric(str(tmp_path))
    assert fabric["active_ports"] == ["mlx5_0:1", "mlx5_1:1"] and fabric["link_layers"] == ["InfiniBand"]
    assert fabric["uverbs_present"] is True and fabric["device_count"] == 2
    dev = fabric["devices"][1]
    assert (dev["name"], dev["numa_node"], dev["pci_address"], dev["netdevs"]) == (
        "mlx5_1", 1, "0000:9a:00.0", ["ibp154s0"])
    port = fabric["devices"][0]["ports"][0]
    assert (port["state"], port["phys_state"], port["rate"], port["lid"], port["roce_v2_gid_index"]) == (
        "ACTIVE", "LinkUp", "400 Gb/sec (4X NDR)", "0x12", None)


def test_roce_with_gid_index_3(tmp_path: Path) -> None:
    ib_tree(tmp_path, {"mlx5_0": {"numa": 0, "netdevs": ["ens1f0np0"], "ports": {1: {
        "state": "ACTIVE", "layer": "Ethernet", "rate": "200 Gb/sec (4X HDR)", "gids": ROCE_GIDS}}}})
    port = fabric_probe.read_fabric(str(tmp_path))["devices"][0]["ports"][0]
    assert (port["link_layer"], port["roce_v2_gid_index"], port["netdevs"], port["ipv4"]) == (
        "Ethernet", 3, ["ens1f0np0"], ["10.10.2.11"])


def test_ports_down(tmp_path: Path) -> None:
    ib_tree(tmp_path, {"mlx5_0": {"ports": {1: {"state": "DOWN"}}}, "mlx5_1": {"ports": {1: {"state": "INIT"}}}})
    fabric = fabric_probe.read_fabric(str(tmp_path))
    assert fabric["active_ports"] == [] and fabric["device_count"] == 2
    assert [p["state"] for d in fabric["devices"] for p in d["ports"]] == ["DOWN", "INIT"]
    assert fabric["devices"][0]["ports"][0]["phys_state"] == "Disabled"
    assert fabric["devices"][0]["numa_node"] is None  # numa_node -1 means unknown


def test_no_hca(tmp_path: Path) -> None:
    fabric = fabric_probe.read_fabric(str(tmp_path))
    assert fabric == {"devices": [], "device_count": 0, "active_ports": [], "link_layers": [], "dev_infiniband": [],
                      "uverbs_present": False}


def test_gid_helpers() -> None:
    assert fabric_probe.gid_ipv4("0000:0000:0000:0000:0000:ffff:c0a8:0101") == "192.168.1.1"
    assert fabric_probe.gid_ipv4(LINK_LOCAL) is None
    gids = [{"index": 1, "type": "RoCE v2", "ipv4": None}, {"index": 5, "type": "RoCE v2", "ipv4": "10.0.0.1"}]
    assert fabric_probe.roce_v2_gid_index(gids) == 5
