"""Wave planning of playbooks/upgrade.yml (plugins/plugin_utils/upgrade/waves.py): what moves together, the canary, the
waves. Expected units and waves are written out by hand from the sites below."""
from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import waves

BASE = {"sglang_gpu": "h200", "sglang_install_method": "uv", "sglang_model_path": "/srv/m"}


def server(instance: str, head: str, members: list[str], rack: str, pd: str | None = None) -> dict[str, Any]:
    return {"role": "server", "instance": instance, "head": head, "members": members, "rack": rack,
            "recipe": {"pd_role": pd}}


def router(workers: list[str], mode: str = "plain") -> dict[str, Any]:
    return {"role": "router", "mode": mode, "worker_hosts": workers}


def mixed_site() -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Rack r1: two TP16 pairs (a1+a2, b1+b2) behind router rt. Rack r2: prefill p1 p2 and decode d1 d2 behind rpd."""
    hv: dict[str, dict[str, Any]] = {}
    for i, h in enumerate(("a1", "a2", "b1", "b2")):
        hv[h] = {**BASE, "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
                 "sglang_instance_group": f"pair_{h[0]}", "sglang_instance": f"tp16{h[0]}", "sglang_rack": "r1",
                 "ansible_host": f"10.0.1.{i + 1}"}
    for i, h in enumerate(("p1", "p2", "d1", "d2")):
        hv[h] = {**BASE, "sglang_quant": "fp8", "sglang_strategy": "high-throughput", "sglang_rack": "r2",
                 "sglang_pd": {"role": "prefill" if h[0] == "p" else "decode"}, "ansible_host": f"10.0.2.{i + 1}"}
    hv["rt"] = {"sglang_role": "router", "sglang_router_workers_group": "tp16", "ansible_host": "10.0.3.1"}
    hv["rpd"] = {"sglang_role": "router", "sglang_router_workers_group": "pd", "ansible_host": "10.0.3.2"}
    groups = {"all": sorted(hv), "pair_a": ["a1", "a2"], "pair_b": ["b1", "b2"], "tp16": ["a1", "a2", "b1", "b2"],
              "pd": ["p1", "p2", "d1", "d2"]}
    return hv, groups


def test_units_of_a_planned_site_keep_tp16_members_and_pd_pairs_together() -> None:
    site = plan_site(*mixed_site())
    assert site["errors"] == {}
    units = waves.movable_units(site["plans"])
    assert [(u["id"], u["hosts"], u["routers"], u["pd"]) for u in units] == [
        ("tp16a@a1", ["a1", "a2"], ["rt"], False),
        ("tp16b@b1", ["b1", "b2"], ["rt"], False),
        ("glm-5.3-prefill@p1+glm-5.3-decode@d1", ["p1", "d1"], ["rpd"], True),
        ("glm-5.3-prefill@p2+glm-5.3-decode@d2", ["p2", "d2"], ["rpd"], True),
    ]


def test_a_change_on_one_member_moves_the_whole_instance() -> None:
    units = waves.movable_units(plan_site(*mixed_site())["plans"])
    assert [u["id"] for u in waves.changed_units(units, ["b2", "d1"])] == [
        "tp16b@b1", "glm-5.3-prefill@p1+glm-5.3-decode@d1"]


def test_pd_leftovers_join_the_last_pair_and_a_head_is_paired_once() -> None:
    """p3 has no decode of its own: alone it could not be measured (a prefill answers nothing without a decode), so
    it moves with ra's last pair."""
    plans = {"p1": server("pre", "p1", ["p1"], "r", "prefill"), "p2": server("pre", "p2", ["p2"], "r", "prefill"),
             "p3": server("pre", "p3", ["p3"], "r", "prefill"), "d1": server("dec", "d1", ["d1"], "r", "decode"),
             "d2": server("dec", "d2", ["d2"], "r", "decode"),
             "ra": router(["p1", "p2", "p3", "d1", "d2"], "pd"), "rb": router(["p2", "d2"], "pd")}
    assert waves.pd_pairs(plans) == [("p1", "d1"), ("p2", "d2", "p3")]
    assert [(u["id"], u["routers"]) for u in waves.movable_units(plans)] == [
        ("pre@p1+dec@d1", ["ra"]), ("pre@p2+dec@d2+pre@p3", ["ra", "rb"])]


def test_a_pd_worker_left_over_by_its_router_joins_the_pair_it_shares_a_router_with() -> None:
    """ra pairs p1 with d1; rb holds p1 and d2, and p1 is taken: d2 has no pair of rb's own, so it joins ra's pair
    (it shares rb with p1). Alone, it could not be measured (the review's case, which crashed the planner)."""
    plans = {"p1": server("pre", "p1", ["p1"], "r", "prefill"), "d1": server("dec", "d1", ["d1"], "r", "decode"),
             "d2": server("dec", "d2", ["d2"], "r", "decode"),
             "ra": router(["p1", "d1"], "pd"), "rb": router(["p1", "d2"], "pd")}
    assert waves.pd_pairs(plans) == [("p1", "d1", "d2")]
    assert [(u["id"], u["routers"]) for u in waves.movable_units(plans)] == [("pre@p1+dec@d1+dec@d2", ["ra", "rb"])]


