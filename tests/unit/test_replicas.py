"""Several servers of one cell per node (sglang_replicas, sglang_replica_gpus): GPU sets, ports, units, the router pool,
monitoring, verify targets, and the site checker reading the rendered files back.

Expected values are written by hand from the situation: four TP2 replicas of Qwen3.8-27B on an 8-GPU H200 node take
GPUs 0-1, 2-3, 4-5, 6-7, listen on 30000, 30010, 30020, 30030 (data/sglang/ports.yml: step 10) and pin their NCCL port
one above. The refusals are in tests/bad_inputs.yml (exact messages, docs/troubleshooting.md lists them).
"""
from __future__ import annotations

import copy
import json
import re
from typing import Any

import yaml

from ansible_collections.metalserve.sglang.plugins.filter.serving_instances import serving_instances
from ansible_collections.metalserve.sglang.plugins.filter.verify_targets import verify_targets
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import site as checker
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import render
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

QWEN = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced"}
TP2 = {**QWEN, "sglang_replicas": 4, "sglang_extra_args": ["--tp-size", "2"]}


def planned(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]] | None = None) -> dict[str, Any]:
    site = plan_site(hostvars, {"all": sorted(hostvars), **(groups or {})})
    assert site["errors"] == {}, site["errors"]
    return site


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_four_tp2_replicas_on_an_eight_gpu_node_uv() -> None:
    plan = planned({"q1": {**TP2, "sglang_install_method": "uv", "ansible_host": "10.0.0.1"}})["plans"]["q1"]
    got = [(r["instance"], r["unit"], r["gpus"], flag(r["argv"], "--port"), flag(r["argv"], "--nccl-port"),
            r["settings"]["env_file"]) for r in plan["replicas"]]
    assert got == [
        ("qwen3.8-27b-r0", "sglang-qwen3.8-27b-r0.service", [0, 1], "30000", "30001", "/etc/sglang/qwen3.8-27b-r0.env"),
        ("qwen3.8-27b-r1", "sglang-qwen3.8-27b-r1.service", [2, 3], "30010", "30011", "/etc/sglang/qwen3.8-27b-r1.env"),
        ("qwen3.8-27b-r2", "sglang-qwen3.8-27b-r2.service", [4, 5], "30020", "30021", "/etc/sglang/qwen3.8-27b-r2.env"),
        ("qwen3.8-27b-r3", "sglang-qwen3.8-27b-r3.service", [6, 7], "30030", "30031", "/etc/sglang/qwen3.8-27b-r3.env")]
    r2 = plan["replicas"][2]
    # the mask in its own environment file, in nvidia-smi's numbering; the command ends as upstream writes it
    assert r2["files"]["env"]["content"].splitlines()[1:] == ["CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=4,5"]
    assert r2["argv"][-6:] == ["--nccl-port", "30021", "--host", "0.0.0.0", "--port", "30020"]
    assert flag(r2["argv"], "--tp-size") == "2"
    unit = r2["files"]["unit"]["content"]
    assert "EnvironmentFile=/etc/sglang/qwen3.8-27b-r2.env" in unit and "SyslogIdentifier=sglang-qwen3.8-27b-r2" in unit
    assert "--url http://127.0.0.1:30020/health" in unit
    # the host's plan is its first replica's, and its files are every replica's
    assert plan["instance"] == "qwen3.8-27b-r0" and plan["replica_of"] == "qwen3.8-27b"
    assert sorted(f["path"] for f in plan["files"].values()) == sorted(
        [f"/etc/systemd/system/sglang-qwen3.8-27b-r{i}.service" for i in range(4)]
        + [f"/etc/sglang/qwen3.8-27b-r{i}.env" for i in range(4)])


