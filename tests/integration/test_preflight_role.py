"""The preflight role through Ansible on this GPU-less machine, and with the nvidia-smi stand-in
replaying the real 2x H200 capture (the same role ran on the real machines: see the issue's note)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, REAL_X2, ROOT

BIN = Path(sys.executable).parent
PLAY = Path(__file__).parent / "playbooks" / "preflight_localhost.yml"
TINY = [{"id": "tiny-moe", "checkpoints": {"bf16": {"id": "example-org/Tiny-MoE", "size_gb": 30}},
         "images": {"h200": {"ref": "registry.local/sglang:v0.5.23-cu129"}},
         "cells": [{"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 1, "verified": True,
                    "flags": {"--tp-size": 2}}]}]


def preflight(tmp: Path, hostvars: dict, fixture: Path | None = None) -> subprocess.CompletedProcess:
    inventory = tmp / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"node0": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "preflight_weights_path": str(tmp / "weights"), **hostvars}}}}))
    (tmp / "weights").mkdir(exist_ok=True)
    (tmp / "weights" / "model.safetensors.index.json").write_text("{}")  # staged: the disk check passes
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_CACHE_PLUGIN": "memory",
           "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"}
    if fixture:
        env.update(FIXTURE_BIN=str(FIXTURES / "bin"), NVIDIA_SMI_FIXTURE=str(fixture))
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(PLAY)], capture_output=True,
                          text=True, env=env, cwd=ROOT, check=False, timeout=300)


def task_result(proc: subprocess.CompletedProcess, name: str) -> dict:
    out = json.loads(proc.stdout)
    for play in out["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"].split(" : ")[-1] == name:
                return task["hosts"]["node0"]
    raise AssertionError(f"no task {name!r} in the run")


def test_gpu_less_machine_explains_no_gpu(tmp_path: Path) -> None:
    proc = preflight(tmp_path, {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"})
    assert proc.returncode == 2
    result = task_result(proc, "Check every host against its recipe")
    assert result["failed"] and "Traceback" not in proc.stdout
    assert result["msg"].startswith("preflight: 1 of 1 host(s) cannot serve what the inventory asks:\n"
                                    "node0 (glm-5.3 h200/fp8/high-throughput, 1 node, 8 GPUs per node):\n"
                                    "  - no GPU found: nvidia-smi, amd-smi and rocm-smi gave no GPU")
    facts = task_result(proc, "Detect GPUs")["ansible_facts"]["metalserve_gpu"]
    assert (facts["vendor"], facts["count"], facts["source"]) == ("none", 0, "none")


def test_replayed_h200_capture_refuses_tp8_and_accepts_tp2(tmp_path: Path) -> None:
    # sglang_strategy's default (balanced) is not an FP8 cell of the newest cookbook revision on NVIDIA
    proc = preflight(tmp_path, {"sglang_strategy": "high-throughput"}, REAL_X2)
    facts = task_result(proc, "Detect GPUs")["ansible_facts"]["metalserve_gpu"]
    assert (facts["gpu_id"], facts["count"], facts["nvlink"]["all_pairs_connected"]) == ("h200", 2, True)
    plan = task_result(proc, "Plan the site once (every host's plan; all hosts' problems in one message)")
    assert plan["plans"]["node0"]["recipe"]["gpu"] == "h200"  # sglang_gpu unset: planned with the detected GPU
    assert {"what": "sglang_gpu", "value": "h200", "source": "gpu_facts on node0", "known": True} in \
        plan["plans"]["node0"]["resolved"]
    msg = task_result(proc, "Check every host against its recipe")["msg"]
    assert "the recipe needs 8 h200 GPUs per node (TP8 on one node); this node has 2 (NVIDIA H200)" in msg
    ok = preflight(tmp_path, {"sglang_model": "tiny-moe", "sglang_quant": "bf16", "sglang_recipes": TINY}, REAL_X2)
    assert ok.returncode == 0, ok.stdout[-3000:]
    report = task_result(ok, "Check every host against its recipe")
    assert report["msg"] == "preflight: 1 server(s) can hold their recipes"
    assert report["report"]["node0"]["ok"] is True


def test_fabric_facts_on_a_built_tree(tmp_path: Path) -> None:
    from ansible_collections.metalserve.sglang.tests.helpers import ib_tree
    ib_tree(tmp_path / "root", {"mlx5_0": {"netdevs": ["ens1f0np0"], "ports": {1: {
        "state": "ACTIVE", "layer": "Ethernet",
        "gids": {3: ("0000:0000:0000:0000:0000:ffff:0a0a:020b", "RoCE v2", "ens1f0np0")}}}}}, ("uverbs0",))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_LOCALHOST_WARNING": "0"}
    proc = subprocess.run([str(BIN / "ansible"), "localhost", "-m", "metalserve.sglang.fabric_facts", "-a",
                           json.dumps({"sysfs_root": str(tmp_path / "root"), "resolve": ["localhost"]}),
                           "-e", f"ansible_python_interpreter={sys.executable}", "-o"],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    facts = json.loads(proc.stdout.split(" => ", 1)[1])["ansible_facts"]["metalserve_fabric"]
    assert facts["active_ports"] == ["mlx5_0:1"] and facts["devices"][0]["ports"][0]["roce_v2_gid_index"] == 3
    assert "127.0.0.1" in facts["resolved"]["localhost"] and facts["uverbs_present"] is True
