"""One probe per node (plugins/plugin_utils/site/probe.py, the node_probe action): the stages ask for what render.yml
shows the node gets, the merged request answers each stage as the real node_state would for that stage alone, and a
stage reuses the shared answer only for the same request with nothing changed before it.

Expectations come from outside probe.py: the rendered files (render.node_files, what rendered/ shows), the roles'
shipped helper scripts, and node_state's own probe() run against real files on this machine."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.modules import node_state as ns
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import probe, render
from ansible_collections.metalserve.sglang.tests.helpers import ROOT
from ansible_collections.metalserve.sglang.tests.unit.test_replicas import TP2, fleet, planned


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run(argv: list[str]) -> tuple[int, str, str]:
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    return out.returncode, out.stdout, out.stderr


def play_locally(folder: Path, play: dict[str, Any], hosts: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook with this checkout's configuration over the local connection (`hosts`: an inline inventory)."""
    import sys  # noqa: PLC0415

    import yaml  # noqa: PLC0415

    (folder / "play.yml").write_text(yaml.safe_dump([play]))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections")}
    return subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", hosts, "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(folder / "play.yml")],
                          capture_output=True, text=True, env=env, cwd=folder, check=False, timeout=300)


def site(method: str) -> dict[str, Any]:
    hostvars, groups = fleet()
    hostvars = {h: {**v, "sglang_install_method": method} if h != "mon" else v for h, v in hostvars.items()}
    return planned(hostvars, groups)


@pytest.mark.parametrize("method", ["uv", "docker"])
def test_the_stages_ask_for_the_files_render_shows(method: str) -> None:
    plans = site(method)["plans"]
    for host in ("q1", "rq"):
        plan = plans[host]
        rendered = {entry["path"]: entry for entry in render.node_files(plan, None).values()}
        wants = probe.host_wants(plan, ["q1", "q2", "rq"], {}, True)
        parts = wants["server"] if host == "q1" else [wants["router"]]
        for part in parts:
            for item in part["files"]:
                if item.get("absent") or item["name"].startswith("helper_") and host == "q1":
                    continue
                entry = rendered[item["path"]]
                assert item["sha256"] == sha(entry["content"] or ""), (host, item["name"])
                assert item["mode"] == entry["mode"], (host, item["name"])
        if host == "q1":
            units = {p["units"][0]["unit"] for p in parts}
            assert units == {r["unit"] for r in plan["replicas"]}
            assert [bool(p["listings"]) for p in parts] == [True, False, False, False]


def test_the_shared_probe_reads_the_stages_whose_plays_the_tags_run() -> None:
    """probe.STAGE_TAGS against site.yml's own plays: the tags of the play that applies each stage's role."""
    import yaml  # noqa: PLC0415

    roles = {"sglang_install": "install", "model_weights": "weights", "sglang_server": "server",
             "sglang_router": "router"}
    plays = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    applied = [(play, task["ansible.builtin.import_role"]["name"].rsplit(".", 1)[-1]) for play in plays
               for task in play.get("tasks") or [] if "ansible.builtin.import_role" in task]
    found = {roles[role]: tuple(play["tags"]) for play, role in applied if role in roles}
    assert found == probe.STAGE_TAGS
    assert probe.stages_in_run(["all"], []) == ["install", "weights", "server", "router"]
    assert probe.stages_in_run(["install"], []) == ["install"]
    assert probe.stages_in_run(["serve"], []) == ["install", "server"]
    assert probe.stages_in_run(["all"], ["weights"]) == ["install", "server", "router"]
    assert probe.stages_in_run(["all"], ["router"]) == ["weights", "server"]  # a task with any skipped tag is skipped
    plan = site("uv")["plans"]["q1"]
    assert set(probe.host_wants(plan, ["q1"], {}, True, ["install", "server"])) == {"install", "server"}


