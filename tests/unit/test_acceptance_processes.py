"""Node acceptance and the processes that hold GPU memory: only this host's serving unit may.

Real: tests/fixtures/acceptance/h200-x1-foreign (a lent H200 idle, with a foreign process holding 100 GiB, and with
that process inside the plan's unit cgroup; see its README). Expected pids, memory, bus ids and cgroups come from
the run's independent records (nvidia-smi --query-compute-apps CSV, the hog's own pid file, cat /proc/<pid>/cgroup),
not from the parser. Forms the lent machine cannot show (docker's cgroups, cgroup v1, AMD, several GPUs) are written
by hand in the documented formats named in each test.
"""
from __future__ import annotations

import copy
import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance as acc
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

try:  # main moved host_plan from site/placement.py to site/plan.py (53afd85); this branch predates that
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan
except ImportError:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.placement import host_plan

FIX = ROOT / "tests" / "fixtures" / "acceptance"
RUN = FIX / "h200-x1-foreign"
PROBES = ROOT / "roles" / "node_acceptance" / "files"
PLATFORMS = load_catalog().gpus
H200_MIB = 143771  # nvidia-smi's fb_memory_usage/total of an H200 (KINDS.md: "2 NVIDIA H200s of 143771 MiB each")
DOCKER_ID = "3f4e1c0a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
# the inventory the device run used (tools/device/accept_foreign_run.sh), planned by the real planner
TINY = {"sglang_instance": "acc", "sglang_model": "tiny", "sglang_quant": "bf16", "sglang_strategy": "balanced",
        "sglang_gpu": "h200", "sglang_install_method": "uv",
        "sglang_recipes": [{"id": "tiny", "checkpoints": {"bf16": {"id": "example-org/Tiny", "size_gb": 2}},
                            "cells": [{"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 1,
                                       "verified": True, "flags": {"--tp-size": 1}}]}]}


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def plan(**changes: Any) -> dict[str, Any]:
    if changes.get("sglang_install_method") == "docker":
        changes.setdefault("sglang_image", "registry.example/sglang:v0.5.23-cu130")
    return host_plan("h200-x1", {"h200-x1": {**TINY, **changes}}, {})


def judge(node: dict[str, Any], the_plan: dict[str, Any] | None, bench: dict[str, Any] | None = None,
          skipped: str | None = None) -> acc.HostReport:
    raw = {"node": node, "bench": bench, "bench_skipped": skipped}
    return acc.judge_host("h200-x1", raw, PLATFORMS, {"expected_gpus": 1}, "h200", plan=the_plan)


def apps(case: str) -> list[dict[str, str]]:
    """nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,used_memory --format=csv, as it printed it."""
    rows = list(csv.reader((RUN / f"apps-{case}.csv").read_text().splitlines(), skipinitialspace=True))
    return [dict(zip(rows[0], row)) for row in rows[1:]]


def hog_pid(case: str) -> int:
    return int((RUN / f"hog-{case}.pid").read_text().split()[0])


# ---------------------------------------------------------------------------------------------- the real H200 run


def test_the_plan_the_device_run_used_names_the_unit_the_own_case_sat_in() -> None:
    p = plan()
    assert (p["role"], p["unit"], p["install"]["method"]) == ("server", "sglang-acc.service", "uv")
    assert (RUN / "hog-own.cgroup").read_text().strip() == "0::/system.slice/sglang-acc.service"


def test_the_probe_read_the_process_nvidia_smi_lists() -> None:
    for case in ("foreign", "own"):
        node = load(RUN / f"node-{case}.json")
        (row,) = apps(case)
        assert int(row["pid"]) == hog_pid(case)
        assert list(node["processes"]) == [row["pid"]]
        seen = node["processes"][row["pid"]]
        assert seen["cgroup"] == (RUN / f"hog-{case}.cgroup").read_text().strip()
        assert seen["comm"] == "python3" and seen["user"] == "root"
        assert seen["cmdline"][1].endswith("tools/device/gpu_hog.py") and seen["cmdline"][2] == "100"
    assert load(RUN / "node-idle.json")["processes"] == {} and apps("idle") == []


