"""Instances from inventory groups: ranks, heads, members, PD routers, and the errors around them."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan, plan_site
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

PAIR = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
        "sglang_instance_group": "pair", "sglang_dist_interface": "ens1f0"}
PD = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}


def site() -> tuple[dict, dict]:
    hostvars = {
        "n2": {**PAIR, "ansible_host": "10.0.0.2"},
        "n1": {**PAIR, "ansible_host": "10.0.0.1"},
        "p1": {**PD, "sglang_pd": {"role": "prefill"}, "ansible_host": "10.0.1.1"},
        "d1": {**PD, "sglang_pd": {"role": "decode"}, "ansible_host": "10.0.1.2"},
        "r1": {"sglang_role": "router", "sglang_router_workers_group": "pd", "ansible_host": "10.0.9.1"},
    }
    groups = {"all": sorted(hostvars), "pair": ["n2", "n1"], "pd": ["p1", "d1"], "routers": ["r1"]}
    return hostvars, groups


def test_rank_is_the_position_in_the_sorted_group_and_head_is_the_first() -> None:
    hostvars, groups = site()
    p1, p2 = host_plan("n1", hostvars, groups), host_plan("n2", hostvars, groups)
    assert (p1["rank"], p2["rank"]) == (0, 1)
    assert p1["members"] == p2["members"] == ["n1", "n2"]
    assert p2["head_address"] == "10.0.0.1"
    assert p2["argv"][p2["argv"].index("--dist-init-addr") + 1] == "10.0.0.1:20000"
    assert [a for a, b in zip(p1["argv"], p2["argv"]) if a != b] == ["0"]
    assert p2["env"] == {"NCCL_SOCKET_IFNAME": "ens1f0", "GLOO_SOCKET_IFNAME": "ens1f0"}
    assert p1["instance"] == "pair" and p1["unit"] == "sglang-pair.service"


def test_dist_address_wins_over_ansible_host() -> None:
    hostvars, groups = site()
    hostvars["n1"]["sglang_dist_address"] = "192.168.50.1"
    assert host_plan("n2", hostvars, groups)["head_address"] == "192.168.50.1"


@pytest.mark.parametrize("members,message", [
    (["n1"], r"sglang_instance_group: pair has 1 member\(s\) \(n1\) but sglang_nodes is 2"),
    (["n1", "n2", "n3"], r"sglang_instance_group: pair has 3 member\(s\) \(n1, n2, n3\) but sglang_nodes is 2"),
])
def test_group_size_must_match_nodes(members: list[str], message: str) -> None:
    hostvars, groups = site()
    hostvars["n3"] = dict(PAIR)
    groups["pair"] = members
    with pytest.raises(RecipeError, match=message):
        host_plan("n1", hostvars, groups)


def test_mixed_gpu_models_in_one_instance() -> None:
    hostvars, groups = site()
    hostvars["n2"]["sglang_gpu"] = "b200"
    with pytest.raises(RecipeError, match=r"sglang_gpu: mixed GPU models in one instance \(n1='h200', n2='b200'\)"):
        host_plan("n1", hostvars, groups)


def test_members_must_agree_on_what_shapes_the_command() -> None:
    hostvars, groups = site()
    hostvars["n2"]["sglang_extra_args"] = {"--dist-timeout": 60}
    with pytest.raises(RecipeError, match=r"the members of pair \(n1, n2\) would run different programs; only "
                                          r"--node-rank may differ. Differences: --dist-timeout \(n1: \(absent\), "
                                          r"n2: 60\)"):
        host_plan("n1", hostvars, groups)


def test_members_must_agree_on_the_environment_and_install() -> None:
    """Anything that shapes the distributed program counts, not a fixed list of variables."""
    hostvars, groups = site()
    hostvars["n2"]["sglang_env"] = {"NCCL_DEBUG": "INFO"}
    hostvars["n2"]["sglang_install_method"] = "uv"
    message = plan_site(hostvars, groups)["errors"]["n1"][0]
    assert "environment NCCL_DEBUG (n1: None, n2: 'INFO')" in message
    assert "install (n1: {'method': 'docker'" in message and "n2: {'method': 'uv'" in message


def test_instance_group_errors() -> None:
    hostvars, groups = site()
    bad = copy.deepcopy(hostvars)
    del bad["n1"]["sglang_instance_group"]
    with pytest.raises(RecipeError, match=r"sglang_instance_group: n1 has sglang_nodes: 2 but no instance group"):
        host_plan("n1", bad, groups)
    bad["n1"]["sglang_instance_group"] = "nope"
    with pytest.raises(RecipeError, match=r"'nope' \(on n1\) is not an inventory group"):
        host_plan("n1", bad, groups)
    bad["n1"]["sglang_instance_group"] = "pd"
    with pytest.raises(RecipeError, match=r"n1 is not a member of pd"):
        host_plan("n1", bad, groups)
    single = {**PD, "sglang_instance_group": "pair"}
    with pytest.raises(RecipeError, match=r"names pair \(2 members\) but sglang_nodes is 1"):
        host_plan("x", {"x": single}, {"pair": ["n1", "n2"]})


def test_pd_workers_and_router() -> None:
    hostvars, groups = site()
    prefill, decode = host_plan("p1", hostvars, groups), host_plan("d1", hostvars, groups)
    assert (prefill["instance"], decode["instance"]) == ("glm-5.3-prefill", "glm-5.3-decode")
    router = host_plan("r1", hostvars, groups)
    assert router["mode"] == "pd"
    assert router["argv"][:6] == ["--pd-disaggregation", "--prefill", "http://10.0.1.1:30000",
                                  "--decode", "http://10.0.1.2:30100", "--host"]
    assert router["command"].startswith("python3 -m sglang_router.launch_router \\\n  --pd-disaggregation")


def test_pd_pair_without_a_router_is_refused() -> None:
    hostvars, groups = site()
    del hostvars["r1"]
    with pytest.raises(RecipeError, match=r"sglang_pd: p1 is a PD prefill worker but no router fronts it"):
        host_plan("p1", hostvars, groups)


def test_router_without_workers_is_refused() -> None:
    hostvars, groups = site()
    groups["pd"] = []
    with pytest.raises(RecipeError, match=r"sglang_router_workers_group: pd \(on router r1\) has no servers"):
        host_plan("r1", hostvars, groups)
    del hostvars["r1"]["sglang_router_workers_group"]
    with pytest.raises(RecipeError, match=r"router r1 fronts no workers"):
        host_plan("r1", hostvars, groups)


def test_pd_router_needs_both_roles() -> None:
    hostvars, groups = site()
    groups["pd"] = ["p1"]
    with pytest.raises(RecipeError, match=r"router r1 is a PD router but pd holds 1 prefill and 0 decode worker\(s\); "
                                          r"it needs at least one of each"):
        host_plan("r1", hostvars, groups)


def test_plain_router_over_independent_servers() -> None:
    hostvars = {"a": {**PD}, "b": {**PD, "ansible_host": "10.0.0.9", "sglang_port": 31000},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "servers",
                      "sglang_router_policy": "cache_aware"}}
    plan = host_plan("r", hostvars, {"servers": ["a", "b"]})
    # the Prometheus endpoint is set explicitly (sglang-router 0.3.2's --prometheus-host/--prometheus-port)
    assert plan["argv"] == ["--worker-urls", "http://a:30000", "http://10.0.0.9:31000", "--host", "0.0.0.0",
                            "--port", "8000", "--prometheus-host", "0.0.0.0", "--prometheus-port", "29000",
                            "--policy", "cache_aware"]


def test_secrets_stay_out_of_the_plan() -> None:
    hostvars, groups = site()
    hostvars["n1"]["sglang_hf_token"] = "hf_SECRET_value"
    plan = host_plan("n1", hostvars, groups)
    assert plan["secret_env"] == ["HF_TOKEN"]
    assert "hf_SECRET_value" not in repr(plan)


def test_unknown_sglang_variables_are_refused() -> None:
    """The collection owns the sglang_ prefix: a near miss names the variable meant, others where to look."""
    hostvars, groups = site()
    hostvars["p1"]["sglang_stratgy"] = "balanced"
    hostvars["p1"]["sglang_server_health_timeout"] = 600  # a role setting, not a typo
    hostvars["p1"]["sglang_install_info"] = {"method": "uv"}  # our own fact, set by sglang_install
    for role in ("sglang_install", "sglang_server"):  # the facts a stage sets when it changed the node (a later plan
        hostvars["p1"][f"{role}_node_dirty"] = True  # of the same run, molecule's side_effect, sees them)
    hostvars["p1"]["sglang_favourite_colour"] = "blue"
    errors = plan_site(hostvars, groups)["errors"]["p1"]
    assert errors == [
        "sglang_favourite_colour: not a variable of this collection (it owns the sglang_ prefix); variables of this collection "
        "are listed in data/variables.yml and the roles' READMEs",
        "sglang_stratgy: not a variable of this collection (it owns the sglang_ prefix); did you mean sglang_strategy?"]


def test_a_retired_variable_says_what_replaced_it() -> None:
    """Retired in 0.2.0 (data/variables.yml): a warning naming its replacement through 0.2.x, refused from 0.3.0, by
    galaxy.yml's version."""
    hostvars, groups = site()
    hostvars["p1"]["sglang_install_version"] = "0.5.17"
    planned = plan_site(hostvars, groups)
    replaced = "the uv venv now holds the release the plan renders the command for"
    if tuple(int(p) for p in variables.collection_version().split(".")[:2]) <= (0, 2):
        assert "p1" not in planned["errors"]
        assert any(w.startswith(f"sglang_install_version is retired in 0.2.0 and ignored: {replaced}")
                   for w in planned["plans"]["p1"]["warnings"])
    else:
        assert any(e.startswith(f"sglang_install_version is retired (since 0.2.0): {replaced}")
                   for e in planned["errors"]["p1"]), planned["errors"]


