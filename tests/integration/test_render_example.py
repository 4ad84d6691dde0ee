"""render.yml over inventories/example, for real: files, PLAN.md, idempotence, masked secrets, errors."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
SECRET = "hf_RENDER_TEST_token_value"


def play(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections")}
    return subprocess.run([str(BIN / "ansible-playbook"), str(ROOT / "playbooks" / "render.yml"), *args],
                          capture_output=True, text=True, env=env, cwd=cwd or ROOT, check=False, timeout=300)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("rendered")
    proc = play("-i", str(ROOT / "inventories" / "example"), "-e", f"sglang_render_dir={out}",
                "-e", f"sglang_hf_token={SECRET}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc


def test_every_host_has_its_files(rendered: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, _proc = rendered
    servers = ["b300-c01", "gb300-d01", "gb300-d02", "h200-a01", "h200-a02", "h200-b01", "h200-b02", "h200-f01",
               "h200-f02", "mi355x-e01"]
    units = {"h200-b01": "rack_h200_bf16", "h200-b02": "rack_h200_bf16", "h200-f01": "glm-5.3-prefill",
             "h200-f02": "glm-5.3-decode"}
    for host in servers:
        unit = f"files/etc/systemd/system/sglang-{units.get(host, 'glm-5.3')}.service"
        env = f"files/etc/sglang/{units.get(host, 'glm-5.3')}.env"
        firewall = ["files/etc/systemd/system/metalserve-sglang-firewall.service",
                    "files/etc/metalserve/sglang-firewall.nft"] if host.startswith("h200-b") else []
        # every node's metrics ports answer only mon-01 (the `monitoring` group)
        firewall += ["files/etc/systemd/system/metalserve-monitoring-firewall.service",
                     "files/etc/metalserve/monitoring-firewall.nft"]
        have = sorted(p.relative_to(out / host).as_posix() for p in (out / host).rglob("*") if p.is_file())
        for name in ["docker-run.sh", "serve.args", "serve.sh", unit, env, "driver.yml", "rdma.yml", "runtime.yml",
                     "weights.yml", "monitoring.yml"] + firewall:
            assert name in have, (host, name, have)
        assert not [n for n in have if "/" not in n and n.endswith((".service", ".env", ".nft"))], (host, have)
    router = sorted(p.relative_to(out / "router-01").as_posix() for p in (out / "router-01").rglob("*") if p.is_file())
    for name in ["files/etc/systemd/system/metalserve-monitoring-firewall.service",
                 "files/etc/metalserve/monitoring-firewall.nft", "router.args", "router.sh",
                 "files/etc/systemd/system/sglang-router.service", "runtime.yml", "monitoring.yml"]:
        assert name in router, (name, router)
    assert sorted(p.name for p in (out / "monitoring").iterdir()) == ["grafana-dashboard.json",
                                                                      "metalserve.rules.yml", "prometheus.yml"]
    assert "elements = { 10.10.9.20 }" in (out / "h200-a01" / "files/etc/metalserve/monitoring-firewall.nft").read_text()
    args = (out / "h200-b02" / "serve.args").read_text().splitlines()
    assert args[args.index("--node-rank") + 1] == "1"
    assert args[args.index("--dist-init-addr") + 1] == "10.10.2.11:20000"
    amd = (out / "mi355x-e01" / "serve.args").read_text().splitlines()
    assert "--cuda-graph-max-bs" in amd and "--cuda-graph-max-bs-decode" not in amd
    b300 = (out / "b300-c01" / "serve.args").read_text().splitlines()
    assert "--cuda-graph-max-bs-decode" in b300
    assert os.access(out / "h200-a01" / "serve.sh", os.X_OK)


def test_unit_and_docker_command_carry_the_same_argv(rendered: tuple[Path, subprocess.CompletedProcess]) -> None:
    import shlex
    out, _proc = rendered
    args = (out / "h200-b02" / "serve.args").read_text().splitlines()
    unit = (out / "h200-b02" / "files/etc/systemd/system/sglang-rack_h200_bf16.service").read_text()
    exec_start = unit.split("ExecStart=", 1)[1].split("\nExecStop", 1)[0].replace("\\\n", " ")
    assert exec_start.split()[-len(args):] == args
    docker = shlex.split((out / "h200-b02" / "docker-run.sh").read_text().split("exec ", 1)[1].replace("\\\n", " "))
    assert docker[-len(args) - 2:] == ["sglang", "serve"] + args
    assert "--network=host" in docker and "/var/lib/sglang/models/zai-org/GLM-5.3-BF16:/var/lib/sglang/models/zai-org/GLM-5.3-BF16:ro" in docker
    amd = shlex.split((out / "mi355x-e01" / "docker-run.sh").read_text().split("exec ", 1)[1].replace("\\\n", " "))
    assert "--device=/dev/kfd" in amd and "lmsysorg/sglang-rocm:v0.5.13.post1-rocm720-mi35x-20260618" in amd


def test_serve_sh_runs_the_same_argv(rendered: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, _proc = rendered
    script = (out / "h200-f02" / "serve.sh").read_text()
    command = script.split("exec ", 1)[1].replace("\\\n", " ")
    import shlex
    assert shlex.split(command)[2:] == (out / "h200-f02" / "serve.args").read_text().splitlines()


def test_plan_md(rendered: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, _proc = rendered
    plan = (out / "PLAN.md").read_text()
    rows = [line for line in plan.splitlines() if line.startswith("| ") and not line.startswith(("| Host", "| ---"))]
    assert len(rows) == 12  # eleven serving hosts and mon-01 (sglang_role: none)
    assert "| h200-b02 | B-h200-bf16 | server | h200 | bf16 | low-latency | 2 | rack_h200_bf16 | 1 | **no** |" in plan
    # the driver and runtime each node gets (no facts here: the node decides the 580.x it keeps)
    assert "| 580.x (node) open | docker (distro + toolkit) |" in plan
    assert "| gb300-d01 |" in plan and "580.x (node) open +IMEX |" in plan
    assert "| ROCm 7.2.4 | docker (distro) |" in plan
    assert "## Decided on the nodes" in plan
    assert "| h200-f01 | F-h200-pd | PD prefill |" in plan
    assert "| router-01 | F-h200-pd | router (pd) |" in plan
    assert "| mi355x-e01 | E-mi355x | server | mi355x | fp8 | balanced | 1 | glm-5.3 | 0 | **no** | 0.5.13.post1 | 8e04be51 |" in plan
    assert "is an unverified recipe" in plan
    # rack_pd_h200 pins the seed cookbook revision: each of its hosts hears what the newest page changed
    assert ("cookbook revision 03d5035a (sglang_cookbook_revision) differs from the newest shipped revision 8e04be51 "
            "for h200/fp8/balanced/1 node: the balanced strategy is gone there") in plan


def test_secrets_are_masked_everywhere(rendered: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, proc = rendered
    # docker: the token reaches the container as a mounted file, never as environment
    assert "HF_TOKEN_PATH=/run/secrets/hf_token" in (out / "h200-a01" / "files/etc/sglang/glm-5.3.env").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(), path
    assert SECRET not in proc.stdout + proc.stderr


def test_second_render_changes_nothing(rendered: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, _proc = rendered
    proc = play("-i", str(ROOT / "inventories" / "example"), "-e", f"sglang_render_dir={out}",
                "-e", f"sglang_hf_token={SECRET}")
    assert proc.returncode == 0
    assert re.search(r"changed=0\s", proc.stdout), proc.stdout[-2000:]


def test_bad_inventory_fails_with_every_problem_at_once(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    pair:\n      hosts:\n        n1: {sglang_gpu: h200, sglang_quant: bf16, sglang_strategy: balanced, sglang_nodes: 2,"
        " sglang_instance_group: pair}\n    solo:\n      hosts:\n        s1: {sglang_gpu: h100}\n"
        "        s2: {sglang_gpu: h200, sglang_quant: bf16}\n")
    proc = play("-i", str(inv), "-e", f"sglang_render_dir={tmp_path / 'out'}")
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "3 of 3 host(s) cannot be planned" in text
    assert "n1: sglang_instance_group: pair has 1 member(s) (n1) but sglang_nodes is 2" in text
    assert "s1: sglang_gpu: 'h100' is not a GPU the recipes know" in text
    assert "s2: sglang_nodes: bf16 on h200 needs sglang_nodes: 2" in text
    assert not (tmp_path / "out").exists()


def test_an_empty_or_unparsable_inventory_fails_and_keeps_rendered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "PLAN.md").write_text("an earlier plan")
    empty = tmp_path / "empty.yml"
    empty.write_text("all: {}\n")
    broken = tmp_path / "broken.yml"
    broken.write_text("all:\n  hosts: [n1\n")
    for inventory in (empty, broken, tmp_path / "missing.yml"):
        proc = play("-i", str(inventory), "-e", f"sglang_render_dir={out}")
        assert proc.returncode != 0, (inventory, proc.stdout[-1500:])
        assert "the inventory has no hosts" in proc.stdout + proc.stderr or "Unable to parse" in proc.stderr
    assert (out / "PLAN.md").read_text() == "an earlier plan"


def test_folders_of_hosts_that_left_the_inventory_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    gone = out / "h200-z99"
    gone.mkdir(parents=True)
    (gone / "serve.args").write_text("--tp-size\n8\n")
    (gone / "sglang-glm-5.3.service").write_text("[Unit]\n")
    mine = out / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("an operator's own folder stays")
    proc = play("-i", str(ROOT / "inventories" / "example"), "-e", f"sglang_render_dir={out}")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert not gone.exists() and (mine / "todo.txt").exists()
    assert "h200-z99/ (host left the inventory: removed)" in proc.stdout or "changed" in proc.stdout


def test_check_mode_writes_nothing(tmp_path: Path) -> None:
    proc = play("-i", str(ROOT / "inventories" / "example"), "-e", f"sglang_render_dir={tmp_path / 'out'}", "--check")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert not (tmp_path / "out").exists()


def test_plan_md_shows_preflight_from_cached_facts(tmp_path: Path) -> None:
    """Facts cached by an earlier run of gpu_facts add a Preflight column to PLAN.md."""
    import json

    from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, REAL_X2, SYNTH_X8

    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
           "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path / "facts"), "FIXTURE_BIN": str(FIXTURES / "bin")}
    fixtures = {"h200-a01": str(SYNTH_X8), "h200-a02": str(REAL_X2)}
    gather = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(ROOT / "inventories" / "example"), "--limit", "h200-a01,h200-a02",
         "-e", "ansible_connection=local", "-e", f"ansible_python_interpreter={sys.executable}",
         "-e", json.dumps({"fixtures": fixtures}), str(Path(__file__).parent / "playbooks" / "cache_gpu_facts.yml")],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=300)
    assert gather.returncode == 0, gather.stdout[-2000:]
    out = tmp_path / "out"
    proc = subprocess.run([str(BIN / "ansible-playbook"), str(ROOT / "playbooks" / "render.yml"), "-i",
                           str(ROOT / "inventories" / "example"), "-e", f"sglang_render_dir={out}"],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    plan = (out / "PLAN.md").read_text()
    assert "| Warnings | Preflight |" in plan
    assert re.search(r"^\| h200-a01 \|.*\| ok \|$", plan, re.M)
    assert re.search(r"^\| h200-a02 \|.*\| \*\*1 problem\(s\)\*\* \|$", plan, re.M)
    assert re.search(r"^\| h200-b01 \|.*\| - \|$", plan, re.M)
    assert "- the recipe needs 8 h200 GPUs per node (TP8 on one node); this node has 2 (NVIDIA H200)." in plan