def test_a_foreign_process_on_a_real_h200_refuses_the_node_and_names_it() -> None:
    (row,) = apps("foreign")
    pid, cgroup = hog_pid("foreign"), (RUN / "hog-foreign.cgroup").read_text().strip().split("::", 1)[1]
    bus = "0000:" + row["gpu_bus_id"].split(":", 1)[1].lower()
    report = judge(load(RUN / "node-foreign.json"), plan(), skipped="GPU memory held by ...")
    assert [p.check for p in report.problems] == ["processes"]
    text = report.problems[0].text()
    assert text.startswith(f"GPU memory held by something other than this host's serving unit: pid {pid} "
                           f"({row['process_name']}, user root, cgroup {cgroup}) holds {row['used_gpu_memory [MiB]']} "
                           f"of {H200_MIB} MiB on GPU 0 ({bus}), command: {row['process_name']} ")
    assert f"Check: kill {pid}, or move that work off this node" in text
    assert "only this host's serving unit, sglang-acc.service (cgroup /system.slice/sglang-acc.service)" in text
    assert text.endswith("Then run playbooks/accept.yml --limit h200-x1 again")


def test_the_same_process_inside_the_plans_unit_is_the_serving_unit() -> None:
    node = load(RUN / "node-own.json")
    report = judge(node, plan(), skipped="in use")
    assert report.ok, [p.text() for p in report.problems]
    seen = acc.node_summary(node, plan(), skip_busy=True)
    assert seen["foreign"] == [] and len(seen["own"]) == 1
    assert seen["skip"] == (f"GPUs in use by this host's serving unit sglang-acc.service (cgroup "
                            f"/system.slice/sglang-acc.service): pid(s) {hog_pid('own')} "
                            f"(/opt/torch/.venv/bin/python3) (node_acceptance_skip_busy)")
    assert acc.node_summary(node, plan(), skip_busy=False)["skip"] == ""  # measure anyway


@pytest.mark.parametrize("other, why", [
    ({"sglang_instance": "other"}, "only this host's serving unit, sglang-other.service (cgroup "
                                   "/system.slice/sglang-other.service), may hold its GPUs"),
    ({"sglang_install_method": "docker"}, "only this host's serving unit, sglang-acc.service's container "
                                          "sglang-acc, may hold its GPUs"),
    (None, "this host serves nothing in the site plan, so nothing may hold its GPUs")])
def test_the_unit_cgroup_counts_only_for_the_plan_that_owns_it(other: dict[str, Any] | None, why: str) -> None:
    the_plan = plan(**other) if other is not None else {"role": "none"}
    report = judge(load(RUN / "node-own.json"), the_plan, skipped="x")
    assert [p.check for p in report.problems] == ["processes"] and why in report.problems[0].fix
    assert "cgroup /system.slice/sglang-acc.service" in report.problems[0].what
    assert report.problems[0].fix.startswith("systemctl stop sglang-acc.service")


def test_an_idle_real_h200_is_accepted_and_measured() -> None:
    doc = load(RUN / "idle" / "h200-x1.json")
    node = load(RUN / "node-idle.json")
    assert acc.node_summary(node, plan())["skip"] == ""
    report = judge(node, plan(), bench=doc["raw"]["bench"])
    assert report.ok and report.row["memory_mismatches"] == 0


@pytest.mark.parametrize("run, verdict", [("idle", "accepted"), ("foreign", "refused"), ("own", "accepted"),
                                          ("own-again", "accepted")])
def test_the_reports_the_role_wrote_are_what_its_raw_results_judge_to(run: str, verdict: str) -> None:
    doc = load(RUN / run / "h200-x1.json")
    assert doc["verdict"] == verdict
    again = judge(doc["raw"]["node"], plan(), bench=doc["raw"].get("bench"), skipped=doc["raw"].get("bench_skipped"))
    assert [p.text() for p in again.problems] == doc["problems"] and again.warnings == doc["warnings"]


def test_the_role_refused_the_foreign_process_also_in_check_mode_and_changed_nothing() -> None:
    for run, rc in (("idle", 0), ("own", 0), ("own-again", 0), ("foreign", 2), ("foreign-check", 2)):
        log = (RUN / f"{run}.log").read_text()
        assert log.rstrip().endswith(f"rc={rc}"), run
        assert set(re.findall(r"changed=(\d+)", log)) == {"0"}, run
    assert f"pid {hog_pid('foreign')} " in (RUN / "foreign-check.log").read_text()
    assert not (RUN / "foreign-check").exists()  # check mode writes no report
    assert (RUN / "left-on-node.txt").read_text().strip() == "0"


# ---------------------------------------------------------------------------------------------- cgroup forms

V1_DOCKER = "\n".join([f"12:memory:/docker/{DOCKER_ID}", f"4:devices:/docker/{DOCKER_ID}",
                       f"1:name=systemd:/docker/{DOCKER_ID}"])
HYBRID = "\n".join(["11:memory:/system.slice/sglang-acc.service", "1:name=systemd:/system.slice/sglang-acc.service",
                    "0::/system.slice/sglang-acc.service"])
