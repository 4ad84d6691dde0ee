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
Then labs of their own: 6. hosts of two replicas; 7. a PD pair; and docker installs (the docker shape: two docker
servers, each with a Docker daemon of its own, and a uv server): d1. a new image and a new release promoted through the
canary and two waves on that mixed site; d2. a slower image rolled back after the canary to exactly the image ID the
container ran before; d3. an image whose server never answers /health rolled back.

The servers are TEST DOUBLES: a systemd drop-in makes each server unit start tests/doubles/sglang_unit_double.py, which
reads the unit the collection wrote and runs tests/doubles/openai_double.py on its address, reporting the release of
the unit's venv; /etc/metalserve-test/double-rules.json says how a release behaves (slower, unhealthy). The measured
numbers are the doubles', not SGLang's. The unit files, venvs, parser checks, router and bench_serving are real.
`make upgrade-lab` runs it under the lab's lock (tests/lab/docker-lock.sh), as every target that starts lab
containers.
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
from typing import Any, Iterator

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
    def __init__(self, inv: Path, workdir: Path, name: str = NAME) -> None:
        self.inv, self.workdir = inv, workdir
        self.hosts = lab.containers(name)
        self.servers = [h for h in self.hosts if "node" in h]
        self.router = next(h for h in self.hosts if h.endswith("router"))
        groups = yaml.safe_load(inv.read_text())["all"]["children"]
        self.docker_servers = sorted((groups.get("docker_servers") or {}).get("hosts") or {})
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

    def node(self, host: str, unit: str = UNIT, port: int = 30000) -> dict[str, Any]:
        """What runs on a server: its unit's ExecStart, `current`, the release the process serves, its PID."""
        text = sh(host, f"cat {unit}")
        exec_start = text.replace("\\\n", " ").split("ExecStart=", 1)[1].splitlines()[0].split()
        info = sh(host, f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/server_info', "
                        "timeout=5).read().decode())\"")
        name = unit.rsplit("/", 1)[1]
        return {"exec": exec_start, "current": sh(host, "readlink /opt/sglang/current").strip(),
                "serves": json.loads(info)["version"] if info.strip() else None,
                "pid": sh(host, f"systemctl show -p MainPID --value {name}").strip(),
                "active": sh(host, f"systemctl is-active {name}").strip()}

    def router_unit(self) -> str:
        return sh(self.router, "cat /etc/systemd/system/sglang-router.service")

    def pool(self) -> list[str]:
        return sorted(w["url"] for w in self.workers() if w["is_healthy"])

    def workers(self) -> list[dict[str, Any]]:
        out = sh(self.router, "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/workers', "
                              "timeout=5).read().decode())\"")
        return list(json.loads(out)["workers"])


def recap(out: str) -> dict[str, str]:
    return dict(re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M))


def committed_in_order(site: Lab, run: Any, instance: str = "glm-5.3") -> dict[str, Any]:
    """The run succeeded, committed, moved the servers' units in inventory order (the canary, then one wave each) and
    promoted every one on a passing verdict; the state, for the caller's own checks."""
    assert run.returncode == 0, run.stdout[-5000:]
    state = site.state()
    assert state["status"] == "committed"
    assert [state["canary"]] + [w[0] for w in state["waves"]] == [f"{instance}@{h}" for h in site.servers]
    assert all(u["phase"] == "promoted" and u["verdict"]["ok"] for u in state["units"].values())
    return state


def expect_release(node: dict[str, Any], release: str) -> None:
    assert node["exec"][:2] == [f"/opt/sglang/venvs/{release}/bin/sglang", "serve"], node["exec"][:2]
    assert node["current"] == f"/opt/sglang/venvs/{release}", node
    assert node["serves"] == release and node["active"] == "active", node