@pytest.mark.parametrize(("method", "changed"), [("uv", {"env", "secrets"}), ("docker", {"token", "secrets"})])
def test_secrets_change_only_their_files_and_never_leave_as_values(method: str, changed: set[str]) -> None:
    """uv: the token in the 0600 environment file; docker: in a file of its own (docker inspect shows the env)."""
    hostvars, groups = fleet()
    hostvars = {h: {**v, "sglang_install_method": method, "sglang_api_key": "key-123",
                    "sglang_hf_token": "hf_x" * 8} if h != "mon" else v
                for h, v in hostvars.items()}
    plan = planned(hostvars, groups)["plans"]["q1"]
    bare = probe.server_wants(plan, 0, {})
    secret = probe.server_wants(plan, 0, {"server_hf_token": "hf_x" * 8, "server_api_key": "key-123"})
    assert {a["name"] for a, b in zip(bare["files"], secret["files"]) if a != b} == changed
    assert "hf_x" not in repr(secret) and "key-123" not in repr(secret)
    written = next(f for f in secret["files"] if f["name"] == "secrets")
    assert written["sha256"] == sha("api-key: key-123\n") and written["mode"] == "0640"


def make_node(root: Path) -> dict[str, Any]:
    """Two stages' requests against real files: some as wanted, some not."""
    (root / "a.txt").write_text("alpha")
    (root / "b.txt").write_text("stale")
    (root / "units").mkdir()
    (root / "units" / "sglang-x.service").write_text("")
    (root / "current").symlink_to(root / "v1")
    (root / "ckpt").mkdir()
    first = probe._request(files=[{"name": "a", "path": str(root / "a.txt"), "sha256": sha("alpha")},
                                  {"name": "b", "path": str(root / "b.txt"), "sha256": sha("fresh")}],
                           links=[{"name": "current", "path": str(root / "current"), "src": str(root / "v2")}],
                           commands=[{"name": "echo", "argv": ["echo", "hi"]}])
    second = probe._request(directories=[{"name": "dir", "path": str(root / "units")}],
                            files=[{"name": "a", "path": str(root / "missing"), "absent": True}],
                            listings=[{"name": "units", "path": str(root / "units"), "pattern": "^sglang-"}],
                            weights=[{"name": "staged", "path": str(root / "ckpt"), "source_path": str(root / "ckpt")}])
    return {"install": first, "server": [second, first]}


def test_the_merged_answer_is_each_stage_s_own(tmp_path: Path) -> None:
    wants = make_node(tmp_path)
    state, differ = ns.probe(probe.merge(wants), None, run)
    shared = probe.split(wants, {"state": state, "differ": differ})
    for stage, parts in wants.items():
        answers = shared[stage] if isinstance(parts, list) else [shared[stage]]
        for part, answer in zip(parts if isinstance(parts, list) else [parts], answers):
            alone_state, alone_differ = ns.probe(part, None, run)
            assert answer["differ"] == alone_differ
            assert answer["state"] == probe.public(alone_state)
            assert answer["key"] == probe.key(part)
    assert shared["install"]["differ"] == ["b", "current"]
    assert shared["server"][0]["state"]["units"]["files"] == ["sglang-x.service"]
    assert "sha256" not in shared["install"]["state"]["a"]


def test_a_stage_reuses_only_the_same_request_with_nothing_changed(tmp_path: Path) -> None:
    wants = make_node(tmp_path)
    state, differ = ns.probe(probe.merge(wants), None, run)
    shared = {"changed": False, "stages": probe.split(wants, {"state": state, "differ": differ})}
    second = wants["server"][1]
    assert probe.reusable(shared, "server", 1, second, False) == {"differ": ["b", "current"],
                                                                  "state": shared["stages"]["server"][1]["state"]}
    assert probe.reusable(shared, "server", 1, second, True) is None            # a stage before changed the node
    assert probe.reusable(shared, "server", 0, second, False) is None           # another instance's request
    assert probe.reusable(shared, "server", 2, second, False) is None           # no such instance in the probe
    assert probe.reusable(shared, "router", 0, second, False) is None           # a stage it did not ask for
    assert probe.reusable({"skipped": True}, "install", 0, wants["install"], False) is None
    other = probe._request(**{**wants["install"], "commands": [{"name": "echo", "argv": ["echo", "bye"]}]})
    assert probe.reusable(shared, "install", 0, other, False) is None


