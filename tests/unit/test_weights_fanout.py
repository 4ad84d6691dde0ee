"""A rack's weight fan-out: the leader's read-only rsync module admits exactly the peers, from the side of the network
they fetch on (the leader is reached at its sglang_dist_interface address, so a peer connects from its own)."""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site


def facts(default: str, ib: str) -> dict[str, Any]:
    return {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04",
            "distribution_release": "noble", "architecture": "x86_64", "os_family": "Debian",
            "default_ipv4": {"address": default}, "ib0": {"ipv4": {"address": ib}}}


Q = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced", "sglang_install_method": "uv",
     "sglang_model_path": "/models/Qwen3.8-27B", "model_weights_fanout_group": "rack", "sglang_dist_interface": "ib0"}


def test_the_allow_list_admits_the_address_a_peer_fetches_from() -> None:
    hv = {"a": {**Q, "ansible_host": "10.0.0.1", "ansible_facts": facts("10.0.0.1", "192.168.1.1")},
          "b": {**Q, "ansible_host": "10.0.0.2", "ansible_facts": facts("10.0.0.2", "192.168.1.2")},
          "c": {**Q, "ansible_host": "10.0.0.3", "ansible_facts": facts("10.0.0.3", "192.168.1.3")}}
    site = plan_site(hv, {"all": sorted(hv), "rack": ["a", "b", "c"]})
    assert site["errors"] == {}
    assert site["plans"]["b"]["stages"]["weights"]["settings"]["fanout_leader_address"] == "192.168.1.1"
    conf = site["plans"]["a"]["stages"]["weights"]["files"]["fanout_config"]["content"]
    allow = [line.strip() for line in conf.splitlines() if "hosts allow" in line]
    # b and c fetch from 192.168.1.1 over ib0, from 192.168.1.2 and .3; their default IPv4 may carry it too
    assert allow == ["hosts allow = 192.168.1.2 10.0.0.2 192.168.1.3 10.0.0.3 127.0.0.1"]
    assert "hosts deny = *" in conf