def test_hosts_with_role_none_are_left_out() -> None:
    assert host_plan("x", {"x": {"sglang_role": "none"}}, {})["role"] == "none"
    with pytest.raises(RecipeError, match=r"sglang_role: 'gpu' is not one of server, router, none"):
        host_plan("x", {"x": {"sglang_role": "gpu"}}, {})


def test_instance_name_must_be_unit_safe() -> None:
    with pytest.raises(RecipeError, match=r"sglang_instance: 'glm 5' must be letters"):
        host_plan("x", {"x": {**PD, "sglang_instance": "glm 5"}}, {})


def test_head_address_comes_from_the_rendezvous_interface_when_facts_are_known() -> None:
    hostvars, groups = site()
    hostvars["n1"]["ansible_facts"] = {"ens1f0": {"ipv4": {"address": "192.168.7.1"}}}
    plan = host_plan("n2", hostvars, groups)
    assert plan["head_address"] == "192.168.7.1"
    assert plan["argv"][plan["argv"].index("--dist-init-addr") + 1] == "192.168.7.1:20000"
    hostvars["n1"]["ansible_facts"] = {"metalserve_fabric": {"interfaces": {"ens1f0": ["192.168.8.1"]}}}
    assert host_plan("n2", hostvars, groups)["head_address"] == "192.168.8.1"
    hostvars["n1"]["sglang_dist_address"] = "10.9.9.9"  # an address of another interface of n1 (its facts say so)
    hostvars["n1"]["ansible_facts"]["all_ipv4_addresses"] = ["192.168.8.1", "10.9.9.9"]
    assert host_plan("n2", hostvars, groups)["head_address"] == "10.9.9.9"