V1_LEGACY = "\n".join(["12:pids:/system.slice/sglang-acc.service", "1:name=systemd:/system.slice/sglang-acc.service"])
V1_HYBRID_ROOT = "\n".join(["1:name=systemd:/user.slice/user-1000.slice/session-4.scope", "0::/"])


@pytest.mark.parametrize("text, path, unit, cid", [
    ("0::/system.slice/sglang-acc.service\n", "/system.slice/sglang-acc.service", "sglang-acc.service", None),
    (f"0::/system.slice/docker-{DOCKER_ID}.scope\n", f"/system.slice/docker-{DOCKER_ID}.scope", None, DOCKER_ID),
    (V1_DOCKER, f"/docker/{DOCKER_ID}", None, DOCKER_ID),
    (HYBRID, "/system.slice/sglang-acc.service", "sglang-acc.service", None),
    (V1_LEGACY, "/system.slice/sglang-acc.service", "sglang-acc.service", None),
    (V1_HYBRID_ROOT, "/user.slice/user-1000.slice/session-4.scope", "session-4.scope", None),
    ("0::/user.slice/user-1000.slice/user@1000.service/app.slice/sglang-acc.service",
     "/user.slice/user-1000.slice/user@1000.service/app.slice/sglang-acc.service", "sglang-acc.service", None),
    ("", None, None, None)])
def test_cgroup_forms(text: str, path: str | None, unit: str | None, cid: str | None) -> None:
    assert acc.cgroup_path(text) == path
    owner = acc.cgroup_owner(path, {DOCKER_ID: "sglang-acc"})
    assert (owner["unit"], owner["container_id"]) == (unit, cid)
    assert owner["container"] == ("sglang-acc" if cid else None)


def with_process(cgroup: str | None, pid: str = "4242", docker_ps: str | None = None,
                 cmdline: list[str] | None = None) -> dict[str, Any]:
    """The real foreign capture with its process moved: another pid and cgroup, as the probe would report them."""
    node = copy.deepcopy(load(RUN / "node-foreign.json"))
    old = str(hog_pid("foreign"))
    xml = node["commands"]["nvidia_smi_xml"]
    xml["stdout"] = xml["stdout"].replace(f"<pid>{old}</pid>", f"<pid>{pid}</pid>")
    seen = node["processes"].pop(old)
    node["processes"] = {} if cgroup is None else {pid: dict(seen, cgroup=cgroup, cmdline=cmdline or seen["cmdline"])}
    if docker_ps is not None:
        node["commands"]["docker_ps"] = {"argv": ["docker", "ps"], "rc": 0, "stdout": docker_ps, "stderr": ""}
    return node


@pytest.mark.parametrize("cgroup", [f"0::/system.slice/docker-{DOCKER_ID}.scope", V1_DOCKER])
def test_a_docker_install_is_recognised_by_its_container_name(cgroup: str) -> None:
    docker = plan(sglang_install_method="docker")
    ours = with_process(cgroup, docker_ps=f"{DOCKER_ID} sglang-acc\n")
    assert judge(ours, docker, skipped="x").ok
    theirs = with_process(cgroup, docker_ps=f"{DOCKER_ID} jupyter-alice\n")
    (problem,) = judge(theirs, docker, skipped="x").problems
    assert "pid 4242 (/opt/torch/.venv/bin/python3, user root, container jupyter-alice, cgroup " in problem.what
    assert problem.fix.startswith("docker stop jupyter-alice, or move that work off this node")
    # the uv plan of the same instance does not own a container, even one named after it
    assert [p.check for p in judge(ours, plan(), skipped="x").problems] == ["processes"]


def test_a_container_docker_did_not_name_is_named_by_its_id() -> None:
    node = with_process(f"0::/system.slice/docker-{DOCKER_ID}.scope", docker_ps="")
    (problem,) = judge(node, plan(sglang_install_method="docker"), skipped="x").problems
    assert f"docker container {DOCKER_ID[:12]}" in problem.what and problem.fix.startswith(f"docker stop {DOCKER_ID[:12]}")


@pytest.mark.parametrize("cgroup", ["0::/system.slice/sglang-acc.service.d", "0::/system.slice/sglang-accx.service",
                                    "0::/user.slice/user-1000.slice/user@1000.service/app.slice/sglang-acc.service",
                                    "0::/sglang-acc.service"])
def test_a_lookalike_unit_is_not_the_serving_unit(cgroup: str) -> None:
    assert [p.check for p in judge(with_process(cgroup), plan(), skipped="x").problems] == ["processes"]


