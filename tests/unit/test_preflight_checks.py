"""Preflight on real H200 facts (x2 capture), an 8-GPU layout, AMD and broken nodes; exact messages."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.module_utils import gpu_probe

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import preflight as pc
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, REAL_X2, SYNTH_X8, raw_from_capture

CATALOG = load_catalog()
X2 = gpu_probe.compose(raw_from_capture(REAL_X2), CATALOG.gpus)
X8 = gpu_probe.compose(raw_from_capture(SYNTH_X8), CATALOG.gpus)
MI355 = gpu_probe.compose({"amd_smi_static": (FIXTURES / "amd" / "mi355x-x8-amd-smi-7.json").read_text()},
                          CATALOG.gpus)
NO_GPU = gpu_probe.compose({}, CATALOG.gpus)
IB_UP = {"device_count": 4, "active_ports": ["mlx5_0:1", "mlx5_1:1"], "memlock": {"soft": -1}, "resolved": {}}
NO_IB = {"device_count": 0, "active_ports": [], "memlock": {"soft": -1}, "resolved": {}}
DISK = [{"mount": "/", "size_available": 137_420_980_224}, {"mount": "/nvme", "size_available": 3_500_000_000_000}]
TINY = [{"id": "tiny-moe", "checkpoints": {"bf16": {"id": "example-org/Tiny-MoE", "size_gb": 30}},
         "images": {"h200": {"ref": "registry.local/sglang:v0.5.23-cu129"}},
         "cells": [{"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 1, "verified": True,
                    "flags": {"--tp-size": 2}}]}]


def run(hostvars: dict[str, dict[str, Any]], facts: dict[str, dict[str, Any]], host: str,
        groups: dict[str, list[str]] | None = None, limits: pc.Limits | None = None) -> pc.Report:
    plan = site_plan.host_plan(host, hostvars, groups or {})
    catalog = load_catalog(hostvars[host].get("sglang_recipes"))
    return pc.check_host(plan, facts, catalog, limits or pc.Limits())


def node(gpu: dict, fabric: dict | None = None, path: str = "/nvme/glm", staged: bool = False) -> dict[str, Any]:
    return {"gpu": gpu, "fabric": fabric or NO_IB, "mounts": DISK, "weights_path": path, "weights_staged": staged}


def test_real_h200_x2_refuses_the_tp8_recipe_with_one_message() -> None:
    r = run({"n": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}},
            {"n": node(X2, path="/var/lib/sglang/models/zai-org/GLM-5.3")}, "n")
    assert pc.report_text([r], {}) == (
        "preflight: 1 of 1 host(s) cannot serve what the inventory asks:\n"
        "n (glm-5.3 h200/fp8/high-throughput, 1 node, 8 GPUs per node):\n"
        "  - the recipe needs 8 h200 GPUs per node (TP8 on one node); this node has 2 (NVIDIA H200). Fix: pick a "
        "recipe that fits this node (listed below) or run this one on a node with 8 h200 GPUs\n"
        "  - /var/lib/sglang/models/zai-org/GLM-5.3 (on /) has 137 GB free; the zai-org/GLM-5.3 weights need "
        "~793 GB. Fix: free space there, or point sglang_model_path at a larger node-local disk\n"
        "  Recipes this node can run: none: the smallest glm-5.3 recipe on h200 needs 8 GPUs per node; this node "
        "has 2. A site recipe (sglang_recipes) can add one that fits")


def test_real_h200_x2_passes_a_site_tp2_recipe_and_it_is_offered() -> None:
    site = {"sglang_gpu": "h200", "sglang_model": "tiny-moe", "sglang_quant": "bf16", "sglang_recipes": TINY}
    r = run({"n": site}, {"n": node(X2)}, "n")
    assert r.problems == [] and r.warnings == []
    refused = run({"n": {**site, "sglang_model": "glm-5.3", "sglang_quant": "fp8", "sglang_strategy": "low-latency"}},
                  {"n": node(X2, staged=True)}, "n")
    assert refused.alternatives == ["tiny-moe h200/bf16/balanced (TP2, from sglang_recipes)"]


@pytest.mark.parametrize("strategy", ["low-latency", "high-throughput"])
def test_eight_h200_hold_every_fp8_cell(strategy: str) -> None:
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": strategy}}, {"n": node(X8, staged=True)}, "n")
    assert (r.problems, r.warnings) == ([], [])


def test_bf16_pair_head_reports_only_the_missing_member() -> None:
    pair = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
            "sglang_instance_group": "pair"}
    hostvars = {"a": {**pair, "ansible_host": "10.0.0.1"}, "b": {**pair, "ansible_host": "10.0.0.2"}}
    r = run(hostvars, {"a": node(X8, IB_UP, staged=True)}, "a", {"pair": ["a", "b"]})
    assert r.problems == [
        "instance pair has 2 members (a, b); no facts from b (not in this run, or unreachable). Fix: run preflight "
        "on every member of sglang_instance_group together"]


def test_members_must_match_and_the_head_must_resolve() -> None:
    pair = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
            "sglang_instance_group": "pair"}
    hostvars = {"a": {**pair, "ansible_host": "head.example"}, "b": pair}
    older = copy.deepcopy(X8)
    older["driver_version"] = "570.172.08"
    facts = {"a": node(X8, IB_UP, staged=True), "b": node(older, IB_UP, staged=True)}
    r = run(hostvars, facts, "b", {"pair": ["a", "b"]})
    assert r.problems == [
        "driver differs from member a: 570.172.08 here, 580.159.04 there. Fix: give every member of the instance "
        "the same hardware and driver",
        "the head address head.example does not resolve on this node. Fix: fix DNS or /etc/hosts, or set "
        "sglang_dist_address on the head to an IP"]
    facts["b"]["fabric"] = dict(IB_UP, resolved={"head.example": ["10.0.0.1"]})
    facts["b"]["gpu"] = X8
    assert run(hostvars, facts, "b", {"pair": ["a", "b"]}).problems == []


def test_no_gpu_found_is_an_explanation() -> None:
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}}, {"n": node(NO_GPU, staged=True)}, "n")
    assert r.problems == [
        "no GPU found: nvidia-smi, amd-smi and rocm-smi gave no GPU and the PCI bus shows no NVIDIA or AMD GPU. Fix: "
        "run this on a GPU node (is the GPU passed through to this machine?), or set sglang_role: router or none for "
        "hosts that serve no model"]
    assert r.alternatives == []


def test_wrong_gpu_in_the_inventory() -> None:
    r = run({"n": {"sglang_gpu": "b200", "sglang_strategy": "high-throughput"}}, {"n": node(X8, staged=True)}, "n")
    assert r.problems == ["sglang_gpu is b200 but this node has 8x h200 (NVIDIA H200). Fix: set sglang_gpu: h200 for "
                          "this host or its rack (or leave it unset: preflight then takes it from the node)"]
    assert "glm-5.3 h200/fp8/high-throughput (TP8)" in r.alternatives


def test_mixed_and_unknown_gpus() -> None:
    raw = raw_from_capture(REAL_X2)
    rows = raw["nvidia_query"].splitlines()
    rows[1] = rows[1].replace("NVIDIA H200", "NVIDIA H100 80GB HBM3").replace("0x233510DE", "0x233010DE")
    mixed = gpu_probe.compose({**raw, "nvidia_query": "\n".join(rows)}, CATALOG.gpus)
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}}, {"n": node(mixed, staged=True)}, "n")
    assert r.problems[0].startswith("mixed GPU models on one node (NVIDIA H100 80GB HBM3, NVIDIA H200)")
    unknown = gpu_probe.compose({**raw, "nvidia_query": raw["nvidia_query"].replace("NVIDIA H200", "NVIDIA L40S")
                                 .replace("0x233510DE", "0x26B910DE")}, CATALOG.gpus)
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}}, {"n": node(unknown, staged=True)}, "n")
    assert r.problems[0].startswith("the GPUs (NVIDIA L40S) are not in the GPU platform table. Fix: add them with "
                                    "sglang_gpu_platforms")


def test_driver_missing_gpus_on_the_pci_bus_only() -> None:
    raw = raw_from_capture(REAL_X2)
    note = "nvidia-smi --query-gpu failed (rc 9): NVIDIA-SMI has failed because it couldn't communicate"
    facts = gpu_probe.compose({"pci": raw["pci"], "notes": [note]}, CATALOG.gpus)
    assert (facts["source"], facts["gpu_id"], facts["count"]) == ("sysfs", "h200", 2)
    r = run({"n": {"sglang_gpu": "h200", "sglang_model": "tiny-moe", "sglang_quant": "bf16", "sglang_recipes": TINY}},
            {"n": node(facts, staged=True)}, "n")
    assert len(r.problems) == 1 and r.problems[0].startswith("2 nvidia GPU(s) are on the PCI bus but no driver answers")


def test_gpu_health_problems() -> None:
    sick = copy.deepcopy(X8)
    sick["gpus"][3]["mig_mode"] = "Enabled"
    sick["gpus"][5]["fabric_state"], sick["gpus"][5]["fabric_status"] = "In Progress", "N/A"
    sick["gpus"][0]["persistence_mode"] = False
    sick["nvswitch"] = {"pci_count": 4, "present": True}
    sick["secure_boot"], sick["kernel_modules"] = True, []
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}}, {"n": node(sick, staged=True)}, "n")
    assert [p.split(" Fix:")[0] for p in r.problems] == [
        "MIG is enabled on GPU 3; SGLang needs whole GPUs.",
        "the GPUs are not registered with the NVLink fabric (GPU5=In Progress/N/A).",
        "NVSwitches are present but nv-fabricmanager is not running.",
        "Secure Boot is on and the nvidia kernel module is neither loaded nor signed."]
    assert r.warnings == ["persistence mode is off on some GPUs; the nvidia_driver role enables nvidia-persistenced"]
    sick.update(fabric_manager={"running": True, "version": "580.126.09"})
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}}, {"n": node(sick, staged=True)}, "n")
    assert "Fabric Manager 580.126.09 does not match driver 580.159.04. Fix: install the Fabric Manager package of " \
           "exactly the driver's version and hold both" in r.problems


def test_blackwell_needs_open_modules() -> None:
    b300 = copy.deepcopy(X8)
    for g in b300["gpus"]:
        g["name"], g["pci_device_id"] = "NVIDIA B300 SXM6 AC", "0x3182"
    b300 = gpu_probe.compose({"nvidia_query": "\n".join(
        line.replace("NVIDIA H200", "NVIDIA B300 SXM6 AC").replace("143771", "275040").replace("0x233510DE", "0x318210DE")
        for line in raw_from_capture(SYNTH_X8)["nvidia_query"].splitlines()),
        "proc_version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Release Build\n"}, CATALOG.gpus)
    assert (b300["gpu_id"], b300["driver_flavor"]) == ("b300", "proprietary")
    r = run({"n": {"sglang_gpu": "b300", "sglang_quant": "bf16", "sglang_strategy": "balanced"}},
            {"n": node(b300, staged=True)}, "n")
    assert [p.split(" Fix:")[0] for p in r.problems] == [
        "NVIDIA B300 needs the open GPU kernel modules; the proprietary driver is loaded."]


def test_pd_needs_an_active_rdma_port_unless_told_otherwise() -> None:
    pd = {"sglang_gpu": "h200", "sglang_strategy": "high-throughput", "sglang_pd": {"role": "prefill"}}
    hostvars = {"p": pd, "d": {**pd, "sglang_pd": {"role": "decode"}},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "pd"}}
    groups = {"pd": ["p", "d"]}
    r = run(hostvars, {"p": node(X8, NO_IB, staged=True)}, "p", groups)
    assert r.problems == ["PD disaggregation needs an ACTIVE InfiniBand/RoCE port; no HCA under /sys/class/infiniband. "
                          "Fix: cable/enable the HCA ports (rdma role), or set preflight_require_rdma: false to accept "
                          "TCP"]
    down = dict(NO_IB, device_count=2)
    r = run(hostvars, {"p": node(X8, down, staged=True)}, "p", groups, pc.Limits(require_rdma=False))
    assert r.problems == [] and r.warnings == [
        "PD disaggregation needs an ACTIVE InfiniBand/RoCE port; 2 HCA(s), none ACTIVE. NCCL and Mooncake will fall "
        "back to TCP."]


def test_amd_mi355x_holds_fp8_and_bf16() -> None:
    for quant in ("fp8", "bf16"):
        r = run({"n": {"sglang_gpu": "mi355x", "sglang_quant": quant, "sglang_strategy": "balanced"}},
                {"n": node(MI355, staged=True)}, "n")
        assert r.problems == [], r.problems


def test_vram_check_against_the_memory_the_node_reports() -> None:
    """The plan judges a checkpoint against the GPU's memory in data/gpus.yml (site coherence: the bf16 weights on one
    H200 node are refused before any node is read); preflight judges it against what the node's GPUs report, here
    80 GiB each (a node that is not the H200 the inventory says)."""
    small = {**X8, "memory_mib_per_gpu": 81920}
    r = run({"n": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}},
            {"n": node(small, staged=True)}, "n")
    assert [p.split(" Fix:")[0] for p in r.problems] == [
        "the fp8 checkpoint (zai-org/GLM-5.3, ~755 GB) needs ~831 GB of GPU memory with 10% headroom; 8 GPU(s) "
        "x 86 GB give 687 GB."]


def test_disk_uses_the_mount_holding_the_path() -> None:
    assert pc.free_bytes(DISK, "/nvme/models/x") == ("/nvme", 3_500_000_000_000)
    assert pc.free_bytes(DISK, "/nvmexyz") == ("/", 137_420_980_224)
    r = run({"n": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}}, {"n": node(X8, path="/nvme/models/glm")}, "n")
    assert r.problems == []


def test_report_lists_plan_errors_too() -> None:
    text = pc.report_text([], {"x": "sglang_gpu: 'h100' is not a GPU the recipes know"})
    assert text == ("preflight: 1 of 1 host(s) cannot serve what the inventory asks:\n"
                    "x: the inventory does not describe a recipe: sglang_gpu: 'h100' is not a GPU the recipes know")
