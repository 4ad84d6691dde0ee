"""playbooks/upgrade.yml on one lab (tests/lab/lab.py, plain shape: three servers behind the real sglang-router 0.3.2,
uv installs of the real SGLang 0.5.13.post1 and 0.5.23 venvs), reused by every scenario in order:

  0. site.yml converges the lab at SGLang 0.5.13.post1;
  1. a good release (0.5.23) is promoted through the canary and two waves, then the routers; a second run with the
     same target changes nothing;
  2. a release slower than the thresholds (0.5.13.post1 again, made slow) is rolled back after the canary, the rest of
     the fleet never changes, and the run fails naming the metric;
  3. a release whose server never answers /health (a knob, --max-running-requests 48) is rolled back;
  4. an upgrade killed in its first wave resumes where it stopped: the promoted canary is not moved again;
  5. a release slow on the last wave's node only is rolled back on that wave; the canary and the first wave keep it,
     the router is not moved, and the run fails naming the wave's unit.
After each: what runs on every node - the unit's ExecStart (venv and argv), the `current` symlink, the release the
running process serves, its PID (unchanged where nothing moved) - and the router's unit.

The servers are TEST DOUBLES: a systemd drop-in makes each server unit start tests/doubles/sglang_unit_double.py, which
reads the unit the collection wrote and runs tests/doubles/openai_double.py on its address, reporting the release of
the unit's venv; /etc/metalserve-test/double-rules.json says how a release behaves (slower, unhealthy). The measured
numbers are the doubles', not SGLang's. The unit files, venvs, parser checks, router and bench_serving are real.
Run under `flock /tmp/metalserve-docker.lock` (make integration does).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "lab"))
import lab  # noqa: E402

NAME = "upg"
OLD, NEW = "0.5.13.post1", "0.5.23"
UNIT = "/etc/systemd/system/sglang-glm-5.3.service"
TEST_DIR = "/usr/local/lib/metalserve-test"
DROP_IN = (f"# TEST DOUBLE (tests/doubles/sglang_unit_double.py): runs the OpenAI double where sglang serve would\n"
           f"[Service]\nExecStart=\nExecStart=/usr/bin/python3 {TEST_DIR}/sglang_unit_double.py %n\n")
# the workload, small: one concurrency, eight prompts per run; the doubles answer in 50 ms + 5 ms per token
WORKLOAD = {"benchmark_concurrencies": [4], "benchmark_isl": 128, "benchmark_osl": 32, "benchmark_warmup": 1,
            "benchmark_tokenizer": "/srv/bench", "benchmark_dataset_path": "/srv/bench/sharegpt.json",
            "upgrade_max_noise": 0.5, "upgrade_thresholds": {"ttft": 0.25, "itl": 0.25, "throughput": 0.15},
            "upgrade_note": "The servers were TEST DOUBLES (tests/doubles/): these numbers measure the doubles."}
RESULTS = ROOT / ".cache" / "upgrade-lab.json"


def docker(*args: str, check: bool = False) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check).stdout


def sh(host: str, script: str) -> str:
    return docker("exec", host, "sh", "-c", script)


class Lab:
    def __init__(self, inv: Path, workdir: Path) -> None:
        self.inv, self.workdir = inv, workdir
        self.hosts = lab.containers(NAME)
        self.servers = [h for h in self.hosts if "node" in h]
        self.router = next(h for h in self.hosts if h.endswith("router"))
        self.dir = workdir / "rendered" / "upgrade"
        self.timings: dict[str, float] = {}

    def set_vars(self, group: str, **values: Any) -> None:
        doc = yaml.safe_load(self.inv.read_text())
        target = doc["all"]["vars"] if group == "all" else doc["all"]["children"][group]["vars"]
        for k, v in values.items():
            if v is None:
                target.pop(k, None)
            else:
                target[k] = v
        self.inv.write_text(yaml.safe_dump(doc, sort_keys=False))

    def rules(self, rules: list[dict[str, Any]]) -> None:
        for host in self.servers:
            sh(host, f"mkdir -p /etc/metalserve-test && echo '{json.dumps(rules)}' > /etc/metalserve-test/double-rules.json")

    def upgrade(self, *extra: str, background: bool = False) -> Any:
        args = ["ansible-playbook", "-i", str(self.inv), str(ROOT / "playbooks" / "upgrade.yml"),
                "-e", json.dumps(WORKLOAD), *extra]
        # rendered/upgrade/ under the work folder (the playbook reads $PWD); the facts site.yml cached (ansible.cfg's
        # relative cache path, made absolute), so both plan the same files
        env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "PWD": str(self.workdir),
               "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(ROOT / ".cache" / "facts"),
               "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_NOCOLOR": "1"}
        binary = Path(sys.executable).parent / args[0]
        if background:
            return subprocess.Popen([str(binary)] + args[1:], cwd=self.workdir, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        return subprocess.run([str(binary)] + args[1:], cwd=self.workdir, env=env, text=True, capture_output=True,
                              check=False)

    def state(self) -> dict[str, Any]:
        path = self.dir / "state.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def node(self, host: str) -> dict[str, Any]:
        """What runs on a server: its unit's ExecStart, `current`, the release the process serves, its PID."""
        unit = sh(host, f"cat {UNIT}")
        exec_start = unit.replace("\\\n", " ").split("ExecStart=", 1)[1].splitlines()[0].split()
        info = sh(host, "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:30000/server_info', "
                        "timeout=5).read().decode())\"")
        return {"exec": exec_start, "current": sh(host, "readlink /opt/sglang/current").strip(),
                "serves": json.loads(info)["version"] if info.strip() else None,
                "pid": sh(host, "systemctl show -p MainPID --value sglang-glm-5.3.service").strip(),
                "active": sh(host, "systemctl is-active sglang-glm-5.3.service").strip()}

    def router_unit(self) -> str:
        return sh(self.router, "cat /etc/systemd/system/sglang-router.service")

    def pool(self) -> list[str]:
        out = sh(self.router, "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/workers', "
                              "timeout=5).read().decode())\"")
        return sorted(w["url"] for w in json.loads(out)["workers"] if w["is_healthy"])


