"""NCCL/GLOO values and PD transfer HCAs from fabric facts: IB, RoCE, two rails, ports down, no HCA."""
from __future__ import annotations

from pathlib import Path

from ansible_collections.metalserve.sglang.plugins.module_utils import fabric_probe
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.fabric_env import fabric_settings
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan
from ansible_collections.metalserve.sglang.tests.helpers import ib_tree

ROCE = {3: ("0000:0000:0000:0000:0000:ffff:0a0a:020b", "RoCE v2", "ens1f0np0")}


def facts(tmp_path: Path, devices: dict) -> dict:
    return fabric_probe.read_fabric(str(ib_tree(tmp_path, devices)))


def test_single_node_needs_nothing(tmp_path: Path) -> None:
    fabric = facts(tmp_path, {"mlx5_0": {"ports": {1: {"state": "ACTIVE"}}}})
    settings = fabric_settings(fabric, multi=False, pd=False, interface="eth0")
    assert settings == {"env": {}, "pd_ib_device": None, "warnings": []}


def test_two_infiniband_rails(tmp_path: Path) -> None:
    fabric = facts(tmp_path, {"mlx5_0": {"ports": {1: {"state": "ACTIVE"}}}, "mlx5_1": {"ports": {1: {"state": "ACTIVE"}}},
                              "mlx5_2": {"ports": {1: {"state": "DOWN"}}}})
    out = fabric_settings(fabric, multi=True, pd=False, interface="ens1f0")
    assert out["env"] == {"NCCL_SOCKET_IFNAME": "ens1f0", "GLOO_SOCKET_IFNAME": "ens1f0",
                          "NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}
    pd = fabric_settings(fabric, multi=False, pd=True, interface=None)
    assert pd["pd_ib_device"] == "mlx5_0,mlx5_1"  # two HCAs: auto-detection is ambiguous
    assert fabric_settings(fabric, multi=False, pd=True, interface=None, ib_device_set=True)["pd_ib_device"] is None
    named = fabric_settings(fabric, multi=True, pd=True, interface=None, hcas=["mlx5_1", "mlx5_2"])
    assert named["env"]["NCCL_IB_HCA"] == "=mlx5_1:1" and named["pd_ib_device"] == "mlx5_1"
    assert named["warnings"] == ["sglang_ib_hcas names mlx5_2, which have no ACTIVE port here"]


def test_one_hca_leaves_mooncake_to_auto_detect(tmp_path: Path) -> None:
    fabric = facts(tmp_path, {"mlx5_0": {"ports": {1: {"state": "ACTIVE"}}}})
    assert fabric_settings(fabric, multi=False, pd=True, interface=None)["pd_ib_device"] is None


def test_roce_uses_the_discovered_gid_index(tmp_path: Path) -> None:
    fabric = facts(tmp_path, {"mlx5_0": {"ports": {1: {"state": "ACTIVE", "layer": "Ethernet", "gids": ROCE}}}})
    out = fabric_settings(fabric, multi=True, pd=False, interface="ens1f0np0")
    assert out["env"]["NCCL_IB_GID_INDEX"] == "3" and out["env"]["NCCL_IB_HCA"] == "=mlx5_0:1"
    bare = facts(tmp_path / "b", {"mlx5_0": {"ports": {1: {"state": "ACTIVE", "layer": "Ethernet"}}}})
    out = fabric_settings(bare, multi=True, pd=False, interface=None)
    assert out["env"]["NCCL_IB_GID_INDEX"] == "3" and "no RoCE v2 GID with an IPv4 address" in out["warnings"][0]


def test_ports_down_or_no_hca_warn(tmp_path: Path) -> None:
    down = facts(tmp_path, {"mlx5_0": {"ports": {1: {"state": "DOWN"}}}})
    out = fabric_settings(down, multi=True, pd=False, interface="eth0")
    assert "NCCL_IB_HCA" not in out["env"] and out["warnings"] == [
        "no ACTIVE InfiniBand/RoCE port on the chosen rail: NCCL and Mooncake will use TCP"]
    assert fabric_settings(facts(tmp_path / "none", {}), multi=False, pd=True, interface=None)["warnings"]


def test_the_plan_takes_fabric_values_and_the_operator_wins(tmp_path: Path) -> None:
    fabric = facts(tmp_path, {"mlx5_0": {"ports": {1: {"state": "ACTIVE"}}}, "mlx5_1": {"ports": {1: {"state": "ACTIVE"}}}})
    pd = {"sglang_gpu": "h200", "sglang_strategy": "high-throughput", "sglang_pd": {"role": "prefill"},
          "ansible_facts": {"metalserve_fabric": fabric, "default_ipv4": {"interface": "bond0"}}}
    hostvars = {"p": pd, "d": {**pd, "sglang_pd": {"role": "decode"}, "sglang_env": {"NCCL_IB_HCA": "mlx5_1"}},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "g"}}
    prefill, decode = host_plan("p", hostvars, {"g": ["p", "d"]}), host_plan("d", hostvars, {"g": ["p", "d"]})
    assert prefill["env"]["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1" and prefill["env"]["GLOO_SOCKET_IFNAME"] == "bond0"
    assert prefill["argv"][prefill["argv"].index("--disaggregation-ib-device") + 1] == "mlx5_0,mlx5_1"
    assert decode["env"]["NCCL_IB_HCA"] == "mlx5_1"  # sglang_env wins over the facts
