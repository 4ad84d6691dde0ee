"""SGLang's own parser reads every replica's command (sglang_replicas) as one server of the cell on its own ports.

A mixed site is planned (GLM-5.3 on H200, DeepSeek-V4-Pro on B200, four TP2 replicas of Qwen3.8-27B per H200 node,
eight TP1 replicas on another, four TP2 replicas of a site-recipe GLM-5.3 cell on MI355X in the ROCm image), and the
command each unit file runs (its ExecStart, after the image or the venv's `sglang serve`) is parsed by the parser of
the release that runs it: 0.5.23, and 0.5.13.post1 inside the ROCm image. What each must read is written here by hand:
replica i on --port 30000 + 10 i with --nccl-port one above, the cell's TP size, and nothing else apart from the
other replicas of its host. The router in front of the Qwen racks is read by sglang-router's parser.

Needs the parser venvs (tests/slow/sglang_parser_venv.sh; `make slow` passes them in SGLANG_PARSER_PYTHON and
SGLANG_PARSER_PYTHON_0_5_13_POST1).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import site as checker
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

pytestmark = pytest.mark.slow
HELPER = Path(__file__).with_name("parse_with_sglang.py")
PYTHONS = {"0.5.23": os.environ.get("SGLANG_PARSER_PYTHON", ""),
           "0.5.13.post1": os.environ.get("SGLANG_PARSER_PYTHON_0_5_13_POST1", "")}
QWEN = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced",
        "sglang_model_path": "/nvme/models/Qwen/Qwen3.8-27B-FP8", "sglang_install_method": "docker",
        "sglang_image": "lmsysorg/sglang:v0.5.23-cu129"}
# a site recipe whose checkpoint fits two MI355X (GLM-5.3 FP8's ~755 GB does not: the plan refuses that)
AMD_TP2 = [{"id": "glm-5.3", "checkpoints": {"fp8": {"id": "zai-org/GLM-5.3", "size_gb": 300}},
            "cells": [{"gpu": "mi355x", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                       "verified": True, "flags": {"--tp-size": 2}}]}]
HOSTVARS: dict[str, dict[str, Any]] = {
    "g1": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput", "ansible_host": "10.0.1.1"},
    "d1": {"sglang_gpu": "b200", "sglang_model": "deepseek-v4-pro", "sglang_strategy": "balanced",
           "ansible_host": "10.0.2.1"},
    "q1": {**QWEN, "sglang_replicas": 4, "sglang_extra_args": ["--tp-size", "2"], "ansible_host": "10.0.3.1"},
    "q2": {**QWEN, "sglang_replicas": 8, "sglang_install_method": "uv", "sglang_image": None, "ansible_host": "10.0.3.2"},
    "a1": {"sglang_gpu": "mi355x", "sglang_quant": "fp8", "sglang_strategy": "balanced", "sglang_recipes": AMD_TP2,
           "sglang_replicas": 4, "sglang_install_method": "docker", "ansible_host": "10.0.4.1"},
    "rq": {"sglang_role": "router", "sglang_router_workers_group": "qwen", "ansible_host": "10.0.9.1"},
}
GROUPS = {"all": sorted(HOSTVARS), "qwen": ["q1", "q2"]}


def parse(release: str, serve: dict[str, list[str]], router: dict[str, list[str]] | None = None) -> dict[str, Any]:
    python = PYTHONS[release]
    if not python:
        pytest.skip(f"no parser venv for SGLang {release} (make slow builds it)")
    request = {"serve": list(serve.values()), "router": list((router or {}).values())}
    proc = subprocess.run([python, str(HELPER)], input=json.dumps({**request}), capture_output=True, text=True,
                          check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    return {"version": result["sglang"], "serve": dict(zip(serve, result["serve"])),
            "router": dict(zip(router or {}, result["router"]))}


@pytest.fixture(scope="module")
def site() -> dict[str, Any]:
    hostvars = {h: {k: v for k, v in hv.items() if v is not None} for h, hv in HOSTVARS.items()}
    planned = plan_site(hostvars, GROUPS)
    assert planned["errors"] == {}, planned["errors"]
    return {"plan": planned, "nodes": checker.read_nodes(checker.nodes_from_site(planned, hostvars))}


def commands(site: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """{release: {'host unit': args}}: what each unit file runs, read as systemd and docker read it."""
    out: dict[str, dict[str, list[str]]] = {}
    for node in site["nodes"]:
        for svc in node.services:
            if svc.kind == "server":
                checker.read_release(svc)
                out.setdefault(svc.release, {})[f"{node.host} {svc.name}"] = svc.args
    return out


def test_every_replica_parses_as_one_server_on_its_own_ports(site: dict[str, Any]) -> None:
    by_release = commands(site)
    assert sorted(by_release) == ["0.5.13.post1", "0.5.23"]
    assert len(by_release["0.5.23"]) == 1 + 1 + 4 + 8 and len(by_release["0.5.13.post1"]) == 4
    read: dict[str, dict[str, Any]] = {}
    for release, batch in by_release.items():
        result = parse(release, batch)
        assert result["version"] == release
        failures = {k: v["error"] for k, v in result["serve"].items() if not v["ok"]}
        assert not failures
        read.update({k: v["ns"] for k, v in result["serve"].items()})
    for host, replicas, tp in (("q1", 4, 2), ("q2", 8, 1), ("a1", 4, 2)):
        mine = [read[f"{host} sglang-{'glm-5.3' if host == 'a1' else 'qwen3.8-27b'}-r{i}.service"] for i in range(replicas)]
        assert [(ns["port"], ns["nccl_port"]) for ns in mine] == [(30000 + 10 * i, 30001 + 10 * i) for i in range(replicas)]
        assert {ns.get("tp_size", ns.get("tensor_parallel_size")) for ns in mine} == {tp}
        differ = {k for ns in mine for k in ns if ns[k] != mine[0][k]}
        assert differ == {"port", "nccl_port"}, (host, differ)
        assert all(ns["host"] == "0.0.0.0" for ns in mine)
    q1 = read["q1 sglang-qwen3.8-27b-r3.service"]
    assert (q1["model_path"], q1["served_model_name"]) == ("/nvme/models/Qwen/Qwen3.8-27B-FP8", "Qwen/Qwen3.8-27B-FP8")
    assert (q1["reasoning_parser"], q1["tool_call_parser"], q1["enable_metrics"]) == ("qwen3", "qwen3_coder", True)
    # the servers without replicas keep SGLang's own NCCL port choice
    assert read["g1 sglang-glm-5.3.service"]["nccl_port"] is None
    assert read["d1 sglang-deepseek-v4-pro.service"]["reasoning_parser"] == "deepseek-v4"


def test_the_router_takes_every_replica(site: dict[str, Any]) -> None:
    router = site["plan"]["plans"]["rq"]["argv"]
    result = parse("0.5.23", {}, {"rq": router})["router"]["rq"]
    assert result["ok"], result["error"]
    assert result["ns"]["worker_urls"] == [f"http://10.0.3.1:300{i}0" for i in range(4)] + \
        [f"http://10.0.3.2:300{i}0" for i in range(8)]