def recap(out: str) -> dict[str, str]:
    return dict(re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M))


def expect_release(node: dict[str, Any], release: str) -> None:
    assert node["exec"][:2] == [f"/opt/sglang/venvs/{release}/bin/sglang", "serve"], node["exec"][:2]
    assert node["current"] == f"/opt/sglang/venvs/{release}", node
    assert node["serves"] == release and node["active"] == "active", node


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    lab.destroy(NAME)
    inv = lab.up(NAME, 3, "plain", {"sglang_version": OLD})
    try:
        the = Lab(inv, tmp_path_factory.mktemp("upgrade"))
        the.set_vars("servers", sglang_server_start=True, sglang_server_health_timeout=20,
                     sglang_server_timeout_start=60)
        for host in the.servers:  # the TEST DOUBLE in place of `sglang serve`, and a tokenizer for bench_serving
            sh(host, f"mkdir -p {TEST_DIR} /etc/systemd/system/sglang-glm-5.3.service.d")
            for name in ("openai_double.py", "sglang_unit_double.py"):
                docker("cp", str(ROOT / "tests" / "doubles" / name), f"{host}:{TEST_DIR}/{name}", check=True)
            docker("cp", str(ROOT / "tests" / "lab" / "make_tokenizer.py"), f"{host}:{TEST_DIR}/make_tokenizer.py",
                   check=True)
            sh(host, f"cat > /etc/systemd/system/sglang-glm-5.3.service.d/test-double.conf <<'EOF'\n{DROP_IN}EOF")
            sh(host, f"/opt/sglang/venvs/{NEW}/bin/python {TEST_DIR}/make_tokenizer.py /srv/bench")
        the.rules([])
        start = time.monotonic()
        first = lab.converge(NAME, False, [])
        the.timings["site.yml first converge (s)"] = round(time.monotonic() - start, 1)
        assert first.returncode == 0, first.stdout[-3000:]
        yield the
    finally:
        if "the" in locals():
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            kept = RESULTS.with_suffix("")  # the last run's rendered/upgrade/, for reading after the lab is gone
            subprocess.run(["rm", "-rf", str(kept)], check=False)
            if the.dir.exists():
                subprocess.run(["cp", "-r", str(the.dir), str(kept)], check=False)
            RESULTS.write_text(json.dumps(the.timings, indent=1) + "\n")
            print(f"\nupgrade lab timings: {json.dumps(the.timings)}")
        lab.destroy(NAME)