def test_docker_replicas_get_a_quoted_device_list() -> None:
    """docker's --gpus value is one CSV record: the list is quoted inside it, and systemd unquotes the unit's word."""
    site = planned({"q1": {**TP2, "sglang_install_method": "docker", "ansible_host": "10.0.0.1"}})
    r1 = site["plans"]["q1"]["replicas"][1]
    unit = r1["files"]["unit"]["content"]
    assert '--gpus "\\"device=2,3\\""' in unit and "--gpus all" not in unit
    assert "-p 30010:30010" in unit and "--name sglang-qwen3.8-27b-r1" in unit
    assert "CUDA_VISIBLE_DEVICES" not in r1["files"]["env"]["content"]  # the container sees its two GPUs as 0 and 1
    exec_start = [v for s, k, v in checker.unit_entries(unit) if k == "ExecStart"][0]
    words = checker.exec_argv(exec_start)
    assert words[words.index("--gpus") + 1] == '"device=2,3"'
    views = render.render_all(site["plans"], "x", site_monitoring=site["monitoring"])
    assert "--gpus '\"device=2,3\"'" in views["q1/docker-run.sh"][0]


def test_amd_replicas_take_hip_visible_devices_and_keep_the_device_nodes() -> None:
    # GLM-5.3 FP8 (~755 GB) does not fit two GPUs: a smaller checkpoint (a site recipe's own)
    recipe = [{"id": "glm-5.3", "cells": [{"gpu": "mi355x", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                                           "verified": True, "flags": {"--tp-size": 2}}],
               "checkpoints": {"fp8": {"id": "zai-org/GLM-5.3", "size_gb": 300}}}]
    site = planned({"a1": {"sglang_gpu": "mi355x", "sglang_quant": "fp8", "sglang_strategy": "balanced",
                           "sglang_recipes": recipe, "sglang_replicas": 4, "sglang_install_method": "docker",
                           "ansible_host": "10.0.2.1"}})
    r3 = site["plans"]["a1"]["replicas"][3]
    assert r3["files"]["env"]["content"].splitlines()[1:] == ["HIP_VISIBLE_DEVICES=6,7"]
    unit = r3["files"]["unit"]["content"]
    assert "--device=/dev/kfd" in unit and "--device=/dev/dri" in unit and "--gpus" not in unit


