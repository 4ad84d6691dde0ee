"""What an upgrade changes (plugins/plugin_utils/upgrade/change.py, planner.py): the running plan against the target's,
both from plan_site(); which plan each node runs (its unit file's SHA-1, as ansible.builtin.find reports it); what a
run starts, resumes, commits or refuses. Expectations are the rendered files' own lines and hand-written outcomes."""
from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import change, planner
from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade import state as st

OLD, NEW = "0.5.13.post1", "0.5.23"
UNIT = "/etc/systemd/system/sglang-glm-5.3.service"
ROUTER_UNIT = "/etc/systemd/system/sglang-router.service"


def site(version: str = NEW, **extra: Any) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Three plain servers (racks a, a, b) behind a router, uv, an API key and an HF token set."""
    hv: dict[str, dict[str, Any]] = {}
    for i in (1, 2, 3):
        hv[f"n{i}"] = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "low-latency",
                       "sglang_install_method": "uv", "sglang_model_path": "/srv/models/glm", "sglang_version": version,
                       "ansible_host": f"10.0.0.{i}", "sglang_rack": "a" if i < 3 else "b",
                       "sglang_api_key": "sk-live-7f3a9b2c1d", "sglang_hf_token": "hf_abcdefghijklmnop", **extra}
    hv["r"] = {"sglang_role": "router", "sglang_router_workers_group": "servers", "sglang_install_method": "uv",
               "sglang_version": version, "ansible_host": "10.0.0.9"}
    return hv, {"all": sorted(hv), "servers": ["n1", "n2", "n3"], "routers": ["r"]}


def nodes_running(version: str, **extra: Any) -> dict[str, dict[str, str]]:
    """What ansible.builtin.find reports on every node converged to `version`: the unit file's SHA-1 by path."""
    planned = plan_site(*site(version, **extra))["plans"]
    out = {}
    for host, plan in planned.items():
        text = plan["files"]["unit"]["content"]
        out[host] = {plan["files"]["unit"]["path"]: hashlib.sha1(text.encode()).hexdigest()}  # noqa: S324
    return out