def build(name: str, servers: int, shape: str, units: list[str], tmp: Path, docker_image: str = "",
          **group_vars: Any) -> Lab:
    """A lab of `servers` nodes and a router at OLD, each server unit in `units` of a uv server run by the TEST DOUBLE
    (a drop-in; the docker shape's docker servers run `docker_image`, a stand-in image, as their units say), converged
    by site.yml; the first converge's time lands in timings."""
    lab.destroy(name)
    inv = lab.up(name, servers, shape, {"sglang_version": OLD})
    the = Lab(inv, tmp, name)
    the.set_vars("servers", sglang_server_start=True, sglang_server_health_timeout=20, sglang_server_timeout_start=60,
                 **group_vars)
    if docker_image:
        the.set_vars("docker_servers", sglang_image=docker_image)
    uv_servers = [h for h in the.servers if h not in the.docker_servers]
    for host in uv_servers:  # the TEST DOUBLE in place of `sglang serve`, and a tokenizer for bench_serving
        sh(host, f"mkdir -p {TEST_DIR}")
        for unit in units:
            sh(host, f"mkdir -p /etc/systemd/system/{unit}.d && cat > /etc/systemd/system/{unit}.d/test-double.conf "
                     f"<<'EOF'\n{DROP_IN}EOF")
        for script in ("openai_double.py", "sglang_unit_double.py"):
            docker("cp", str(ROOT / "tests" / "doubles" / script), f"{host}:{TEST_DIR}/{script}", check=True)
        docker("cp", str(ROOT / "tests" / "lab" / "make_tokenizer.py"), f"{host}:{TEST_DIR}/make_tokenizer.py",
               check=True)
        # the python of a release the volume has (lab.ensure_venv fills it with the inventory's, OLD, when empty)
        sh(host, f"py=$(ls -d /opt/sglang/venvs/{NEW}/bin/python /opt/sglang/venvs/{OLD}/bin/python 2>/dev/null "
                 f"| head -1); $py {TEST_DIR}/make_tokenizer.py /srv/bench")
    for host in the.docker_servers:  # no venv there: the uv server's tokenizer folder, copied as it is
        tar = subprocess.run(["docker", "cp", f"{uv_servers[0]}:/srv/bench", "-"], capture_output=True, check=True).stdout
        subprocess.run(["docker", "cp", "-", f"{host}:/srv"], input=tar, capture_output=True, check=True)
    the.rules([])
    start = time.monotonic()
    first = lab.converge(name, False, [])
    the.timings[f"site.yml first converge, {servers} servers + router (s)"] = round(time.monotonic() - start, 1)
    assert first.returncode == 0, first.stdout[-3000:]
    return the


def keep(the: Lab, label: str = "") -> None:
    """The run's timings (merged into RESULTS, each key with the lab's label) and its rendered/upgrade/ (beside
    RESULTS), for reading after the lab is gone."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    kept = RESULTS.with_name(RESULTS.stem + (f"-{label}" if label else ""))
    subprocess.run(["rm", "-rf", str(kept)], check=False)
    if the.dir.exists():
        subprocess.run(["cp", "-r", str(the.dir), str(kept)], check=False)
    timings = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    tag = f" [{label}]" if label else ""
    RESULTS.write_text(json.dumps({**timings, **{k + tag: v for k, v in the.timings.items()}}, indent=1) + "\n")
    print(f"\nupgrade lab timings{tag}: {json.dumps(the.timings)}")


def lab_of(name: str, label: str, servers: int, shape: str, units: list[str], tmp: Path,
           **group_vars: Any) -> Iterator[Lab]:
    """A module fixture's lab (build), kept (keep) and destroyed when the module is done, whatever happened."""
    the = None
    try:
        the = build(name, servers, shape, units, tmp, **group_vars)
        yield the
    finally:
        if the is not None:
            keep(the, label)
        lab.destroy(name)


@pytest.fixture(scope="module", autouse=True)
def fresh_results() -> Any:
    """RESULTS holds this run's timings only (each lab adds its own when it is torn down)."""
    RESULTS.unlink(missing_ok=True)
    yield


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from lab_of(NAME, "", 3, "plain", ["sglang-glm-5.3.service"], tmp_path_factory.mktemp("upgrade"))


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
    committed_in_order(site, run)
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


# --- a host of several servers (sglang_replicas) and a PD pair: each a lab of its own, after the five above ---------
QWEN = "qwen3.8-27b"
REPLICA_UNITS = [f"sglang-{QWEN}-r{i}.service" for i in (0, 1)]