def test_1_good_release_promoted_through_canary_and_two_waves(site: Lab) -> None:
    for host in site.servers:
        expect_release(site.node(host), OLD)
    check = site.upgrade("--check", "-e", json.dumps({"upgrade_from": {"sglang_version": OLD}}))
    assert check.returncode == 0, check.stdout[-3000:]  # --check shows the change and stops
    site.set_vars("all", sglang_version=NEW)
    check = site.upgrade("--check", "-e", json.dumps({"upgrade_from": {"sglang_version": OLD}}))
    assert check.returncode == 0 and "start: 4 host(s) change; canary glm-5.3@" in check.stdout, check.stdout[-3000:]
    assert not (site.dir / "state.json").exists() and f"+ExecStart=/opt/sglang/venvs/{NEW}" in (
        site.dir / "CHANGE.md").read_text()
    for host in site.servers:
        expect_release(site.node(host), OLD)
    start = time.monotonic()
    run = site.upgrade("-e", json.dumps({"upgrade_from": {"sglang_version": OLD}}))
    site.timings["good upgrade, canary + 2 waves + router (s)"] = round(time.monotonic() - start, 1)
    assert run.returncode == 0, run.stdout[-5000:]
    state = site.state()
    assert state["status"] == "committed"
    assert [state["canary"]] + [w[0] for w in state["waves"]] == [f"glm-5.3@{h}" for h in site.servers]
    assert all(u["phase"] == "promoted" and u["verdict"]["ok"] for u in state["units"].values())
    for host in site.servers:
        expect_release(site.node(host), NEW)
    assert f"/opt/sglang/venvs/{NEW}/bin/python -m sglang_router.launch_router" in site.router_unit()
    assert len(site.pool()) == 3
    report = (site.dir / "REPORT.md").read_text()
    assert "**committed**" in report and "## Wave 2:" in report and (site.dir / "report.png").exists()
    assert re.search(r"\| 4 \| throughput \| [0-9.]+ \| [0-9.]+ \| [-+][0-9.]+% \| 15% \+ [0-9.]+% noise \| - \| pass \|",
                     report), report
    # the same target again: nothing to do, nothing changed
    pids = {h: site.node(h)["pid"] for h in site.servers}
    start = time.monotonic()
    again = site.upgrade()
    site.timings["no-change upgrade run, 3 servers + router (s)"] = round(time.monotonic() - start, 1)
    assert again.returncode == 0, again.stdout[-3000:]
    assert all("changed=0" in line and "failed=0" in line for line in recap(again.stdout).values()), again.stdout[-3000:]
    assert {h: site.node(h)["pid"] for h in site.servers} == pids


def test_2_slower_release_rolled_back_after_the_canary(site: Lab) -> None:
    site.rules([{"match": f"/venvs/{OLD}/", "args": ["--tpot-ms", "25", "--ttft-ms", "200"]}])
    before = {h: site.node(h) for h in site.servers}
    router_before = site.router_unit()
    site.set_vars("all", sglang_version=OLD)
    run = site.upgrade()
    assert run.returncode != 0
    state = site.state()
    canary = state["canary"]
    assert state["status"] == "rolled_back" and state["units"][canary]["phase"] == "rolled_back"
    verdict = state["units"][canary]["verdict"]
    assert not verdict["ok"] and {"itl", "ttft", "throughput"} <= {r["metric"] for r in verdict["failed"]}
    assert re.search(r"glm-5.3@\S+ was rolled back to the previous plan and serves again \(.*itl at concurrency 4: "
                     r"regressed", run.stdout), run.stdout[-3000:]
    site.timings["canary rollback (s)"] = state["units"][canary]["rollback_seconds"]
    for host in site.servers:
        now = site.node(host)
        expect_release(now, NEW)
        if canary.endswith(host):
            assert now["pid"] != before[host]["pid"]     # it moved, and came back
        else:
            assert now == before[host]                   # never touched: same unit, venv, process
    assert site.router_unit() == router_before and len(site.pool()) == 3
    assert "Rolled back glm-5.3@" in (site.dir / "REPORT.md").read_text()
    # the same target again is refused until it changes (or upgrade_retry)
    again = site.upgrade()
    assert again.returncode != 0 and "this target was rolled back" in again.stdout