def test_a_manifest_it_cannot_read_is_an_answer_not_a_failure(tmp_path: Path) -> None:
    hub = {"endpoint": "https://hub.example", "repo": "org/gated", "revision": "main"}
    request = probe._request(weights=[{"name": "gated", "path": str(tmp_path), "hub": hub},
                                      {"name": "nowhere", "path": str(tmp_path), "hub": {**hub, "endpoint": ""}}])
    state, differ = ns.probe(request, None, run, fetch=lambda url, headers: (None, {"status": 401, "msg": "no"}))
    assert differ == ["gated", "nowhere"]
    assert state["gated"] == {"error": "could not read the manifest from https://hub.example/api/models/org/gated/"
                                       "revision/main?blobs=true: HTTP 401 no (no token: hub.token_file is not set)"}
    assert "hub.endpoint" in state["nowhere"]["error"]


def test_weights_peers_fetch_from_their_leader_and_ask_for_no_manifest() -> None:
    hostvars = {f"g{i}": {**TP2, "sglang_replicas": 1, "ansible_host": f"10.0.1.{i}",
                          "model_weights_fanout_group": "rack1"} for i in (1, 2, 3)}
    plans = planned(hostvars, {"rack1": ["g1", "g2", "g3"]})["plans"]
    leader = plans["g1"]["stages"]["weights"]["settings"]["fanout_leader"]
    views = {h: probe.weights_view(plans[h], sorted(plans), "") for h in plans}
    assert {h for h, v in views.items() if v["is_peer"]} == set(plans) - {leader}
    peer = next(h for h in plans if h != leader)
    assert views[peer]["source"] == "rsync" and views[peer]["rsync_url"].startswith("rsync://")
    assert probe.weights_wants(plans[peer], sorted(plans), "")["weights"] == [
        {"name": "staged", "path": plans[peer]["stages"]["weights"]["settings"]["dir"]}]
    # alone in the run, a member fetches from the source itself
    assert probe.weights_view(plans[peer], [peer], "")["is_peer"] is False


def test_site_yml_reads_the_secrets_the_roles_default_to() -> None:
    """probe.SECRET_VARS names, for each secret, the role's variable and the site-wide one its default falls back to."""
    import yaml  # noqa: PLC0415

    defaults = {**yaml.safe_load((ROOT / "roles/sglang_server/defaults/main.yml").read_text()),
                **yaml.safe_load((ROOT / "roles/model_weights/defaults/main.yml").read_text())}
    for own, fallback in probe.SECRET_VARS.values():
        assert defaults[own] == "{{ " + fallback + " | default('', true) }}", own


def test_the_hub_is_not_asked_before_the_token_is_in_place(tmp_path: Path) -> None:
    """With a token, the weights check waits for the token's file (in the merged request too): the Hub never sees an
    unauthenticated request from a node that has a token to send."""
    hostvars, groups = fleet()
    hostvars = {h: {**v, "model_weights_source": "hf", "model_weights_token_file": str(tmp_path / "t" / "hf_token"),
                    "sglang_model_path": "/var/lib/sglang/models/Qwen/Qwen3.8-27B-FP8"}
                if h.startswith("q") else v for h, v in hostvars.items()}
    plan = planned(hostvars, groups)["plans"]["q1"]
    asked: list[str] = []
    wants = {"weights": probe.weights_wants(plan, ["q1"], "hf_secret")}
    state, differ = ns.probe(probe.merge(wants), None, run, fetch=lambda url, headers: asked.append(url) or (None, {}))
    answer = probe.split(wants, {"state": state, "differ": differ})["weights"]
    assert asked == [] and sorted(answer["differ"]) == ["staged", "token", "token_dir"]
    assert answer["state"]["staged"] == {"error": "not read: weights/token_dir, weights/token not as wanted yet"}