@pytest.fixture(scope="module")
def replica_site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two nodes, each running two Qwen3.8-27B TP2 servers (sglang_replicas: 2, ports 30000 and 30010), behind the
    router (four workers)."""
    yield from lab_of("upgr", "replicas", 2, "plain", REPLICA_UNITS, tmp_path_factory.mktemp("upgrade-replicas"),
                      sglang_model=QWEN, sglang_strategy="balanced", sglang_extra_args=["--tp-size", "2"],
                      sglang_replicas=2)


def test_6_hosts_of_several_servers_move_whole(replica_site: Lab) -> None:
    """Every replica of a host leaves the router's pool, moves and comes back with its host (one unit per host); the
    other host serves meanwhile. Then the second host, as the wave."""
    site = replica_site
    replicas = [(f"/etc/systemd/system/{u}", 30000 + 10 * i) for i, u in enumerate(REPLICA_UNITS)]
    for host in site.servers:
        for unit, port in replicas:
            expect_release(site.node(host, unit, port), OLD)
    assert len(site.pool()) == 4
    site.set_vars("all", sglang_version=NEW)
    start = time.monotonic()
    run = site.upgrade("-e", json.dumps({"upgrade_from": {"sglang_version": OLD}}))
    site.timings["good upgrade, 2 hosts of 2 replicas + router (s)"] = round(time.monotonic() - start, 1)
    committed_in_order(site, run, QWEN)
    # both replicas of the canary were taken out (DELETE /workers/{id}) and put back (POST /workers)
    removed = run.stdout.split("TASK [Remove it from each (DELETE /workers/{id})]")[1].split("TASK [")[0]
    deleted = [line for line in removed.splitlines() if line.startswith("changed: [")]  # not a skipped item
    assert all(any(line.endswith(f":{port})") for line in deleted) for _unit, port in replicas), removed
    for host in site.servers:
        for unit, port in replicas:
            expect_release(site.node(host, unit, port), NEW)
    assert len(site.pool()) == 4


@pytest.fixture(scope="module")
def pd_site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A PD pair (prefill node1, decode node2, mooncake) behind a PD router."""
    yield from lab_of("upgpd", "pd", 2, "pd", [f"sglang-glm-5.3-{role}.service" for role in ("prefill", "decode")],
                      tmp_path_factory.mktemp("upgrade-pd"))


def test_7_a_pd_pair_moves_together_measured_through_a_router_of_its_own(pd_site: Lab) -> None:
    """Prefill and decode move as one unit: out of the PD router's pool together, measured before and after through
    a router started for the measurement on the decode head, moved, put back with their worker types. The pair is the
    router's only unit, so the outage must be allowed; without it the run is refused before any change."""
    site = pd_site
    # the prefill on node1 (--port 30000), the decode on node2 (--port 30100: data/sglang/ports.yml, pd_decode_serve)
    ports = {site.servers[0]: ("/etc/systemd/system/sglang-glm-5.3-prefill.service", 30000),
             site.servers[1]: ("/etc/systemd/system/sglang-glm-5.3-decode.service", 30100)}
    before = {h: site.node(h, *where) for h, where in ports.items()}
    for node in before.values():
        expect_release(node, OLD)
    site.set_vars("all", sglang_version=NEW)
    refused = site.upgrade("-e", json.dumps({"upgrade_from": {"sglang_version": OLD}}))
    assert refused.returncode != 0 and "upgrade_allow_outage" in refused.stdout, refused.stdout[-3000:]
    assert {h: site.node(h, *where) for h, where in ports.items()} == before
    start = time.monotonic()
    run = site.upgrade("-e", json.dumps({"upgrade_from": {"sglang_version": OLD}, "upgrade_allow_outage": True}))
    site.timings["good upgrade, one PD pair + router (s)"] = round(time.monotonic() - start, 1)
    assert run.returncode == 0, run.stdout[-5000:]
    state = site.state()
    pair = f"glm-5.3-prefill@{site.servers[0]}+glm-5.3-decode@{site.servers[1]}"
    assert state["status"] == "committed" and state["canary"] == pair, state
    unit = state["units"][pair]
    assert unit["phase"] == "promoted" and unit["verdict"]["ok"], unit
    assert "Start it (systemd-run; the client release's sglang-router)" in run.stdout
    for host, where in ports.items():
        expect_release(site.node(host, *where), NEW)
    types = sorted((w["url"].rsplit(":", 1)[1], w.get("worker_type")) for w in site.workers())
    assert types == [("30000", "prefill"), ("30100", "decode")], site.workers()


