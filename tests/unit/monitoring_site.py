"""The small site the monitoring tests plan: a single-node H200 FP8 server with local weights, a two-node H200 BF16
instance on an InfiniBand rail, an MI355X node, a router and a monitoring host. Its alert rules are what
tests/unit/promtool/*.yml test with promtool."""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

PAIR = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
        "sglang_instance_group": "pair", "sglang_rack": "B"}
# what fabric_facts reports for a node with one ACTIVE InfiniBand port (mlx5_0) and one that is down (mlx5_1)
FABRIC = {"uverbs_present": True, "devices": [
    {"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]},
    {"name": "mlx5_1", "ports": [{"port": 1, "state": "DOWN", "link_layer": "InfiniBand"}]}]}


def hostvars() -> dict[str, dict[str, Any]]:
    return {
        "a1": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput", "sglang_rack": "A",
               "sglang_model_path": "/srv/models/glm-5.3", "ansible_host": "10.0.0.1"},
        "b1": {**PAIR, "ansible_host": "10.0.0.2", "ansible_facts": {"metalserve_fabric": FABRIC}},
        "b2": {**PAIR, "ansible_host": "10.0.0.3", "ansible_facts": {"metalserve_fabric": FABRIC}},
        "m1": {"sglang_gpu": "mi355x", "sglang_quant": "fp8", "sglang_strategy": "balanced", "sglang_rack": "M",
               "ansible_host": "10.0.0.4"},
        "r1": {"sglang_role": "router", "sglang_router_workers_group": "front", "sglang_rack": "A",
               "ansible_host": "10.0.0.9"},
        "mon": {"sglang_role": "none", "ansible_host": "10.0.0.20"},
    }


def groups() -> dict[str, list[str]]:
    return {"all": sorted(hostvars()), "pair": ["b1", "b2"], "front": ["a1"], "monitoring": ["mon"]}


def site(hv: dict[str, dict[str, Any]] | None = None, gr: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return plan_site(hv or hostvars(), gr or groups())
