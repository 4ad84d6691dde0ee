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
    unit = {"heads": ["n2"], "routers": ["r"], "hosts": ["n2"]}
    measured = up.measure_target(unit, plans, plans)
    assert measured["url"] == "http://10.0.0.2:30000"
    [entry] = up.pool_entries(unit, plans)
    assert entry["url"] == "http://10.0.0.2:30000" and entry["router_base"] == "http://127.0.0.1:8000"


def test_hosts_of_several_servers_are_refused_when_they_move() -> None:
    """sglang_replicas: a host runs several units; upgrade.yml drains, measures and rolls back one per host, so it
    refuses to move such a host (the review found replica 0 only drained), and only such a host: a replicas host the
    target leaves alone does not stop an upgrade of the others."""
    def with_q(version: str, q_version: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
        hv, groups = site(version)
        hv["q"] = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_replicas": 2,
                   "sglang_install_method": "uv", "sglang_version": q_version, "ansible_host": "10.0.0.7",
                   "sglang_model_path": "/srv/models/qwen"}
        return hv, {**groups, "all": sorted(hv)}

    def units_of(planned: dict[str, Any]) -> dict[str, dict[str, str]]:
        return {h: dict([change.unit_sha1(p)]) for h, p in planned["plans"].items() if change.unit_sha1(p)}
    options = {"canary": "", "wave_by": "rack", "batch_size": 1, "upgrade_from": {"sglang_version": OLD}}
    running = plan_site(*with_q(OLD, OLD))
    assert running["errors"] == {}
    with pytest.raises(planner.UpgradeRefused, match=r"^q run several servers \(sglang_replicas\)"):
        planner.decide(plan_site, *with_q(NEW, NEW), units_of(running), None, options)
    still = plan_site(*with_q(OLD, NEW))  # q already runs the target's release: it does not move
    hv, groups = with_q(NEW, NEW)
    hv["q"]["sglang_version"] = NEW
    options_q = {**options, "upgrade_from_groups": {}}
    nodes = {**units_of(running), "q": units_of(still)["q"]}
    try:
        planner.decide(plan_site, hv, groups, nodes, None, {**options_q, "upgrade_from": {"sglang_version": OLD}})
    except planner.UpgradeRefused as exc:
        assert "sglang_replicas" not in str(exc), str(exc)
