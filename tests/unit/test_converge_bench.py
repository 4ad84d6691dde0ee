"""bench/bench.py's pure parts: the recap and profile_tasks parsers, the ratios and the same-run comparison."""
from __future__ import annotations

import sys

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench  # noqa: E402

OUTPUT = """\
PLAY RECAP *********************************************************************
metalserve-bench1-node1    : ok=35   changed=2    unreachable=0    failed=0    skipped=26   rescued=0    ignored=0
metalserve-bench1-router   : ok=19   changed=1    unreachable=0    failed=1    skipped=9    rescued=0    ignored=0

TASKS RECAP ********************************************************************
===============================================================================
metalserve.sglang.sglang_server : Write the unit ------------------------ 1.36s
metalserve.sglang.sglang_install : Read the uv version of the tools venv --- 1.14s
Group by sglang_role ---------------------------------------------------- 2.65s
"""


def runs(profile: str, walls: dict[int, tuple[float, float, float]]) -> list[dict]:
    return [{"profile": profile, "nodes": n, "run": kind, "wall_s": w, "changed": 0, "slowest": []}
            for n, triple in walls.items() for kind, w in zip(bench.RUNS, triple)]


def test_recap_counts_every_host() -> None:
    recap = bench.parse_recap(OUTPUT)
    assert recap["metalserve-bench1-node1"]["changed"] == 2 and recap["metalserve-bench1-router"]["failed"] == 1
    assert recap["metalserve-bench1-node1"]["skipped"] == 26


def test_profile_is_sorted_slowest_first_and_limited() -> None:
    rows = bench.parse_profile(OUTPUT, limit=2)
    assert [r["seconds"] for r in rows] == [2.65, 1.36]
    assert rows[1]["task"] == "metalserve.sglang.sglang_server : Write the unit"


def test_ratios_are_against_the_smallest_size_of_the_same_profile() -> None:
    results = {"sizes": [1, 8], "profiles": ["tuned"], "runs": runs("tuned", {1: (40.0, 10.0, 9.0), 8: (90.0, 15.0, 14.0)})}
    rat = bench.ratios(results)["tuned"]
    assert rat[1]["noop_vs_noop1"] == 1.0 and rat[8]["noop_vs_noop1"] == 1.5
    assert rat[1]["noop_vs_first"] == 0.25 and rat[8]["check_vs_first"] == round(14 / 90, 2)


def test_compare_divides_by_tuned_in_the_same_run() -> None:
    results = {"sizes": [1], "profiles": ["tuned", "ref:abc"],
               "runs": runs("tuned", {1: (40.0, 10.0, 8.0)}) + runs("ref:abc", {1: (50.0, 25.0, 20.0)})}
    table = bench.compare(results)
    assert "| ref:abc | 1 | 1.25 | 2.5 | 2.5 |" in table


def test_compare_needs_tuned_and_another_profile() -> None:
    assert bench.compare({"sizes": [1], "profiles": ["tuned"], "runs": runs("tuned", {1: (1.0, 1.0, 1.0)})}) == []


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(SystemExit, match="tuned, docker, nopipelining, defaults, mitogen or ref:<git revision>"):
        bench.profile_env("fast")


def test_a_profile_can_be_limited_to_some_sizes() -> None:
    assert bench.split_profile("defaults@1+8", [1, 4, 8]) == ("defaults", [1, 8])
    assert bench.split_profile("ref:9c4144d", [1, 4]) == ("ref:9c4144d", [1, 4])


def test_busy_cores_is_cpu_over_wall() -> None:
    assert bench.busy_cores({"busy_cpu_s": 30.0, "wall_s": 20.0}) == "1.50"
    assert bench.busy_cores({"wall_s": 20.0}) == ""


def test_machine_and_controller_cpu_counters_move_forward() -> None:
    busy, ctl = bench.machine_busy_s(), bench.controller_cpu_s()
    import subprocess
    from pathlib import Path
    subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    assert bench.machine_busy_s() > busy and bench.controller_cpu_s() > ctl


def test_transport_per_profile() -> None:
    """Real sites connect over SSH; earlier revisions (ref:) and the docker profile over docker exec."""
    transports = [bench.transport(p) for p in ("tuned", "mitogen", "docker", "ref:efa4936")]
    assert transports == ["ssh", "ssh", "docker", "docker"]


def test_module_count_callback_counts_node_modules_only(tmp_path) -> None:
    """The callback counts task results that ran on the host, a loop item each, not controller-only actions."""
    import json
    import os
    import subprocess
    from pathlib import Path
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.command: 'true'\n      changed_when: false\n"
        "    - ansible.builtin.stat: {path: /}\n      loop: [1, 2, 3]\n"
        "    - ansible.builtin.set_fact: {x: 1}\n"
        "    - ansible.builtin.debug: {msg: hi}\n"
        "    - ansible.builtin.command: 'false'\n      when: false\n")
    out = tmp_path / "counts.json"
    env = {**os.environ, "ANSIBLE_CALLBACK_PLUGINS": str(ROOT / "bench" / "callback_plugins"),
           "ANSIBLE_CALLBACKS_ENABLED": "module_count", "BENCH_MODULE_COUNT": str(out)}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "h1,h2,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(play)],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    counts = json.loads(out.read_text())
    assert counts["hosts"] == {"h1": 4, "h2": 4}
    assert counts["actions"] == {"command": 2, "stat": 6}