def test_a_play_s_own_value_is_refused_by_the_probe(tmp_path: Path) -> None:
    """A real play (ansible-playbook on localhost): a setting given by the play's vars, which the plan cannot see, fails
    the probe with plan_drift's words; the same value as the plan's passes and reads the node."""
    import json  # noqa: PLC0415
    import sys  # noqa: PLC0415

    plan = {"role": "server", "install": {"method": "docker"}, "settings": {"python": sys.executable}}
    probes = {name: {"plan": plan, "stage": "install", "inputs": {"sglang_install_keep_venvs": planned}}
              for name, planned in (("drifted", 2), ("agreed", 5))}
    tasks: list[dict[str, Any]] = [{"name": name, "metalserve.sglang.node_probe": args, "register": name,
                                    "ignore_errors": True} for name, args in probes.items()]
    keep = {"dest": str(tmp_path / "out.json"), "mode": "0644",
            "content": "{{ {'drifted': drifted, 'agreed': agreed} | to_json }}"}
    tasks.append({"name": "keep", "ansible.builtin.copy": keep})
    play = {"hosts": "localhost", "gather_facts": False, "vars": {"sglang_install_keep_venvs": "5"}, "tasks": tasks}
    proc = play_locally(tmp_path, play, "localhost,")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["drifted"]["failed"] and got["drifted"]["msg"] == (
        "sglang_install_keep_venvs: this play gives '5' but the inventory, which the plan and render.yml read, gives 2; "
        "set sglang_install_keep_venvs in group_vars, host_vars or with -e, not in a play's vars")
    assert not got["agreed"].get("failed") and got["agreed"]["node_reads"] == 1 and "requests" in got["agreed"]["state"]


def test_a_member_restarts_for_what_its_server_reads_at_start(tmp_path: Path) -> None:
    """node_state's own answer over real files and commands: a server reads its unit, environment, Hub token and
    secrets file when it starts (a new helper script or folder does not change the running server), and a docker
    member runs another image than the install stage pulled only when `docker inspect` answers with another one."""
    for name in ("unit", "env", "helper_health"):
        (tmp_path / name).write_text("planned")
    files = [{"name": name, "path": str(tmp_path / name), "sha256": sha("planned")}
             for name in ("unit", "env", "helper_health")]

    def answer(changed: str, argv: list[str]) -> tuple[list[str], dict[str, Any]]:
        (tmp_path / changed).write_text("edited by hand") if changed else None
        state, differ = ns.probe(probe._request(files=files, commands=[{"name": "running_image", "argv": argv}]),
                                 None, run)
        for name in ("unit", "env", "helper_health"):
            (tmp_path / name).write_text("planned")
        return differ, probe.public(state)

    assert probe.server_changed(*answer("", ["echo", "sha256:aaa"]), "sha256:aaa") is False
    assert probe.server_changed(*answer("helper_health", ["echo", "sha256:aaa"]), "sha256:aaa") is False
    assert probe.server_changed(*answer("unit", ["echo", "sha256:aaa"]), "sha256:aaa") is True
    assert probe.server_changed(*answer("env", ["echo", "sha256:aaa"]), "sha256:aaa") is True
    assert probe.server_changed(*answer("", ["echo", "sha256:aaa"]), "sha256:bbb") is True  # another image pulled
    assert probe.server_changed(*answer("", ["false"]), "sha256:bbb") is False   # no container yet: a start, not this
    assert probe.server_changed(*answer("", ["echo", "sha256:aaa"]), None) is False   # uv: no image to compare
    # the names it restarts for are the names a planned server's request gives those files (a rename there would
    # otherwise lose the restart): the unit, the environment file, the token file (docker), the --config file
    plan = site("docker")["plans"]["q1"]
    request = probe.server_wants(plan, 0, {"server_hf_token": "hf_x", "server_api_key": "k"})
    paths = {item["name"]: item["path"] for item in request["files"]}
    replica = (plan.get("replicas") or [plan])[0]
    assert {name: paths[name] for name in probe.SERVER_RESTART_FILES} == {
        "unit": replica["files"]["unit"]["path"], "env": replica["files"]["env"]["path"],
        "token": replica["settings"]["hf_token_file"], "secrets": replica["settings"]["secrets_config"]}
    assert replica["files"]["env"]["path"] in replica["files"]["unit"]["content"]  # the unit reads that env file


