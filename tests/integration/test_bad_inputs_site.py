"""A cross-section of the bad-input matrix through the real site.yml: each case is a host of one
inventory; site.yml's first play checks every host's variables against the roles' argument specs and
plans the site, and one failure message names every case (the argument-spec refusals and the plan's),
before anything changes.

Runs with --check --diff as a second safety net (the hosts are this machine, connection local): the
recap must still show changed=0 for every host and no stage after the plan may start.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
MATRIX = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text())
BASE = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}
ARGSPEC = ["restart-sec-not-a-number", "install-method-both", "daemon-json-as-list", "unknown-driver-flavor"]
PLAN = ["unknown-gpu", "three-nodes", "duplicate-ranks", "pd-worker-without-router", "uv-and-docker-both-set",
        "missing-token-for-gated-checkpoint", "secret-in-sglang-env", "type-list-for-dict", "negative-port",
        "dflash2-with-dp-attention", "mtp-on-amd", "instance-group-with-three-members",
        "router-setting-on-a-server-rack"]


def inventory(tmp: Path, layer: str) -> tuple[Path, dict[str, str]]:
    """One host per case of the layer (several for instance cases, their groups prefixed with the case id)."""
    hosts: dict[str, dict] = {}
    groups: dict[str, dict] = {}
    expect: dict[str, str] = {}
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
             "preflight_weights_path": str(tmp / "weights")}
    for case in (c for c in MATRIX["argspec"] if c["id"] in ARGSPEC and layer in ("argspec", "all")):
        hosts[case["id"]] = {**local, **BASE, **case["vars"]}
        expect[case["id"]] = case["expect"]
    for case in (c for c in MATRIX["plan"] if c["id"] in PLAN and layer in ("plan", "all")):
        rename = {h: f"{case['id']}-{h}" for h in case["hosts"]}
        for h, v in case["hosts"].items():
            v = dict(v or {})
            for name in ("sglang_instance_group", "sglang_router_workers_group"):
                if name in v:
                    v[name] = f"{case['id']}-{v[name]}"
            hosts[rename[h]] = {**local, **BASE, **v}
        for g, members in (case.get("groups") or {}).items():
            groups[f"{case['id']}-{g}"] = {"hosts": {rename[m]: None for m in members}}
            if (case.get("group_vars") or {}).get(g):  # the group's own variables: who set them is Ansible's to tell
                groups[f"{case['id']}-{g}"]["vars"] = case["group_vars"][g]
        pattern = re.sub(r"^\^|\$$", "", case["expect"])  # the message stands inside a line of the play's output
        for old, new in [*rename.items(), *((g, f"{case['id']}-{g}") for g in case.get("groups") or {})]:
            pattern = re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, pattern)
        expect[rename[case.get("host") or next(iter(case["hosts"]))]] = pattern
    path = tmp / f"hosts-{layer}.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts, "children": groups}}))
    return path, expect


def run_site(tmp: Path, layer: str) -> tuple[str, dict[str, str], dict[str, str], dict]:
    inv, expect = inventory(tmp, layer)
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_CACHE_PLUGIN": "memory"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv), "playbooks/site.yml", "--check", "--diff"],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    recap = dict(re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M))
    recap.pop("localhost", None)  # the first play checks, on the controller, that the inventory has hosts
    hosts = yaml.safe_load(inv.read_text())["all"]["hosts"]
    assert set(recap) == set(hosts), out[-3000:]
    for host, line in recap.items():
        assert "changed=0" in line, f"{host}: {line}"
    # the refusal ends the run inside the planning play: no later stage starts for any host
    assert "PLAY [Plan the site once" in out and "PLAY [Preflight" not in out and "PLAY [GPU drivers" not in out, \
        out[-3000:]
    for host, pattern in expect.items():
        assert re.search(pattern, out.replace("\\n", "\n")), f"{host}: {pattern}\n{out[-4000:]}"
    assert not (tmp / "weights").exists()
    return out, expect, recap, hosts


def test_every_mistake_of_a_site_is_named_in_one_message_before_anything_changes(tmp_path: Path) -> None:
    out, expect, recap, hosts = run_site(tmp_path, "all")
    # the check hands its refusals to the plan, which fails once, on the controller, for the whole site
    assert "TASK [Plan the site (on the controller" in out, out[-3000:]
    message = out[out.index("TASK [Plan the site (on the controller"):]
    argspec = [c for c in expect if c in ARGSPEC]
    assert f"the variables of {len(argspec)} of {len(hosts)} host(s) do not fit" in message, message[:3000]
    for host in argspec:
        assert re.search(rf"\(on [^)]*(?<![\w-]){re.escape(host)}(?![\w-])", message), f"{host}\n{message[:3000]}"
    assert "cannot be planned" in message, message[:3000]
    # the failure carries the problems, not the plans (an operator reads the message, not thousands of lines)
    assert len(message.splitlines()) < 400, f"{len(message.splitlines())} lines after the plan task"
    assert sum("failed=1" in line for line in recap.values()) == 1, recap
    print(f"\n{len(expect)} bad-input cases ({len(hosts)} hosts) through site.yml: one message, changed=0 everywhere")


def test_plan_mistakes_alone_stop_site_yml_in_the_plan(tmp_path: Path) -> None:
    out = run_site(tmp_path, "plan")[0]
    message = out[out.index("TASK [Plan the site (on the controller"):]
    assert "do not fit the roles' meta/argument_specs.yml" not in message, message[:3000]
    assert "cannot be planned" in message, message[:3000]