def test_3_release_failing_health_rolled_back(site: Lab) -> None:
    site.rules([{"match": "--max-running-requests 48", "args": ["--mode", "unhealthy"]}])
    site.set_vars("all", sglang_version=NEW)
    site.set_vars("servers", sglang_extra_args={"--max-running-requests": 48})
    before = {h: site.node(h) for h in site.servers}
    run = site.upgrade()
    assert run.returncode != 0
    state = site.state()
    canary = state["canary"]
    assert state["units"][canary]["phase"] == "rolled_back"
    assert "did not answer /health" in state["units"][canary]["reason"], state["units"][canary]
    site.timings["canary rollback after a failed health check (s)"] = state["units"][canary]["rollback_seconds"]
    for host in site.servers:
        now = site.node(host)
        expect_release(now, NEW)
        assert "--max-running-requests" not in now["exec"]
        if not canary.endswith(host):
            assert now == before[host]


def test_4_interrupted_upgrade_resumes(site: Lab) -> None:
    site.rules([])
    site.set_vars("servers", sglang_extra_args={"--max-running-requests": 32})
    proc = site.upgrade(background=True)
    deadline, killed = time.monotonic() + 900, False
    while time.monotonic() < deadline and proc.poll() is None:
        units = site.state().get("units") or {}
        canary = site.state().get("canary")
        if canary and units.get(canary, {}).get("phase") == "promoted" and any(
                u["wave"] == 1 and u["phase"] in ("out", "measured", "upgrading") for u in units.values()):
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.5)
    proc.wait()
    assert killed, (proc.stdout.read() if proc.stdout else "")[-3000:]
    state = site.state()
    assert state["status"] == "in_progress"
    canary_host = state["canary"].split("@")[1]
    canary_pid = site.node(canary_host)["pid"]
    run = site.upgrade()
    assert run.returncode == 0, run.stdout[-5000:]
    assert "resume:" in run.stdout
    state = site.state()
    assert state["status"] == "committed"
    for host in site.servers:
        now = site.node(host)
        expect_release(now, NEW)
        assert now["exec"][now["exec"].index("--max-running-requests") + 1] == "32"
    assert site.node(canary_host)["pid"] == canary_pid     # the promoted canary was not moved again
    assert len(site.pool()) == 3


def test_5_a_failing_later_wave_is_rolled_back_and_stops(site: Lab) -> None:
    last = site.servers[-1]
    site.rules([{"match": "--max-running-requests 64", "host": last, "args": ["--tpot-ms", "25", "--ttft-ms", "200"]}])
    site.set_vars("servers", sglang_extra_args={"--max-running-requests": 64})
    router_before = site.router_unit()
    before_last = site.node(last)
    run = site.upgrade()
    assert run.returncode != 0
    assert re.search(rf"glm-5.3@{last} was rolled back to the previous plan and serves again", run.stdout), \
        run.stdout[-3000:]
    state = site.state()
    phases = {uid: u["phase"] for uid, u in state["units"].items()}
    assert phases == {f"glm-5.3@{h}": ("rolled_back" if h == last else "promoted") for h in site.servers}
    assert state["status"] == "rolled_back" and state["routers"] == {}
    for host in site.servers:
        now = site.node(host)
        expect_release(now, NEW)
        assert now["exec"][now["exec"].index("--max-running-requests") + 1] == ("32" if host == last else "64")
    assert site.node(last)["exec"] == before_last["exec"] and site.router_unit() == router_before
    assert len(site.pool()) == 3