def test_pinned_ranks_reorder_the_instance_and_move_the_head() -> None:
    hostvars, groups = site()
    hostvars["n1"]["sglang_node_rank"], hostvars["n2"]["sglang_node_rank"] = 1, 0
    p1, p2 = host_plan("n1", hostvars, groups), host_plan("n2", hostvars, groups)
    assert (p2["rank"], p1["rank"]) == (0, 1)
    assert p1["members"] == ["n2", "n1"] and p1["head_address"] == "10.0.0.2"


@pytest.mark.parametrize("ranks,message", [
    ((0, 0), r"sglang_node_rank: rank 0 is taken twice \(n1=0, n2=0\)"),
    ((0, 2), r"sglang_node_rank: ranks are out of range \(n1=0, n2=2\); each of 0..1 must be used exactly once"),
    ((0, None), r"sglang_node_rank: set on some members of n1's instance only \(n1=0, n2=None\)"),
])
def test_pinned_ranks_must_be_a_permutation(ranks: tuple, message: str) -> None:
    hostvars, groups = site()
    hostvars["n1"]["sglang_node_rank"], hostvars["n2"]["sglang_node_rank"] = ranks
    with pytest.raises(RecipeError, match=message):
        host_plan("n1", hostvars, groups)


def test_a_bootstrap_port_moved_by_sglang_pd_reaches_the_router() -> None:
    """The router reads the prefill's final command, not the default it assumes. (sglang_pd owns the port: the extra
    args refuse --disaggregation-bootstrap-port under any spelling, test_knobs.py.)"""
    # (9100 would collide with the node exporter of the same machine: test_monitoring.py)
    hostvars = {"p": {**PD, "sglang_pd": {"role": "prefill", "bootstrap_port": 9200}},
                "d": {**PD, "sglang_pd": {"role": "decode"}},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "pd"}}
    site = plan_site(hostvars, {"pd": ["p", "d"]})
    assert site["errors"] == {}
    argv = site["plans"]["r"]["argv"]
    assert argv[argv.index("--prefill"):argv.index("--prefill") + 3] == ["--prefill", "http://p:30000", "9200"]
    assert site["plans"]["p"]["recipe"]["listen_ports"]["--disaggregation-bootstrap-port"] == 9200


