"""The realistic sites in inventories/ plan and render through Ansible itself (inventory parsing, group_vars
and host_vars layering, INI and YAML, host ranges, templated variables), and their plans say what an
operator of each site expects: ranks, heads, ports, router targets, environment, install."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
SITES = ["h200-4rack", "gb300", "mi355x", "generated-64", "layered", "airgapped", "mixed"]
ENV = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
       "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_CACHE_PLUGIN": "memory"}


def run(playbook: Path, site: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(ROOT / "inventories" / site), str(playbook),
                           *extra], capture_output=True, text=True, env=ENV, cwd=ROOT, check=False, timeout=600)


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = {}
    tmp = tmp_path_factory.mktemp("plans")
    for site in SITES:
        dump = tmp / f"{site}.json"
        proc = run(Path(__file__).parent / "playbooks" / "dump_plan.yml", site, "-e", f"dump={dump}")
        assert proc.returncode == 0, f"{site}:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        out[site] = json.loads(dump.read_text())
    return out


@pytest.mark.parametrize("site", SITES)
def test_every_site_renders(site: str, tmp_path: Path) -> None:
    proc = run(ROOT / "playbooks" / "render.yml", site, "-e", f"sglang_render_dir={tmp_path}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (tmp_path / "PLAN.md").exists()


def servers(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h: p for h, p in plan["plans"].items() if p["role"] == "server"}


def flag(plan: dict[str, Any], name: str) -> str:
    argv = plan["argv"]
    return argv[argv.index(name) + 1]


def test_h200_four_racks(plans: dict[str, dict[str, Any]]) -> None:
    site = plans["h200-4rack"]
    assert site["errors"] == {}
    p = site["plans"]
    # rack B: two TP16 instances, ranks by sorted name, the head's IPoIB address and each its own port
    assert [(h, p[h]["rank"], flag(p[h], "--dist-init-addr")) for h in ("h200-b01", "h200-b02", "h200-b03", "h200-b04")] \
        == [("h200-b01", 0, "192.168.2.11:20000"), ("h200-b02", 1, "192.168.2.11:20000"),
            ("h200-b03", 0, "192.168.2.13:20100"), ("h200-b04", 1, "192.168.2.13:20100")]
    assert flag(p["h200-b02"], "--tp-size") == "16" and flag(p["h200-b02"], "--nnodes") == "2"
    assert p["h200-b01"]["env"] == {"NCCL_SOCKET_IFNAME": "ibp12s0", "GLOO_SOCKET_IFNAME": "ibp12s0"}
    assert p["h200-b01"]["unit"] == "sglang-tp16_b1.service" and p["h200-b03"]["unit"] == "sglang-tp16_b2.service"
    # rack C: PD behind router-c, prefill on 30000, decode on 30100, ansible_host addresses
    assert p["router-c"]["argv"][:9] == ["--pd-disaggregation", "--prefill", "http://10.20.3.11:30000", "--prefill",
                                         "http://10.20.3.12:30000", "--decode", "http://10.20.3.13:30100",
                                         "--decode", "http://10.20.3.14:30100"]
    assert flag(p["h200-c03"], "--disaggregation-mode") == "decode" and p["h200-c03"]["recipe"]["port"] == 30100
    # rack A behind router-a, cache aware
    assert p["router-a"]["workers"] == [f"http://10.20.1.1{i}:30000" for i in range(1, 5)]
    assert flag(p["router-a"], "--policy") == "cache_aware"
    # images: the site's pin, through no mirror; rack D runs uv venvs of the same release
    assert {p[h]["install"]["image"] for h in servers(site) if h.startswith("h200-a")} == {"lmsysorg/sglang:v0.5.23-cu129"}
    assert p["h200-d01"]["install"]["venv"] == "/opt/sglang/venvs/0.5.23"
    assert flag(p["h200-d01"], "--max-running-requests") == "64"


def test_gb300_trays(plans: dict[str, dict[str, Any]]) -> None:
    site = plans["gb300"]
    assert site["errors"] == {}
    p = site["plans"]
    assert flag(p["gb300-a01"], "--tp-size") == "4" and p["gb300-a01"]["recipe"]["gpus_per_node"] == 4
    ranks = [(p[h]["rank"], p[h]["head_address"]) for h in ("gb300-b01", "gb300-b02")]
    assert ranks == [(0, "10.30.2.11"), (1, "10.30.2.11")]
    assert flag(p["gb300-b02"], "--tp-size") == "8"
    assert p["router-gb"]["workers"] == [f"http://10.30.1.1{i}:30000" for i in range(1, 5)]
    assert all(p[h]["vendor"] == "nvidia" for h in servers(site))


def test_mi355x(plans: dict[str, dict[str, Any]]) -> None:
    site = plans["mi355x"]
    assert site["errors"] == {}
    p = site["plans"]
    fp8, bf16 = p["mi355x-01"], p["mi355x-03"]
    for docker in (fp8, bf16):
        assert docker["vendor"] == "amd" and docker["recipe"]["sglang_version"] == docker["install"]["release"]
        assert docker["install"]["image"] == docker["recipe"]["image"] and "rocm" in docker["install"]["image"]
        # the flag spelling follows the release the ROCm image holds (0.5.13.post1)
        assert "--cuda-graph-max-bs-decode" not in docker["argv"]
    # one router per model (a pool serves one checkpoint)
    assert flag(p["router-fp8"], "--policy") == "round_robin" and len(p["router-fp8"]["workers"]) == 2
    assert p["router-bf16"]["workers"] == ["http://10.40.1.13:30000", "http://10.40.1.14:30000"]


def test_generated_64(plans: dict[str, dict[str, Any]]) -> None:
    site = plans["generated-64"]
    assert site["errors"] == {}
    assert len(servers(site)) == 64
    p = site["plans"]
    # the templated sglang_router_workers_group picked each router's own rack
    for r in ("01", "02", "03", "04"):
        router = p[f"router-r{r}.dc1.example.net"]
        assert router["workers_group"] == f"rack_{r}"
        assert router["workers"] == [f"http://gpu-r{r}-n{n:02d}.dc1.example.net:30000" for n in range(1, 17)]
    assert {p[h]["recipe"]["strategy"] for h in servers(site)} == {"high-throughput"}


def test_layered(plans: dict[str, dict[str, Any]]) -> None:
    site = plans["layered"]
    assert site["errors"] == {}
    p = site["plans"]
    # group_vars/all/ (a folder) < nvidia < pair_bf16 < host_vars
    assert p["h200-11"]["env"] == {"NCCL_DEBUG": "WARN"}
    assert p["h200-21"]["env"] == {"NCCL_DEBUG": "WARN", "NCCL_IB_TIMEOUT": "22"}
    assert p["h200-12"]["recipe"]["port"] == 31000 and "RestartSec=60" in p["h200-12"]["files"]["unit"]["content"]
    # pinned ranks: h200-22 is the head although it sorts second
    assert (p["h200-22"]["rank"], p["h200-21"]["rank"], p["h200-21"]["head_address"]) == (0, 1, "10.50.2.22")
    # role settings from the inventory reach the unit and the install
    unit = p["h200-11"]["files"]["unit"]["content"]
    assert "RestartSec=45" in unit and "TimeoutStartSec=2400" in unit
    assert p["h200-11"]["install"]["venv"] == "/srv/sglang/venvs/0.5.23"
    assert p["gateway"]["argv"][:3] == ["--worker-urls", "http://10.50.1.11:30000", "http://10.50.1.12:31000"]
    # a site pinned to the cookbook page it was built on keeps that command, and hears what the newest says
    assert p["h200-11"]["recipe"]["cookbook_revision"] == "03d5035a" and p["h200-11"]["recipe"]["strategy"] == "balanced"
    assert any("differs from the newest shipped revision 8e04be51" in w for w in p["h200-11"]["warnings"])
    assert flag(p["gateway"], "--port") == "9000"


def test_airgapped(plans: dict[str, dict[str, Any]]) -> None:
    site = plans["airgapped"]
    assert site["errors"] == {}
    p = site["plans"]
    digest = "sha256:0d3f2c1e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d"
    assert p["ag-h200-01"]["install"]["image"] == f"registry.airgap.internal:5000/lmsysorg/sglang@{digest}"
    assert f"registry.airgap.internal:5000/lmsysorg/sglang@{digest}" in p["ag-h200-01"]["files"]["unit"]["content"]
    assert p["ag-h200-01"]["env"] == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    assert p["ag-h200-01"]["warnings"] == []  # the digest's release is said, so nothing is guessed
    assert p["ag-router"]["install"]["method"] == "uv" and p["ag-router"]["workers"] == [
        "http://172.16.0.11:30000", "http://172.16.0.12:30000"]


def test_mixed(plans: dict[str, dict[str, Any]]) -> None:
    """Three models on their own racks, one router each; four TP2 Qwen3.8-27B replicas on every 8-GPU H200 node."""
    site = plans["mixed"]
    assert site["errors"] == {}
    p = site["plans"]
    models = {h: q["recipe"]["model"] for h, q in servers(site).items()}
    assert models == {"h200-g01": "glm-5.3", "h200-g02": "glm-5.3", "b200-d01": "deepseek-v4-pro",
                      "b200-d02": "deepseek-v4-pro", "h200-q01": "qwen3.8-27b", "h200-q02": "qwen3.8-27b"}
    # the Qwen nodes: four servers each, on GPUs 0-1, 2-3, 4-5, 6-7, --port 30000 + 10 i, NCCL port one above
    q2 = p["h200-q02"]["replicas"]
    assert [(r["unit"], r["gpus"], flag(r, "--port"), flag(r, "--nccl-port"), flag(r, "--tp-size")) for r in q2] == [
        ("sglang-qwen3.8-27b-r0.service", [0, 1], "30000", "30001", "2"),
        ("sglang-qwen3.8-27b-r1.service", [2, 3], "30010", "30011", "2"),
        ("sglang-qwen3.8-27b-r2.service", [4, 5], "30020", "30021", "2"),
        ("sglang-qwen3.8-27b-r3.service", [6, 7], "30030", "30031", "2")]
    unit = p["h200-q02"]["files"]["qwen3.8-27b-r3.unit"]["content"]
    assert '--gpus "\\"device=6,7\\""' in unit and "-p 30030:30030" in unit
    # one router per model: router-qwen takes every replica of both nodes, the others their rack's two servers
    assert p["router-qwen"]["workers"] == [f"http://10.30.3.1{n}:300{i}0" for n in (1, 2) for i in range(4)]
    assert p["router-glm"]["workers"] == ["http://10.30.1.11:30000", "http://10.30.1.12:30000"]
    assert p["router-dsv4"]["workers"] == ["http://10.30.2.11:30000", "http://10.30.2.12:30000"]
    assert {h: p[h]["served_model_name"] for h in ("router-glm", "router-dsv4", "router-qwen")} == {
        "router-glm": "zai-org/GLM-5.3", "router-dsv4": "deepseek-ai/DeepSeek-V4-Pro", "router-qwen": "Qwen/Qwen3.8-27B-FP8"}
    # each model with its own parsers, and verify.yml asks each the way its parser reads a request for reasoning
    parsers = (flag(p["b200-d01"], "--reasoning-parser"), flag(p["b200-d01"], "--tool-call-parser"))
    assert parsers == ("deepseek-v4", "deepseekv4")
    assert p["b200-d01"]["verify"]["requests"]["reasoning"] == {"chat_template_kwargs": {"thinking": True}}
    assert p["h200-q01"]["verify"]["requests"]["reasoning"] == p["h200-g01"]["verify"]["requests"]["reasoning"] == \
        {"chat_template_kwargs": {"enable_thinking": True}}
    # monitoring: a target per replica, labelled with its model and instance
    prometheus = site["monitoring"]["files"]["prometheus"]["content"]
    jobs = {j["job_name"]: j for j in yaml.safe_load(prometheus)["scrape_configs"]}
    labels = {c["targets"][0]: c["labels"] for c in jobs["metalserve-sglang"]["static_configs"]}
    assert len(labels) == 2 + 2 + 8
    replica = labels["10.30.3.12:30020"]
    assert (replica["model"], replica["sglang_instance"], replica["replica"]) == ("qwen3.8-27b", "qwen3.8-27b-r2", "2")
    assert labels["10.30.2.11:30000"]["model"] == "deepseek-v4-pro"