def test_named_gpu_sets_and_one_pinned_server() -> None:
    site = planned({"q1": {**QWEN, "sglang_replica_gpus": [[6, 7], [0, 1]], "sglang_extra_args": ["--tp-size", "2"],
                           "sglang_install_method": "uv"},
                    "q2": {**QWEN, "sglang_replica_gpus": [[4, 5, 6, 7]], "sglang_extra_args": ["--tp-size", "4"],
                           "sglang_install_method": "uv"}})
    q1, q2 = site["plans"]["q1"], site["plans"]["q2"]
    assert [(r["instance"], r["gpus"], r["recipe"]["port"]) for r in q1["replicas"]] == [
        ("qwen3.8-27b-r0", [6, 7], 30000), ("qwen3.8-27b-r1", [0, 1], 30010)]
    # a single set pins the host's one server: its name, port and command stay, its GPUs are the set
    assert "replicas" not in q2 and q2["unit"] == "sglang-qwen3.8-27b.service" and q2["gpus"] == [4, 5, 6, 7]
    assert "--nccl-port" not in q2["argv"] and q2["env"]["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"


def test_a_server_without_replicas_is_unchanged() -> None:
    plan = planned({"q1": dict(QWEN)})["plans"]["q1"]
    assert "replicas" not in plan and plan["gpus"] is None and plan["unit"] == "sglang-qwen3.8-27b.service"
    assert "--nccl-port" not in plan["argv"] and "CUDA_VISIBLE_DEVICES" not in plan["env"]


def fleet() -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    hostvars = {"q1": {**TP2, "ansible_host": "10.0.3.1"}, "q2": {**TP2, "ansible_host": "10.0.3.2"},
                "rq": {"sglang_role": "router", "sglang_router_workers_group": "qwen", "ansible_host": "10.0.9.3"},
                "mon": {"sglang_role": "none", "ansible_host": "10.0.9.20"}}
    return hostvars, {"qwen": ["q1", "q2"], "monitoring": ["mon"]}


def test_the_router_pool_takes_every_replica_of_every_host() -> None:
    router = planned(*fleet())["plans"]["rq"]
    assert router["workers"] == ["http://10.0.3.1:30000", "http://10.0.3.1:30010", "http://10.0.3.1:30020",
                                 "http://10.0.3.1:30030", "http://10.0.3.2:30000", "http://10.0.3.2:30010",
                                 "http://10.0.3.2:30020", "http://10.0.3.2:30030"]
    assert router["argv"][:9] == ["--worker-urls", *router["workers"]]
    assert router["model"] == "qwen3.8-27b" and router["served_model_name"] == "Qwen/Qwen3.8-27B-FP8"


def test_a_scrape_target_per_replica_labelled_with_model_and_instance() -> None:
    site = planned(*fleet())
    jobs = {j["job_name"]: j for j in yaml.safe_load(site["monitoring"]["files"]["prometheus"]["content"])["scrape_configs"]}
    sglang = {c["targets"][0]: c["labels"] for c in jobs["metalserve-sglang"]["static_configs"]}
    assert sorted(sglang) == sorted(f"10.0.3.{h}:300{p}0" for h in (1, 2) for p in range(4))
    assert sglang["10.0.3.2:30020"] == {"instance": "q2", "role": "server", "sglang_instance": "qwen3.8-27b-r2",
                                        "head": "q2", "model": "qwen3.8-27b", "gpu_model": "h200", "quant": "fp8",
                                        "strategy": "balanced", "rank": "0", "replica": "2"}
    health = [c["targets"][0] for c in jobs["metalserve-health"]["static_configs"]]
    assert "http://10.0.3.1:30030/health" in health and len(health) == 9  # 8 replicas and the router
    node = {c["targets"][0]: c["labels"] for c in jobs["metalserve-node"]["static_configs"]}
    assert node["10.0.3.1:9100"]["sglang_instance"] == "qwen3.8-27b" and "replica" not in node["10.0.3.1:9100"]
    router = {c["targets"][0]: c["labels"] for c in jobs["metalserve-sglang-router"]["static_configs"]}
    assert router["10.0.9.3:29000"]["model"] == "qwen3.8-27b"
    board = json.loads(site["monitoring"]["files"]["dashboard"]["content"])
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows[1] == "qwen3.8-27b-r1 on GPU 2, 3 of q1 (h200/fp8/balanced)" and len(rows) == 8
    exprs = [t["expr"] for p in board["panels"] if p["type"] != "row" for t in p["targets"]]
    assert 'DCGM_FI_DEV_GPU_UTIL{job="metalserve-dcgm", instance=~"q1", gpu=~"2|3"}' in exprs
    assert any('sglang_instance="qwen3.8-27b-r1"' in e for e in exprs)


def test_verify_reaches_each_replica_and_the_router() -> None:
    site = planned(*fleet())
    targets = verify_targets(site["plans"]["q1"])
    assert [(t["instance"], t["url"]) for t in targets] == [
        (f"qwen3.8-27b-r{i}", f"http://127.0.0.1:300{i}0") for i in range(4)]
    assert targets[0]["verify"]["reasoning_parser"] == "qwen3" and targets[0]["verify"]["tool_call_parser"] == "qwen3_coder"
    assert [t["url"] for t in verify_targets(site["plans"]["rq"])] == ["http://127.0.0.1:8000"]
    assert [i["unit"] for i in serving_instances(site["plans"])] == [
        f"sglang-qwen3.8-27b-r{i}.service" for i in range(4)] * 2


def test_plan_md_and_the_serve_view_name_every_replica() -> None:
    site = planned(*fleet())
    views = render.render_all(site["plans"], "x", site_monitoring=site["monitoring"])
    row = [line for line in views["PLAN.md"][0].splitlines() if line.startswith("| q1 |")][0]
    assert "| qwen3.8-27b x4 (qwen3.8-27b-r0, qwen3.8-27b-r1, qwen3.8-27b-r2, qwen3.8-27b-r3) |" in row
    serve = yaml.safe_load(views["q1/serve.yml"][0])
    assert [(r["unit"], r["gpus"], r["port"]) for r in serve["replicas"]] == [
        (f"sglang-qwen3.8-27b-r{i}.service", [2 * i, 2 * i + 1], 30000 + 10 * i) for i in range(4)]
    assert views["q1/serve.args"][0].count("--nccl-port") == 4


# --- the site checker, reading the rendered files back -------------------------------------------------------------

def nodes() -> dict[str, Any]:
    hostvars, groups = fleet()
    hostvars = {h: {**v, "sglang_install_method": "uv"} if h.startswith("q") else v for h, v in hostvars.items()}
    return checker.nodes_from_site(planned(hostvars, groups), hostvars)


def edited(tree: dict[str, Any], host: str, path: str, old: str, new: str) -> dict[str, Any]:
    tree = copy.deepcopy(tree)
    assert old in tree[host]["files"][path], (path, old)
    tree[host]["files"][path] = tree[host]["files"][path].replace(old, new)
    return tree


def refused(tree: dict[str, Any], host: str, pattern: str) -> None:
    mine = [m for h, m in checker.check_site(tree) if h == host]
    assert any(re.search(pattern, m) for m in mine), mine


def test_the_checker_accepts_the_replicas_as_rendered() -> None:
    tree = nodes()
    assert sum(p.endswith(".service") and "qwen" in p for p in tree["q1"]["files"]) == 4
    assert checker.check_site(tree) == []


def test_the_checker_refuses_two_replicas_on_one_gpu() -> None:
    tree = edited(nodes(), "q1", "/etc/sglang/qwen3.8-27b-r1.env", "CUDA_VISIBLE_DEVICES=2,3", "CUDA_VISIBLE_DEVICES=1,2")
    refused(tree, "q1", r"^GPU 1 of 10\.0\.3\.1 would serve sglang-qwen3\.8-27b-r0\.service \(q1\) and "
                        r"sglang-qwen3\.8-27b-r1\.service \(q1\) at once")


def test_the_checker_refuses_a_replica_without_its_mask() -> None:
    tree = edited(nodes(), "q1", "/etc/sglang/qwen3.8-27b-r3.env", "CUDA_VISIBLE_DEVICES=6,7\n", "")
    refused(tree, "q1", r"^GPU 0, 1 of 10\.0\.3\.1 would serve sglang-qwen3\.8-27b-r0\.service \(q1\) and "
                        r"sglang-qwen3\.8-27b-r3\.service \(q1\) at once")


def test_the_checker_refuses_replicas_sharing_a_port() -> None:
    unit = "/etc/systemd/system/sglang-qwen3.8-27b-r1.service"
    same_nccl = edited(nodes(), "q1", unit, "--nccl-port 30011", "--nccl-port 30001")
    refused(same_nccl, "q1", r"^port 30001 is bound twice on 10\.0\.3\.1: sglang-qwen3\.8-27b-r0\.service --nccl-port "
                             r"of q1 and sglang-qwen3\.8-27b-r1\.service --nccl-port of q1")
    same_port = edited(nodes(), "q1", unit, "--port 30010", "--port 30000")
    refused(same_port, "q1", r"^port 30000 is bound twice on 10\.0\.3\.1: sglang-qwen3\.8-27b-r0\.service --port of q1 "
                             r"and sglang-qwen3\.8-27b-r1\.service --port of q1")


def test_the_retire_rule_finds_only_this_instance_s_units() -> None:
    """sglang_server removes units of the instance the plan no longer runs (replicas dropped): the rule must match the
    instance's own names only - also for an instance called `sglang` (its unit is sglang-sglang.service)."""
    import re  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    q = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced",
         "sglang_install_method": "uv", "sglang_instance": "sglang", "ansible_host": "10.0.0.1"}
    site = plan_site({"a": q}, {"all": ["a"]})
    assert site["errors"] == {}
    rule = site["plans"]["a"]["retire"]
    pattern = re.compile(rule["pattern"])
    assert [n for n in ["sglang-sglang.service", "sglang-sglang-r3.service", "sglang-sglang2.service",
                        "sglang-sglang-r3x.service", "sglang-other.service", "sglang-router.service"]
            if pattern.match(n)] == ["sglang-sglang.service", "sglang-sglang-r3.service"]
    # the role cuts the instance name out by length (tasks/retire.yml): the prefix and suffix the pattern is made of
    cut = "sglang-sglang-r3.service"[len(rule["unit_prefix"]):-len(rule["unit_suffix"])]
    assert cut == pattern.match("sglang-sglang-r3.service").group(1) == "sglang-r3"
    assert rule["units_dir"] == "/etc/systemd/system"
    assert "/etc/sglang/{instance}.env" in rule["paths"]