def test_a_child_cgroup_of_the_serving_unit_is_the_serving_unit() -> None:
    assert judge(with_process("0::/system.slice/sglang-acc.service/worker"), plan(), skipped="x").ok


def test_a_process_missing_from_proc_is_foreign_and_says_so() -> None:
    (problem,) = judge(with_process(None, pid="77"), plan(), skipped="x").problems
    assert problem.what.startswith("GPU memory held by something other than this host's serving unit: pid 77 "
                                   "(/opt/torch/.venv/bin/python3, not found in /proc (another PID namespace, or it "
                                   "exited)) holds 103010 MiB of 143771 MiB on GPU 0 (0000:00:06.0)")
    assert problem.fix.startswith("kill 77")


def test_a_foreign_systemd_service_is_stopped_through_systemd() -> None:
    (problem,) = judge(with_process("0::/system.slice/ollama.service"), plan(), skipped="x").problems
    assert "unit ollama.service, cgroup /system.slice/ollama.service" in problem.what
    assert problem.fix.startswith("systemctl stop ollama.service (and disable it if it must not come back)")


def test_one_process_on_two_gpus_is_one_problem_and_every_host_problem_is_listed() -> None:
    node = copy.deepcopy(load(FIX / "h200-x2" / "node.json"))
    entry = ("<process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A"
             "</compute_instance_id><pid>{pid}</pid><type>C</type><process_name>python</process_name>"
             "<used_memory>{mib} MiB</used_memory></process_info>")
    xml = node["commands"]["nvidia_smi_xml"]["stdout"]
    first, rest = xml.split("<processes>", 1)
    second, tail = rest.split("<processes>", 1)
    xml = (first + "<processes>" + entry.format(pid=10, mib=500) + second + "<processes>" + entry.format(pid=10, mib=700)
           + entry.format(pid=11, mib=90) + tail)
    node["commands"]["nvidia_smi_xml"]["stdout"] = xml
    node["processes"] = {"10": {"cgroup": "0::/user.slice/user-0.slice/session-1.scope", "comm": "python",
                                "user": "alice", "cmdline": ["python", "train.py"]}}
    report = acc.judge_host("n", {"node": node, "bench_skipped": "x"}, PLATFORMS, {})
    assert [p.what for p in report.problems if p.check == "processes"] == [
        "GPU memory held by something other than this host's serving unit: pid 10 (python, user alice, unit "
        "session-1.scope, cgroup /user.slice/user-0.slice/session-1.scope) holds 500 MiB of 143771 MiB on GPU 0 "
        "(0000:00:06.0); 700 MiB of 143771 MiB on GPU 1 (0000:00:07.0), command: python train.py",
        "GPU memory held by something other than this host's serving unit: pid 11 (python, not found in /proc "
        "(another PID namespace, or it exited)) holds 90 MiB of 143771 MiB on GPU 1 (0000:00:07.0)"]
    text = acc.report_text([report], {}, True)
    assert "pid 10 " in text and "pid 11 " in text


def test_amd_processes_in_amd_smi_json_are_judged_like_nvidia_ones() -> None:
    """amd-smi process --json as ROCm/amdsmi amdsmi_cli/amdsmi_commands.py (0ceca28) writes it: per GPU
    {gpu, process_list: [{process_info: {name, pid, mem_usage{value, unit: B}, usage{gfx, enc}, memory_usage{gtt_mem,
    cpu_mem, vram_mem}}}]}, and process_info "No running processes detected" on an idle GPU."""
    from ansible_collections.metalserve.sglang.tests.unit.test_acceptance import amd_node  # noqa: PLC0415
    node = amd_node(gpus=2)

    def size(n: int) -> dict[str, Any]:
        return {"value": n, "unit": "B"}
    busy = {"process_info": {"name": "python3", "pid": 5150, "mem_usage": size(70 * 2**30),
                             "usage": {"gfx": {"value": 0, "unit": "ns"}, "enc": {"value": 0, "unit": "ns"}},
                             "memory_usage": {"gtt_mem": size(2**20), "cpu_mem": size(2**20),
                                              "vram_mem": size(64 * 2**30)}}}
    node["commands"]["amd_process"]["stdout"] = json.dumps([
        {"gpu": 0, "process_list": [busy]},
        {"gpu": 1, "process_list": [{"process_info": "No running processes detected"}]}])
    node["processes"] = {"5150": {"cgroup": "0::/user.slice/user-0.slice/session-2.scope", "comm": "python3",
                                  "user": "root", "cmdline": ["python3", "x.py"]}}
    parsed = acc.health(node)
    assert parsed["gpus"][0]["processes"] == [{"pid": 5150, "name": "python3", "used_mib": 65536}]
    assert parsed["gpus"][1]["processes"] == []
    report = acc.judge_host("mi", {"node": node, "bench_skipped": "x"}, PLATFORMS, {})
    (problem,) = [p for p in report.problems if p.check == "processes"]
    assert "pid 5150 (python3, user root, unit session-2.scope" in problem.what
    assert "holds 65536 MiB on GPU 0 (0000:05:00.0)" in problem.what and problem.fix.startswith("kill 5150")


