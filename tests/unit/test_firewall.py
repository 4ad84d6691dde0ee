"""The instance firewall: guarded ports, member sets, and the refusal when a member has no address."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import firewall
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan

PAIR = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
        "sglang_instance_group": "pair"}


def plan() -> dict:
    hostvars = {"n1": {**PAIR, "ansible_host": "10.0.0.1"}, "n2": {**PAIR, "ansible_host": "10.0.0.2"}}
    return host_plan("n1", hostvars, {"all": ["n1", "n2"], "pair": ["n1", "n2"]})


def test_guarded_ports_are_the_rendezvous_and_sglang_internal_block() -> None:
    # SGLang 0.5.23 PortArgs.init_new, multi-node: port_base = the rendezvous port + 1, then detokenizer (+2), rpc
    # (+3), metrics (+4), scheduler input (+5), load collector (+6, multi-node only); the rendezvous port itself is
    # torch.distributed's store
    assert firewall.guarded_ports(plan()) == [20000, 20001, 20002, 20003, 20004, 20005, 20006]


def test_ruleset_drops_non_members_only_and_replaces_its_own_table() -> None:
    text = firewall.ruleset(plan(), {"n1": ["10.0.0.1", "n1.example"], "n2": ["10.0.0.2", "fd00::2"]})
    assert "table inet metalserve_sglang\ndelete table inet metalserve_sglang\ntable inet metalserve_sglang {" in text
    assert "elements = { 10.0.0.1, 10.0.0.2 }" in text and "elements = { fd00::2 }" in text
    assert ("meta nfproto ipv4 tcp dport { 20000, 20001, 20002, 20003, 20004, 20005, 20006 } ip saddr != @members_v4 drop"
            in text)
    assert "ip6 saddr != @members_v6 drop" in text
    assert "policy accept" in text and "30000" not in text.split("dport")[1]  # the API port stays open


def test_without_ipv6_members_v6_traffic_to_those_ports_is_dropped() -> None:
    text = firewall.ruleset(plan(), {"n1": ["10.0.0.1"], "n2": ["10.0.0.2"]})
    assert "members_v6" not in text and "meta nfproto ipv6 tcp dport { 20000," in text and text.count("drop") == 2


def test_a_member_without_an_address_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no IP address known for instance member\(s\) n2"):
        firewall.ruleset(plan(), {"n1": ["10.0.0.1"], "n2": ["n2.example"]})


def test_overlapping_sources_are_merged() -> None:
    """nft refuses an interval set with overlapping elements ("conflicting intervals specified"): a monitoring host
    inside an allowed network is one element, the network."""
    v4, v6 = firewall.source_networks(["10.0.0.20", "10.0.0.0/24", "10.0.1.5", "fd00::1", "fd00::/64", "n1.example"])
    assert v4 == ["10.0.0.0/24", "10.0.1.5"] and v6 == ["fd00::/64"]
    # neighbours are not merged into a network: a set of members keeps addresses (no interval flag)
    assert firewall.source_networks(["10.0.0.3", "10.0.0.2", "10.0.0.2"]) == (["10.0.0.2", "10.0.0.3"], [])


def test_a_table_survives_a_reload_of_nftables() -> None:
    """Debian's nftables.service reloads with `ExecReload=/usr/sbin/nft -f /etc/nftables.conf`, and the packaged
    /etc/nftables.conf starts with `flush ruleset` (nftables 1.0.6-2+deb12u2): our table's unit must load its file
    again on that reload (ReloadPropagatedFrom), not only on a restart (PartOf)."""
    text = firewall.table_unit(firewall.SGLANG)
    unit = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    assert unit["ReloadPropagatedFrom"] == "nftables.service" and unit["PartOf"] == "nftables.service"
    assert unit["ExecReload"] == unit["ExecStart"] == f"/usr/sbin/nft -f {firewall.SGLANG.file}"