def test_the_probe_action_says_whether_a_server_member_changed() -> None:
    """node_probe's answer for stage server, shared or its own: member_changed from the answer and the image the
    install stage recorded (sglang_install_info, templated as the play gives it); other stages carry none."""
    from ansible_collections.metalserve.sglang.plugins.action.node_probe import ActionModule  # noqa: PLC0415

    action = ActionModule.__new__(ActionModule)
    action._templar = type("T", (), {"template": staticmethod(lambda value: value)})()  # noqa: SLF001
    running = {"running_image": {"rc": 0, "stdout": "sha256:old"}}
    info = {"sglang_install_info": {"image_id": "sha256:new"}}
    assert action._judged({"differ": [], "state": running}, "server", info)["member_changed"] is True  # noqa: SLF001
    assert action._judged({"differ": [], "state": running}, "server",  # noqa: SLF001
                          {"sglang_install_info": {"image_id": "sha256:old"}})["member_changed"] is False
    assert action._judged({"differ": ["env"], "state": {}}, "server", {})["member_changed"] is True  # noqa: SLF001
    assert "member_changed" not in action._judged({"differ": ["unit"], "state": {}}, "router", info)  # noqa: SLF001


def test_an_instance_restarts_when_any_member_in_the_play_changed(tmp_path: Path) -> None:
    """The role's own `_sglang_server_instance_changed` (roles/sglang_server/vars/main.yml), evaluated by Ansible over
    three hosts: m1 and m2 are one instance, m3 another. m1's probe says it changed, so m1 and m2 restart and m3 does
    not; once m1 has failed (left the play) m2 no longer restarts around it."""
    import json  # noqa: PLC0415

    import yaml  # noqa: PLC0415

    role_vars = yaml.safe_load((ROOT / "roles" / "sglang_server" / "vars" / "main.yml").read_text())
    members = "{{ {'m1': ['m1', 'm2'], 'm2': ['m1', 'm2'], 'm3': ['m3']}[inventory_hostname] }}"
    tasks: list[dict[str, Any]] = [
        {"name": "probe", "ansible.builtin.set_fact": {"_sglang_server_probe": {
            "differ": [], "member_changed": "{{ inventory_hostname == 'm1' }}"}}},
        {"name": "before", "ansible.builtin.set_fact": {"before": "{{ _sglang_server_instance_changed }}"}},
        {"name": "m1 fails", "ansible.builtin.fail": {"msg": "apply failed"}, "when": "inventory_hostname == 'm1'"},
        {"name": "after", "ansible.builtin.set_fact": {"after": "{{ _sglang_server_instance_changed }}"}},
        {"name": "keep", "ansible.builtin.copy": {
            "dest": str(tmp_path / "{{ inventory_hostname }}.json"), "mode": "0644",
            "content": "{{ {'before': before, 'after': after} | to_json }}"}},
    ]
    play = {"hosts": "all", "gather_facts": False, "tasks": tasks,
            "vars": {"_sglang_server_plan": {"members": members},
                     "_sglang_server_instance_changed": role_vars["_sglang_server_instance_changed"]}}
    proc = play_locally(tmp_path, play, "m1,m2,m3")
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]  # m1's failure, as planned
    got = {h: json.loads((tmp_path / f"{h}.json").read_text()) for h in ("m2", "m3")}
    assert got == {"m2": {"before": True, "after": False}, "m3": {"before": False, "after": False}}
    assert not (tmp_path / "m1.json").exists()