# ---------------------------------------------------------------------------------------------- the probe


def fake_tools(tmp_path: Path, xml: str, docker: str | None) -> Path:
    """Test doubles on PATH: nvidia-smi prints a real capture's XML, docker prints `docker ps` lines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "smi.xml").write_text(xml)
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n[ \"$1\" = -q ] && cat {tmp_path / 'smi.xml'}\nexit 0\n")
    if docker is not None:
        (bin_dir / "docker").write_text(f"#!/bin/sh\necho '{docker}'\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return bin_dir


def fake_proc(root: Path, pid: str, cgroup: str, argv: list[str]) -> None:
    proc = root / "proc" / pid
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text(cgroup + "\n")
    (proc / "comm").write_text("python3\n")
    (proc / "status").write_text("Name:\tpython3\nUid:\t0\t0\t0\t0\n")
    (proc / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")


def run_probe(root: Path, bin_dir: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(PROBES / "accept_node.py"), "--root", str(root)], capture_output=True,
                          text=True, check=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    return json.loads(done.stdout)


def test_the_probe_masks_secrets_before_they_leave_the_node(tmp_path: Path) -> None:
    xml = load(RUN / "node-foreign.json")["commands"]["nvidia_smi_xml"]["stdout"]
    pid = str(hog_pid("foreign"))
    argv = ["python3", "-m", "sglang.launch_server", "--api-key", "s3cr3t-value", "--hf-token=hf_abcdefghijkl",
            "--model-path", "/models/x", "--url", "https://bob:pa55w0rd@hub.example/x", "OPENAI_API_KEY=sk-abcdefgh",
            "--note", "ghp_abcdefghij0123456789"]
    fake_proc(tmp_path, pid, "0::/user.slice/user-0.slice/session-9.scope", argv)
    out = run_probe(tmp_path, fake_tools(tmp_path, xml, docker=None))
    assert out["processes"][pid] == {
        "cgroup": "0::/user.slice/user-0.slice/session-9.scope", "comm": "python3", "uid": "0", "user": "root",
        "cmdline": ["python3", "-m", "sglang.launch_server", "--api-key", "********", "--hf-token=********",
                    "--model-path", "/models/x", "--url", "https********hub.example/x", "OPENAI_API_KEY=********",
                    "--note", "********"]}
    assert "docker_ps" not in out["commands"]  # no process in a docker cgroup: docker is not asked
    assert "s3cr3t" not in json.dumps(out) and "pa55w0rd" not in json.dumps(out)


def test_the_probe_asks_docker_for_container_names_only_when_a_process_sits_in_docker(tmp_path: Path) -> None:
    xml = load(RUN / "node-foreign.json")["commands"]["nvidia_smi_xml"]["stdout"]
    pid = str(hog_pid("foreign"))
    fake_proc(tmp_path, pid, f"0::/system.slice/docker-{DOCKER_ID}.scope", ["python3", "-m", "sglang.launch_server"])
    out = run_probe(tmp_path, fake_tools(tmp_path, xml, docker=f"{DOCKER_ID} sglang-acc"))
    assert out["commands"]["docker_ps"]["argv"] == ["docker", "ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"]
    assert out["commands"]["docker_ps"]["stdout"].strip() == f"{DOCKER_ID} sglang-acc"
    assert judge(out, plan(sglang_install_method="docker"), skipped="x").ok


def test_a_long_command_line_is_cut(tmp_path: Path) -> None:
    xml = load(RUN / "node-foreign.json")["commands"]["nvidia_smi_xml"]["stdout"]
    pid = str(hog_pid("foreign"))
    fake_proc(tmp_path, pid, "0::/", ["python3"] + [f"--flag-{i}" for i in range(40)])
    cmdline = run_probe(tmp_path, fake_tools(tmp_path, xml, docker=None))["processes"][pid]["cmdline"]
    assert cmdline[:3] == ["python3", "--flag-0", "--flag-1"] and cmdline[-1] == "... (17 more)" and len(cmdline) == 25