# --- docker installs: servers in containers of their nodes' own Docker daemons (tests/lab/lab.py, docker shape) -------
# Real: each docker node's dockerd (Debian's docker.io, standing in for Docker's docker-ce), the pull through the lab
# registry, the unit's `docker run` and `docker stop`, the image IDs, the rollback's `docker inspect` / `docker tag`, the
# measuring client's `docker run --network host` on the node's own network, sglang-router, the uv node's venvs.
# Stand-ins: the images (tests/lab/registry.sh server: TEST DOUBLES of `sglang serve` and of bench_serving inside, each
# built for a release and a behaviour) and the NVIDIA Container Toolkit's hook (the nodes have no GPU).
OLD_IMAGE = "lmsysorg/sglang:v0.5.13.post1-cu126"
GOOD_IMAGE = "lmsysorg/sglang:v0.5.23-cu129"
SLOW_IMAGE = "lmsysorg/sglang:v0.5.23-cu130"        # the same release, a build slower than the thresholds
BROKEN_IMAGE = "lmsysorg/sglang:v0.5.23-cu129-b2"   # a build whose server never answers /health
IMAGES = {OLD_IMAGE: (OLD, []), GOOD_IMAGE: (NEW, []), SLOW_IMAGE: (NEW, ["--tpot-ms", "25", "--ttft-ms", "200"]),
          BROKEN_IMAGE: (NEW, ["--mode", "unhealthy"])}
CONTAINER = "sglang-glm-5.3"


@pytest.fixture(scope="module")
def docker_site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """node1 and node2 docker installs (each its own daemon), node3 a uv install, behind the router."""
    script = str(ROOT / "tests" / "lab" / "registry.sh")
    subprocess.run(["bash", script, "start"], check=True)
    for ref, (release, behaviour) in IMAGES.items():
        subprocess.run(["bash", script, "server", ref, release, *behaviour], check=True)
    yield from lab_of("upgdk", "docker", 3, "docker", ["sglang-glm-5.3.service"], tmp_path_factory.mktemp("upgrade-dk"),
                      docker_image=OLD_IMAGE)


def dnode(host: str) -> dict[str, Any]:
    """What a docker server runs: the image its unit names, the ID of the image its container runs and the ID that
    name has in the node's daemon, the container, the release its process serves."""
    argv = sh(host, f"cat {UNIT}").replace("\\\n", " ").split("ExecStart=", 1)[1].splitlines()[0].split()
    image = argv[argv.index("serve") - 2]
    container = sh(host, f"docker inspect -f '{{{{.Id}}}} {{{{.Image}}}}' {CONTAINER}").split()
    info = sh(host, "python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:30000/server_info', "
                    "timeout=5).read().decode())\"")
    return {"image": image, "container": container[0] if container else None,
            "runs": container[1] if len(container) > 1 else None,
            "named": sh(host, f"docker image inspect -f '{{{{.Id}}}}' {image}").strip(),
            "serves": json.loads(info)["version"] if info.strip() else None,
            "active": sh(host, "systemctl is-active sglang-glm-5.3.service").strip()}


def image_id(host: str, ref: str) -> str:
    return sh(host, f"docker image inspect -f '{{{{.Id}}}}' {ref}").strip()


def mirror(site: Lab) -> str:
    """The registry mirror the docker servers pull through (lab.py's docker shape: the lab network's gateway)."""
    return str(yaml.safe_load(site.inv.read_text())["all"]["children"]["docker_servers"]["vars"][
        "sglang_install_registry_mirror"])


def expect_image(site: Lab, now: dict[str, Any], ref: str, release: str) -> None:
    assert now["image"] == mirror(site) + ref, now
    assert now["runs"] == now["named"] and now["serves"] == release and now["active"] == "active", now