def test_routers_use_the_address_a_server_listens_on_not_its_rendezvous_address() -> None:
    hostvars = {"a": {**PD, "ansible_host": "10.0.0.1", "sglang_dist_address": "192.168.0.1"},
                "b": {**PD, "ansible_host": "10.0.0.2", "sglang_host": "10.1.0.2"},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "g"}}
    plan = host_plan("r", hostvars, {"g": ["a", "b"]})
    assert plan["workers"] == ["http://10.0.0.1:30000", "http://10.1.0.2:30000"]


def test_values_only_the_node_can_tell_are_listed_until_its_facts_are_known() -> None:
    pair = {**PD, "sglang_quant": "bf16", "sglang_nodes": 2, "sglang_instance_group": "g",
            "sglang_dist_interface": "ib0", "sglang_install_method": "uv"}
    hostvars = {"a": {**pair, "ansible_host": "10.0.0.1"}, "b": {**pair, "ansible_host": "10.0.0.2"}}
    unknown = plan_site(hostvars, {"g": ["a", "b"]})["plans"]["b"]
    assert unknown["head_address"] == "10.0.0.1"  # ansible_host stands in, and says so
    assert [r["what"] for r in unknown["resolved"] if not r["known"]] == ["fabric", "rendezvous address"]
    facts = {"ib0": {"ipv4": {"address": "192.168.0.1"}}, "default_ipv4": {"address": "10.0.0.1"},
             "metalserve_fabric": {"uverbs_present": True, "devices": []}}
    hostvars["a"]["ansible_facts"] = facts
    hostvars["b"]["ansible_facts"] = {**facts, "ib0": {"ipv4": {"address": "192.168.0.2"}},
                                      "default_ipv4": {"address": "10.0.0.2"}}
    known = plan_site(hostvars, {"g": ["a", "b"]})["plans"]["b"]
    assert known["head_address"] == "192.168.0.1" and known["resolved"] == []
    assert "--dist-init-addr" in known["argv"] and "192.168.0.1:20000" in known["argv"]
    assert "DeviceAllow=char-infiniband_verbs rw" in known["files"]["unit"]["content"]
    # the firewall admits each member's rendezvous and default addresses
    firewall = known["files"]["firewall"]["content"]
    assert "10.0.0.1, 10.0.0.2, 192.168.0.1, 192.168.0.2" in firewall


def test_warning_lines_share_one_line_per_text() -> None:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import warning_lines  # noqa: PLC0415
    plans = {f"gpu-{i}": {"warnings": ["image X is latest"]} for i in range(5)}
    plans["gpu-1"]["warnings"].append("unverified recipe")
    plans["router"] = {"warnings": []}
    assert warning_lines(plans) == ["5 hosts (gpu-0, gpu-1, gpu-2 and 2 more): image X is latest",
                                    "gpu-1: unverified recipe"]
    assert warning_lines(plans, ["gpu-3", "gpu-4"]) == ["gpu-3, gpu-4: image X is latest"]
    assert warning_lines(plans, []) == []


def test_a_refused_host_does_not_spare_the_others_from_the_site_checker() -> None:
    """Two inventory names on one machine with the same unit and GPU are refused by the checker; a third host with a
    mistake of its own (an unknown strategy) must not switch the checker off for them (a --limit run would converge
    them with that host's problem as a warning)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    q = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced", "sglang_install_method": "uv"}
    hv = {"a": {**q, "ansible_host": "10.0.0.1"}, "b": {**q, "ansible_host": "10.0.0.1", "sglang_port": 31000},
          "c": {**q, "ansible_host": "10.0.0.3", "sglang_strategy": "nope"}}
    errors = plan_site(hv, {"all": sorted(hv)})["errors"]
    assert set(errors) == {"a", "b", "c"}
    assert any("which are one machine (10.0.0.1)" in m for m in errors["a"])