def decide(nodes: dict[str, dict[str, str]], saved: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    hv, groups = site(NEW)
    return planner.decide(plan_site, hv, groups, nodes, saved, options)


def test_masked_inputs_plan_the_same_files_and_hold_no_secret() -> None:
    hv, groups = site()
    masked = change.masked(hv)
    assert "sk-live-7f3a9b2c1d" not in repr(masked) and "hf_abcdefghijklmnop" not in repr(masked)
    real, hidden = plan_site(copy.deepcopy(hv), groups), plan_site(masked, groups)
    assert change.diff(real, hidden) == {}


def test_the_first_upgrade_shows_the_venv_change_per_host() -> None:
    d = decide(nodes_running(OLD), upgrade_from={"sglang_version": OLD})
    assert d["status"] == "start" and d["running_from"] == "the inventory with upgrade_from"
    n1 = {c["name"]: c for c in d["changes"]["n1"]}
    assert sorted(n1) == ["files/etc/systemd/system/sglang-glm-5.3.service",
                          f"files/opt/sglang/venvs/{OLD}/.metalserve-requirements",
                          f"files/opt/sglang/venvs/{NEW}/.metalserve-requirements", "install.yml", "serve.sh"]
    unit_diff = n1[f"files{UNIT}"]["diff"]
    assert f"-ExecStart=/opt/sglang/venvs/{OLD}/bin/sglang serve \\" in unit_diff
    assert f"+ExecStart=/opt/sglang/venvs/{NEW}/bin/sglang serve \\" in unit_diff
    assert {c["stage"] for c in d["changes"]["r"]} == {"serve", "install"}
    assert d["canary"]["id"] == "glm-5.3@n1"
    assert [w["units"] for w in d["waves"]] == [["glm-5.3@n2"], ["glm-5.3@n3"]] and d["routers"] == ["r"]
    text = planner.change_markdown(d)
    assert "| n1 | server | glm-5.3 | install, serve |" in text and "- wave 2: glm-5.3@n3" in text
    assert "sk-live" not in text and "hf_abcdef" not in text


def test_nodes_that_already_run_the_target_need_nothing() -> None:
    d = decide(nodes_running(NEW))
    assert d["status"] == "nothing" and d["changes"] == {} and d["canary"] is None


def test_a_node_that_runs_neither_plan_is_refused_by_name() -> None:
    nodes = nodes_running(OLD)
    nodes["n2"] = {UNIT: "0" * 40}
    del nodes["r"]
    with pytest.raises(planner.UpgradeRefused) as err:
        decide(nodes, upgrade_from={"sglang_version": OLD})
    text = str(err.value)
    assert f"  - n2: {UNIT} holds another text on the node: it runs neither the running plan nor the target" in text
    assert f"  - r: {ROUTER_UNIT} is missing on the node" in text and "n1" not in text


def test_a_node_half_way_counts_as_moved_for_the_diff() -> None:
    nodes = nodes_running(OLD)
    nodes["n1"] = nodes_running(NEW)["n1"]
    d = decide(nodes, upgrade_from={"sglang_version": OLD})
    assert "n1" not in d["changes"] and sorted(d["changes"]) == ["n2", "n3", "r"]
    # the rollback plan is still the recorded one
    assert d["previous"]["plans"]["n1"]["install"]["release"] == OLD


@pytest.mark.parametrize(("overrides", "message"), [
    ({"sglang_api_key": "x"}, "upgrade_from: sglang_api_key is a secret"),
    ({"sglang_server_restart_sec": 5}, "upgrade_from: sglang_server_restart_sec is a role setting"),
])
def test_upgrade_from_refuses_secrets_and_role_settings(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(change.ChangeError, match=message):
        decide(nodes_running(OLD), upgrade_from=overrides)


def test_upgrade_from_none_means_unset() -> None:
    hv, groups = site(NEW)
    out = change.with_overrides(hv, groups, {"sglang_version": None}, {"servers": {"sglang_rack": "c"}})
    assert "sglang_version" not in out["n1"] and out["n1"]["sglang_rack"] == "c" and out["r"].get("sglang_rack") is None


def test_a_role_setting_change_is_refused() -> None:
    # the last upgrade committed NEW; the inventory now also changes a role setting of the serving unit
    committed = {"status": "committed", "target": "t0", "running": change.masked(site(NEW)[0]), "units": {},
                 "routers": {}}
    hv, groups = site(OLD, sglang_server_restart_sec=5)
    with pytest.raises(planner.UpgradeRefused, match=r"n1: the target changes role settings \(sglang_server_restart_sec\); "
                                                     r"converge them with site.yml first"):
        planner.decide(plan_site, hv, groups, nodes_running(NEW), committed, {})


def test_a_new_checkpoint_revision_needs_a_folder_of_its_own() -> None:
    nodes = nodes_running(NEW, model_weights_revision="r1")
    hv, groups = site(NEW, model_weights_revision="r2")
    with pytest.raises(planner.UpgradeRefused, match=r"n1: the checkpoint moves from zai-org/GLM-5.3@r1 to "
                                                     r"zai-org/GLM-5.3@r2 in the same folder /srv/models/glm"):
        planner.decide(plan_site, hv, groups, nodes, None, {"upgrade_from": {"model_weights_revision": "r1"}})
    hv, groups = site(NEW, model_weights_revision="r2", sglang_model_path="/srv/models/glm@r2")
    d = planner.decide(plan_site, hv, groups, nodes, None,
                       {"upgrade_from": {"model_weights_revision": "r1", "sglang_model_path": "/srv/models/glm"}})
    assert d["status"] == "start" and "weights" in {c["stage"] for c in d["changes"]["n1"]}


def test_a_driver_change_belongs_to_site_yml() -> None:
    hv, groups = site(NEW, nvidia_driver_branch=575)
    with pytest.raises(planner.UpgradeRefused, match=r"n1: the target changes its driver stage; upgrade.yml moves the "
                                                     r"serving stages only"):
        planner.decide(plan_site, hv, groups, nodes_running(NEW), None, {"upgrade_from": {"nvidia_driver_branch": 580}})


def started(nodes: dict[str, dict[str, str]]) -> dict[str, Any]:
    return decide(nodes, upgrade_from={"sglang_version": OLD})["state"]


def test_a_resumed_upgrade_skips_the_promoted_canary() -> None:
    state = started(nodes_running(OLD))
    st.set_phase(state, "glm-5.3@n1", "promoted")
    st.set_phase(state, "glm-5.3@n2", "upgrading")
    nodes = nodes_running(OLD)
    nodes["n1"] = nodes["n2"] = nodes_running(NEW)["n1"]
    d = decide(nodes, state)
    assert d["status"] == "resume" and d["canary"] is None
    assert [w["units"] for w in d["waves"]] == [["glm-5.3@n2"], ["glm-5.3@n3"]]  # n2 moves again: it was not judged
    assert d["previous"]["plans"]["n2"]["install"]["release"] == OLD and d["routers"] == ["r"]


def test_everything_moved_commits() -> None:
    state = started(nodes_running(OLD))
    for unit in ("glm-5.3@n1", "glm-5.3@n2", "glm-5.3@n3", "r"):
        st.set_phase(state, unit, "promoted")
    d = decide(nodes_running(NEW), state)
    assert d["status"] == "commit"
    st.commit(state)
    assert decide(nodes_running(NEW), state)["status"] == "nothing"


def test_a_rolled_back_target_is_not_tried_again_unasked() -> None:
    state = started(nodes_running(OLD))
    state["units"]["glm-5.3@n1"]["reason"] = "ttft at concurrency 4: regressed"
    st.set_phase(state, "glm-5.3@n1", "rolled_back")
    with pytest.raises(planner.UpgradeRefused, match=r"this target was rolled back \(glm-5.3@n1: ttft at concurrency 4: "
                                                     r"regressed\); fix it and change the target, or run again with "
                                                     r"-e upgrade_retry=true"):
        decide(nodes_running(OLD), state)
    assert decide(nodes_running(OLD), state, retry=True)["status"] == "start"


def test_another_target_while_one_is_open_is_refused() -> None:
    state = started(nodes_running(OLD))
    state["target"] = "another"
    with pytest.raises(planner.UpgradeRefused, match=r"an upgrade to another target \(another\) is open: glm-5.3@n1 "
                                                     r"\(pending\), glm-5.3@n2 \(pending\), glm-5.3@n3 \(pending\)"):
        decide(nodes_running(OLD), state)


def test_promoting_counts_the_units_hosts_as_moved() -> None:
    state = started(nodes_running(OLD))
    assert state["running"]["n2"]["sglang_version"] == OLD
    st.set_phase(state, "glm-5.3@n2", "promoted")
    assert state["running"]["n2"]["sglang_version"] == NEW and state["running"]["n3"]["sglang_version"] == OLD
    assert state["running"]["n2"]["sglang_api_key"] == change.MASK


def test_servers_bound_to_their_address_are_measured_and_drained_there() -> None:
    """A server with sglang_host set answers on that address only (the review found upgrade.yml asking 127.0.0.1):
    the measured URL and the router's pool entries follow the plans' health URLs. Expected URLs written by hand."""
    from ansible_collections.metalserve.sglang.plugins.action import upgrade_plan as up  # noqa: PLC0415
    hv, groups = site()
    for i in (1, 2, 3):
        hv[f"n{i}"]["sglang_host"] = f"10.0.0.{i}"
    planned = plan_site(hv, groups)
    assert planned["errors"] == {}
    plans = planned["plans"]
    unit = {"id": "glm-5.3@n2", "heads": ["n2"], "routers": ["r"], "hosts": ["n2"]}
    measured = up.measure_target(unit, plans, plans)
    assert measured["url"] == "http://10.0.0.2:30000"
    [entry] = up.pool_entries(unit, plans)
    assert entry["url"] == "http://10.0.0.2:30000" and entry["router_base"] == "http://127.0.0.1:8000"


def qwen_site(version: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Qwen3.8-27B: q1 and q2 run two servers each (sglang_replicas: 2), q3 one; one router in front of all three."""
    hv: dict[str, dict[str, Any]] = {}
    for i, reps in ((1, 2), (2, 2), (3, 1)):
        hv[f"q{i}"] = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_install_method": "uv",
                       "sglang_version": version, "ansible_host": f"10.0.1.{i}", "sglang_rack": "q",
                       "sglang_model_path": "/srv/models/qwen", **({"sglang_replicas": reps} if reps > 1 else {})}
    hv["rq"] = {"sglang_role": "router", "sglang_router_workers_group": "qwen", "sglang_install_method": "uv",
                "sglang_version": version, "ansible_host": "10.0.1.9"}
    return hv, {"all": sorted(hv), "qwen": ["q1", "q2", "q3"], "routers": ["rq"]}


def test_hosts_of_several_servers_move_as_one_unit_with_every_replica_drained() -> None:
    """sglang_replicas: a host's replicas share its venv and weights, so they move as one unit; every replica is taken
    out of the router's pool and put back (the review of the last round found replica 0 alone drained). Expected
    URLs written by hand from data/sglang/ports.yml (replica i on --port 30000 + 10 i) and read back from the router's
    own command line. The third host, after a host of replicas in the router's group, gets its own URL (the pool
    entries once took the router's i-th worker for its i-th host)."""
    from ansible_collections.metalserve.sglang.plugins.action import upgrade_plan as up  # noqa: PLC0415
    running = plan_site(*qwen_site(OLD))
    assert running["errors"] == {}
    nodes = {h: dict([change.unit_sha1(p)]) for h, p in running["plans"].items() if change.unit_sha1(p)}
    hv, groups = qwen_site(NEW)
    decision = planner.decide(plan_site, hv, groups, nodes, None,
                              {"canary": "q1", "wave_by": "batch", "batch_size": 1,
                               "upgrade_from": {"sglang_version": OLD}})
    assert decision["status"] == "start"
    assert decision["canary"]["id"] == "qwen3.8-27b@q1" and decision["canary"]["hosts"] == ["q1"]
    assert [w["units"] for w in decision["waves"]] == [["qwen3.8-27b@q2"], ["qwen3.8-27b@q3"]]
    plans = decision["target"]["plans"]
    router_argv = " ".join(plans["rq"]["argv"])
    entries = up.pool_entries(decision["canary"], plans)
    assert [e["url"] for e in entries] == ["http://10.0.1.1:30000", "http://10.0.1.1:30010"]
    assert all(e["url"] in router_argv and e["head"] == "q1" and e["worker_type"] == "regular" for e in entries)
    [q3] = [u for u in decision["units"] if u["heads"] == ["q3"]]
    assert [e["url"] for e in up.pool_entries(q3, plans)] == ["http://10.0.1.3:30000"]
    measured = up.measure_target(decision["canary"], plans, decision["previous"]["plans"])
    assert measured["url"] == "http://127.0.0.1:30000" and measured["client"]["python"].startswith(
        f"/opt/sglang/venvs/{OLD}/")
    # the drain asks every replica's /v1/loads (pool_out.yml loops over the previous plan's replicas)
    assert [r["health_url"] for r in decision["previous"]["plans"]["q1"]["replicas"]] == [
        "http://127.0.0.1:30000/health", "http://127.0.0.1:30010/health"]


def test_a_docker_site_is_measured_with_the_image_it_ran_before() -> None:
    """Docker install: the unit's image changes, and both measurements run bench_serving from the image the unit ran
    before (the one a rollback returns to). Image references written by hand."""
    from ansible_collections.metalserve.sglang.plugins.action import upgrade_plan as up  # noqa: PLC0415
    old_image, new_image = f"lmsysorg/sglang:v{OLD}-cu129", f"lmsysorg/sglang:v{NEW}-cu129"
    running = plan_site(*site(OLD, sglang_install_method="docker", sglang_image=old_image))
    assert running["errors"] == {}
    nodes = {h: dict([change.unit_sha1(p)]) for h, p in running["plans"].items()}
    hv, groups = site(NEW, sglang_install_method="docker", sglang_image=new_image)
    decision = planner.decide(plan_site, hv, groups, nodes, None,
                              {"canary": "n1", "wave_by": "batch", "batch_size": 1,
                               "upgrade_from": {"sglang_version": OLD},
                               "upgrade_from_groups": {"servers": {"sglang_image": old_image}}})
    assert decision["canary"]["id"] == "glm-5.3@n1"
    diff = "\n".join(c["diff"] for c in decision["changes"]["n1"])
    assert "+++ target/n1/docker-run.sh" in diff
    assert any(line.startswith("-") and old_image in line for line in diff.splitlines())
    assert any(line.startswith("+") and new_image in line for line in diff.splitlines())
    measured = up.measure_target(decision["canary"], decision["target"]["plans"], decision["previous"]["plans"])
    assert measured["client"] == {"method": "docker", "python": "python3", "image": old_image}


def pd_site(version: str = NEW, prefills: int = 1) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    base = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput",
            "sglang_install_method": "uv", "sglang_model_path": "/srv/models/glm", "sglang_version": version}
    hv = {f"p{i}": {**base, "ansible_host": f"10.0.2.{i}", "sglang_pd": {"role": "prefill", "transfer_backend": "mooncake"}}
          for i in range(1, prefills + 1)}
    hv["d"] = {**base, "ansible_host": "10.0.2.8", "sglang_pd": {"role": "decode", "transfer_backend": "mooncake"}}
    hv["r"] = {"sglang_role": "router", "sglang_router_workers_group": "servers", "sglang_install_method": "uv",
               "sglang_version": version, "ansible_host": "10.0.2.9"}
    return hv, {"all": sorted(hv), "servers": sorted(h for h in hv if h != "r"), "routers": ["r"]}


def test_a_pd_unit_is_measured_through_a_router_of_every_worker_and_judged_as_a_router() -> None:
    """Two prefills and one decode behind a PD router: one unit (p2 has no decode of its own), measured through a
    router upgrade.yml starts with both prefills and the decode behind it; judged as verify.yml judges a router:
    /v1/messages, which sglang-router 0.3.2 does not route (data/sglang/router.yml), is not asked, so it is not a
    failure (the lab's PD pair was rolled back for 'messages: not run'). Expected values written by hand: ports from
    data/sglang/ports.yml (prefill 30000, its bootstrap 8998, decode 30100), the measuring router on
    upgrade_measure_router_port's default 39100, GLM-5.3's thinking toggle."""
    from ansible_collections.metalserve.sglang.plugins.action import upgrade_plan as up  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify  # noqa: PLC0415
    running = plan_site(*pd_site(OLD, prefills=2))
    assert running["errors"] == {}
    nodes = {h: dict([change.unit_sha1(p)]) for h, p in running["plans"].items()}
    decision = planner.decide(plan_site, *pd_site(NEW, prefills=2), nodes, None,
                              {"canary": "", "wave_by": "batch", "batch_size": 1, "allow_outage": True,
                               "upgrade_from": {"sglang_version": OLD}})
    unit = decision["canary"]
    assert unit["heads"] == ["p1", "d", "p2"] and decision["waves"] == []
    measured = up.measure_target(unit, decision["target"]["plans"], decision["previous"]["plans"])
    assert measured["host"] == "d" and measured["url"] == "http://127.0.0.1:39100"
    # the bootstrap port 8998 is sglang-router's default, so the command leaves it out, as the site's router does
    assert measured["router"]["args"] == [
        "--pd-disaggregation", "--prefill", "http://10.0.2.1:30000", "--prefill", "http://10.0.2.2:30000",
        "--decode", "http://127.0.0.1:30100", "--host", "127.0.0.1", "--port", "39100",
        "--prometheus-host", "127.0.0.1", "--prometheus-port", "39101",
        "--disable-circuit-breaker", "--health-check-interval-secs", "999999"]
    for side in ("before", "after"):
        judged = measured["verify"][side]
        assert judged["skip"] == ["messages"]
        assert judged["verify"]["requests"]["reasoning"] == {"chat_template_kwargs": {"enable_thinking": True}}
        rows = verify.rows("d", {**judged, "url": "http://127.0.0.1:8001"},
                           {c: {"skipped": True} if c == "messages" else {"status": 200, "json": {}}
                            for c in verify.CHECKS}, 30.0)
        assert [r["check"] for r in rows if not r["ok"] and r["check"] == "messages"] == []


def test_a_rollback_is_proven_against_the_plan_it_returns_to() -> None:
    """The served model name changes with the target: the measurement before (and a rollback's proof) asks for the
    running plan's name, the measurement after for the target's (names written by hand)."""
    from ansible_collections.metalserve.sglang.plugins.action import upgrade_plan as up  # noqa: PLC0415
    decision = decide(nodes_running(OLD, sglang_served_model_name="glm-old"), canary="n1", wave_by="batch",
                      batch_size=1, upgrade_from={"sglang_version": OLD, "sglang_served_model_name": "glm-old"})
    measured = up.measure_target(decision["canary"], decision["target"]["plans"], decision["previous"]["plans"])
    assert measured["verify"]["before"]["served_model_name"] == "glm-old"
    assert measured["verify"]["after"]["served_model_name"] == "zai-org/GLM-5.3"
    assert measured["verify"]["after"]["url"] == "http://127.0.0.1:30000"


def test_a_change_of_a_hosts_servers_is_refused_and_pools_are_left_where_the_routers_have_them() -> None:
    """sglang_replicas 2 -> 1 with the upgrade: refused by name (drained replicas would never be removed from the
    router, or re-added where nothing serves); a port change (a knob) keeps the units but moves the URLs: the unit
    leaves the pools by the running plan's URL and comes back by the target's (written by hand)."""
    from ansible_collections.metalserve.sglang.plugins.action import upgrade_plan as up  # noqa: PLC0415
    running = plan_site(*qwen_site(OLD))
    nodes = {h: dict([change.unit_sha1(p)]) for h, p in running["plans"].items() if change.unit_sha1(p)}
    hv, groups = qwen_site(NEW)
    hv["q1"]["sglang_replicas"] = 1
    options = {"canary": "", "wave_by": "batch", "batch_size": 1, "upgrade_from": {"sglang_version": OLD}}
    with pytest.raises(planner.UpgradeRefused, match=r"the target changes the servers q1 runs \(qwen3.8-27b-r0, "
                                                     r"qwen3.8-27b-r1 -> qwen3.8-27b: sglang_replicas\)"):
        planner.decide(plan_site, hv, {**groups, "first": ["q1"]}, nodes, None,
                       {**options, "upgrade_from_groups": {"first": {"sglang_replicas": 2}}})
    hv, groups = qwen_site(NEW)
    hv["q3"]["sglang_port"] = 31000
    decision = planner.decide(plan_site, hv, {**groups, "third": ["q3"]}, nodes, None,
                              {**options, "canary": "q3", "upgrade_from_groups": {"third": {"sglang_port": None}}})
    unit = decision["canary"]
    assert [e["url"] for e in up.pool_entries(unit, decision["previous"]["plans"])] == ["http://10.0.1.3:30000"]
    assert [e["url"] for e in up.pool_entries(unit, decision["target"]["plans"])] == ["http://10.0.1.3:31000"]