def test_d1_mixed_site_good_image_and_release_through_canary_and_waves(docker_site: Lab) -> None:
    """A new image on the docker nodes and a new release on the uv node, in one run: the canary (a docker node), then
    the waves; the pull, the container replaced, the measuring client in the image on the node's network."""
    site = docker_site
    assert site.docker_servers == site.servers[:2]
    uv = site.servers[2]
    before = {h: dnode(h) for h in site.docker_servers}
    for now in before.values():
        expect_image(site, now, OLD_IMAGE, OLD)
    expect_release(site.node(uv), OLD)
    site.set_vars("all", sglang_version=NEW)
    site.set_vars("docker_servers", sglang_image=GOOD_IMAGE)
    start = time.monotonic()
    run = site.upgrade("-e", json.dumps({"upgrade_from": {"sglang_version": OLD},
                                         "upgrade_from_groups": {"docker_servers": {"sglang_image": OLD_IMAGE}}}))
    site.timings["good upgrade, 2 docker + 1 uv servers (canary + 2 waves) + router (s)"] = round(
        time.monotonic() - start, 1)
    state = committed_in_order(site, run)
    for host in site.docker_servers:
        now = dnode(host)
        expect_image(site, now, GOOD_IMAGE, NEW)
        assert now["container"] != before[host]["container"]                        # replaced
        assert state["units"][f"glm-5.3@{host}"]["image_ids"][host] == before[host]["runs"]  # what a rollback returns to
    expect_release(site.node(uv), NEW)
    # the canary was measured on both sides by the client in the image it ran before (the client double's rows name
    # that image's release), at the loopback address of the node, which a container reaches only with the node's
    # network (--network host): the old server before the move, the new one after
    for side, serves in (("before", OLD), ("after", NEW)):
        rows = [json.loads(line) for line in
                (site.dir / f"glm-5.3@{site.docker_servers[0]}" / f"{side}.jsonl").read_text().splitlines()]
        assert rows and all(r["completed"] > 0 and r["server_info"]["version"] == serves for r in rows), rows
        assert all(r["tag"].startswith(f"TEST DOUBLE client in the {OLD} image, measuring http://127.0.0.1:")
                   for r in rows), rows
    assert len(site.pool()) == 3
    # the same target again: nothing to do, nothing changed, the same containers
    containers = {h: dnode(h)["container"] for h in site.docker_servers}
    again = site.upgrade()
    assert again.returncode == 0, again.stdout[-3000:]
    assert all("changed=0" in line and "failed=0" in line for line in recap(again.stdout).values()), again.stdout[-3000:]
    assert {h: dnode(h)["container"] for h in site.docker_servers} == containers


def _rolled_back_to_the_image_before(site: Lab, run: Any) -> dict[str, Any]:
    """The run failed and its state says the canary (the first docker node) was rolled back; the callers compare what
    the nodes run."""
    assert run.returncode != 0
    state = site.state()
    canary = state["canary"]
    assert canary == f"glm-5.3@{site.docker_servers[0]}" and state["status"] == "rolled_back", state
    assert state["units"][canary]["phase"] == "rolled_back"
    return state


def test_d2_slower_image_rolled_back_to_the_previous_image_id(docker_site: Lab) -> None:
    site = docker_site
    canary, wave = site.docker_servers
    before = {h: dnode(h) for h in site.docker_servers}
    uv_before = site.node(site.servers[2])
    # the canary's tag of the image it runs has moved since it started (as a later pull of a re-pushed tag moves it):
    # the rollback must tag the image ID it ran before, not start whatever the reference names now
    moved = mirror(site) + BROKEN_IMAGE
    sh(canary, f"docker pull -q {moved} && docker tag {moved} {before[canary]['image']}")
    assert image_id(canary, before[canary]["image"]) not in ("", before[canary]["runs"])
    site.set_vars("docker_servers", sglang_image=SLOW_IMAGE)
    run = site.upgrade()
    state = _rolled_back_to_the_image_before(site, run)
    verdict = state["units"][f"glm-5.3@{canary}"]["verdict"]
    assert not verdict["ok"] and {"itl", "ttft"} <= {r["metric"] for r in verdict["failed"]}, verdict
    site.timings["canary rollback, docker (slower image) (s)"] = state["units"][f"glm-5.3@{canary}"]["rollback_seconds"]
    now = dnode(canary)
    expect_image(site, now, GOOD_IMAGE, NEW)   # the previous reference, naming the image ID it ran before again
    assert now["runs"] == before[canary]["runs"] and now["container"] != before[canary]["container"]
    assert image_id(canary, mirror(site) + SLOW_IMAGE) not in ("", now["runs"])    # the slow image was pulled, and left
    assert dnode(wave) == before[wave] and site.node(site.servers[2]) == uv_before
    assert len(site.pool()) == 3


def test_d3_image_failing_health_rolled_back(docker_site: Lab) -> None:
    site = docker_site
    canary, wave = site.docker_servers
    before = {h: dnode(h) for h in site.docker_servers}
    uv_before = site.node(site.servers[2])
    site.set_vars("docker_servers", sglang_image=BROKEN_IMAGE)
    run = site.upgrade()
    state = _rolled_back_to_the_image_before(site, run)
    unit = state["units"][f"glm-5.3@{canary}"]
    assert "/health did not answer" in unit["reason"], unit["reason"]
    site.timings["canary rollback, docker (image failing /health) (s)"] = unit["rollback_seconds"]
    now = dnode(canary)
    expect_image(site, now, GOOD_IMAGE, NEW)
    assert now["runs"] == before[canary]["runs"]
    assert dnode(wave) == before[wave] and site.node(site.servers[2]) == uv_before and len(site.pool()) == 3