def plain_site(racks: dict[str, list[str]], pools: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    plans: dict[str, dict[str, Any]] = {}
    for rack, hosts in racks.items():
        for h in hosts:
            plans[h] = server("glm", h, [h], rack)
    for name, workers in pools.items():
        plans[name] = router(workers)
    return plans


def test_batches_of_two_after_the_canary() -> None:
    plans = plain_site({"r1": ["n1", "n2", "n3", "n4", "n5"]}, {"rt": ["n1", "n2", "n3", "n4", "n5"]})
    units = waves.movable_units(plans)
    canary = waves.choose_canary(units, units)
    assert canary["id"] == "glm@n1"
    plan = waves.plan_waves(units, units[1:], "batch", 2)
    assert [w["units"] for w in plan] == [["glm@n2", "glm@n3"], ["glm@n4", "glm@n5"]]
    assert waves.serial(plan) == [2, 2] and waves.host_order(plan) == ["n2", "n3", "n4", "n5"]
    assert all(w["outage"] == [] for w in plan)


def test_waves_per_rack() -> None:
    plans = plain_site({"r1": ["n1", "n2", "n3"], "r2": ["m1", "m2"]}, {"rt": ["n1", "n2", "n3", "m1", "m2"]})
    units = waves.movable_units(plans)
    plan = waves.plan_waves(units, units[1:], "rack")
    assert [(w["units"], w["racks"]) for w in plan] == [(["glm@n2", "glm@n3"], ["r1"]), (["glm@m1", "glm@m2"], ["r2"])]


def test_a_wave_never_empties_a_pool_of_two_or_more() -> None:
    # rack r2 is all of router r2's pool: by rack it would go out at once; m2 waits for a wave of its own
    plans = plain_site({"r1": ["n1", "n2"], "r2": ["m1", "m2"]}, {"r1x": ["n1", "n2"], "r2x": ["m1", "m2"]})
    units = waves.movable_units(plans)
    plan = waves.plan_waves(units, units[1:], "rack")
    assert [w["units"] for w in plan] == [["glm@n2"], ["glm@m1"], ["glm@m2"]]
    assert [w["outage"] for w in plan] == [[], [], []]
    # the same with a batch of ten
    assert [w["units"] for w in waves.plan_waves(units, units[1:], "batch", 10)] == [
        ["glm@n2", "glm@m1"], ["glm@m2"]]


def test_a_pool_of_one_is_an_outage_the_plan_names() -> None:
    plans = plain_site({"r1": ["n1", "n2"]}, {"big": ["n1"], "solo": ["n2"]})
    units = waves.movable_units(plans)
    assert waves.plan_waves(units, [units[1]], "batch", 1)[0]["outage"] == ["solo"]
    assert waves.outage_of([units[0]], waves.pools(units)) == ["big"]


def test_the_canary_prefers_a_unit_whose_router_keeps_another() -> None:
    plans = plain_site({"a": ["n1"], "b": ["n2", "n3"]}, {"solo": ["n1"], "pair": ["n2", "n3"]})
    units = waves.movable_units(plans)
    assert waves.choose_canary(units, units)["id"] == "glm@n2"


def test_the_canary_named_by_any_host_of_its_unit() -> None:
    units = waves.movable_units(plan_site(*mixed_site())["plans"])
    assert waves.choose_canary(units, units, "b2")["id"] == "tp16b@b1"
    assert waves.choose_canary(units, units, "glm-5.3-prefill@p2+glm-5.3-decode@d2")["hosts"] == ["p2", "d2"]


def test_a_canary_that_does_not_change_is_refused_with_the_choices() -> None:
    units = waves.movable_units(plan_site(*mixed_site())["plans"])
    with pytest.raises(waves.WavePlanError, match=r"upgrade_canary: 'a1' cannot be the canary: it does not change with "
                                                  r"this target; choose one of tp16b@b1 \(a unit id or any of its hosts\)"):
        waves.choose_canary(units, [units[1]], "a1")
    with pytest.raises(waves.WavePlanError, match="it is not a server host or unit of this site"):
        waves.choose_canary(units, units, "rt")


@pytest.mark.parametrize(("by", "size", "message"), [
    ("zone", 1, "upgrade_wave_by: 'zone' is not one of rack, batch"),
    ("batch", 0, "upgrade_batch_size: 0 must be a whole number of units, 1 or more"),
])
def test_wave_settings_are_refused_by_name(by: str, size: int, message: str) -> None:
    with pytest.raises(waves.WavePlanError, match=message):
        waves.plan_waves([], [], by, size)