def test_fleet_scaling_divides_the_no_op_per_host_by_n8() -> None:
    results = {"sizes": [1, 8, 16, 32], "profiles": ["tuned"], "runs": runs("tuned", {
        1: (30.0, 3.0, 3.0), 8: (150.0, 10.0, 10.0), 16: (300.0, 19.0, 19.0), 32: (600.0, 40.0, 40.0)})}
    # controller, node, node less its idle background, hosts
    per_host = {8: (1.2, 0.6, 0.5, 9), 16: (1.1, 0.66, 0.55, 17), 32: (0.9, 0.72, 0.5, 33)}
    alone = {8: 0.4, 32: 0.42}  # the one-host-at-a-time no-op's node CPU per host, idle subtracted (none at N=16)
    for run in results["runs"]:
        if run["run"] == "noop" and run["nodes"] in per_host:
            ctl, node, net, hosts = per_host[run["nodes"]]
            run.update(controller_cpu_s_per_host=ctl, node_cpu_s_per_host=node, node_cpu_s_per_host_net=net,
                       hosts=hosts, modules_per_host=2.9, node_memory_mib_mean=60.0, node_memory_mib_max=75.5)
    results["runs"] += [{"profile": "tuned", "nodes": n, "run": "alone", "wall_s": 1.0, "changed": 0,
                         "node_cpu_s_per_host": v + 0.02, "node_cpu_s_per_host_net": v} for n, v in alone.items()]
    rat = bench.ratios(results)["tuned"]
    assert rat[32]["controller_cpu_s_per_host_vs_8"] == 0.75 and rat[32]["node_cpu_s_per_host_vs_8"] == 1.2
    assert rat[8]["controller_cpu_s_per_host_vs_8"] == 1.0 and rat[1]["node_cpu_s_per_host_vs_8"] is None
    table = bench.scaling(results)
    assert table[0] == "## Fleet scaling, tuned: the no-op per host past N=8"
    assert rat[16]["node_cpu_s_per_host_net_vs_8"] == 1.1 and rat[32]["node_cpu_s_per_host_net_vs_8"] == 1.0
    assert rat[32]["alone_node_cpu_s_per_host_net_vs_8"] == 1.05 and rat[16]["alone_node_cpu_s_per_host_net_vs_8"] is None
    # forks 1: raw 0.44 / 0.42 = 1.05 and less idle 0.42 / 0.4 = 1.05; not measured at N=16: blank, not "None"
    assert "| 32 | 33 | 40.0 | 0.9 | 0.72 | 0.75 | 1.2 | 0.5 | 1.0 | 0.44; 0.42 | 1.05; 1.05 | 2.9 | 60.0 / 75.5 |" in table
    assert "| 16 | 17 | 19.0 | 1.1 | 0.66 | 0.92 | 1.1 | 0.55 | 1.1 |  |  | 2.9 | 60.0 / 75.5 |" in table
    assert bench.scaling({**results, "sizes": [1, 8]}) == []  # nothing past N=8: no section


def test_idle_background_is_cpu_per_wall_second_of_each_node(monkeypatch) -> None:
    """A node that used 0.3 s of CPU over 1.5 s alone idles at 0.2 cores; one whose counter cannot be read is left out."""
    readings = iter([{"n1": 1_000_000_000, "n2": None}, {"n1": 1_300_000_000, "n2": 5}])
    clock = iter([100.0, 101.5])
    monkeypatch.setattr(bench, "nodes_cpu_ns", lambda name: next(readings))
    monkeypatch.setattr(bench.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(bench.time, "sleep", lambda s: None)
    assert bench.idle_rates("lab", 1.5) == {"n1": pytest.approx(0.2)}


def test_the_alone_run_is_the_no_op_one_host_at_a_time(monkeypatch, tmp_path) -> None:
    """The "alone" run asks Ansible for forks 1 over the profile's own setting, and is no --check run."""
    seen = []

    class Proc:
        stdout, returncode = "", 0

    monkeypatch.setattr(bench.lab, "lab_dir", lambda name: tmp_path)
    monkeypatch.setattr(bench.lab, "run_ansible", lambda args, **kw: seen.append((args, kw["extra_env"])) or Proc())
    monkeypatch.setattr(bench, "nodes_cpu_ns", lambda name: {})
    for kind in ("noop", "alone"):
        bench.one_run("lab", kind, {"ANSIBLE_FORKS": "5"})
    (noop_args, noop_env), (alone_args, alone_env) = seen
    assert noop_env["ANSIBLE_FORKS"] == "5" and alone_env["ANSIBLE_FORKS"] == "1"
    assert alone_args == noop_args and "--check" not in alone_args


def test_a_repeated_run_reports_the_median_and_any_change() -> None:
    figures = ((5.0, 0.7, 0.30, 0, []), (6.0, 0.9, 0.25, 1, ["x"]), (5.5, 0.6, 0.28, 0, []))
    runs = [{"wall_s": w, "controller_cpu_s_per_host": c, "node_cpu_s_per_host": n, "changed": ch, "failed": 0, "rc": 0,
             "changed_tasks": t} for w, c, n, ch, t in figures]
    merged = bench.median_run(runs)
    assert (merged["wall_s"], merged["controller_cpu_s_per_host"], merged["node_cpu_s_per_host"]) == (5.5, 0.7, 0.28)
    assert merged["changed"] == 1 and merged["changed_tasks"] == ["x"] and len(merged["repeats"]) == 3
    assert bench.median_run(runs[:2])["wall_s"] == 5.5 and bench.median_run(runs[:1]) is runs[0]
