"""The lab's lock (tests/lab/docker-lock.sh) and its daemon launcher (tests/lab/detach.sh), judged by flock(1) itself:
a daemon started under the lock must not keep it (a locked descriptor is inherited by every child, and a child holds
the lock for as long as it lives), a nested caller must not wait for itself, and a second caller must wait for the
first."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

LAB = ROOT / "tests" / "lab"
LOCK = ["bash", str(LAB / "docker-lock.sh")]
pytestmark = pytest.mark.skipif(shutil.which("flock") is None, reason="flock(1) (util-linux) is the oracle")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a caller holding no lock, with a lock file of its own."""
    out = {k: v for k, v in os.environ.items() if k != "METALSERVE_DOCKER_LOCK_HELD"}
    out["METALSERVE_DOCKER_LOCK"] = str(tmp_path / "docker.lock")
    return out


@pytest.fixture()
def daemons() -> Iterator[list[int]]:
    """PIDs of daemons a test started, killed after it."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def free(env: dict[str, str]) -> bool:
    """Whether flock(1) can take the lock right now."""
    return subprocess.run(["flock", "-n", env["METALSERVE_DOCKER_LOCK"], "true"], check=False).returncode == 0


def running(pid: int, argv0: str) -> bool:
    """Whether `pid` has become `argv0` (a daemon that exec'd), waiting up to 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == argv0.encode():
                return True
        except FileNotFoundError:
            return False
        time.sleep(0.02)
    return False


def test_a_daemon_started_through_detach_leaves_the_lock_free(
        env: dict[str, str], daemons: list[int], tmp_path: Path) -> None:
    done = subprocess.run([*LOCK, "bash", str(LAB / "detach.sh"), str(tmp_path / "d.log"), "sleep", "60"], env=env,
                          capture_output=True, text=True, check=True, timeout=30)
    pid = int(done.stdout)
    daemons.append(pid)
    assert running(pid, "sleep")
    assert free(env)


def test_a_daemon_started_without_detach_keeps_the_lock(env: dict[str, str], daemons: list[int]) -> None:
    """The failure detach.sh exists for, shown by flock itself (so the test above can tell the two apart)."""
    done = subprocess.run([*LOCK, "bash", "-c", "setsid nohup sleep 60 >/dev/null 2>&1 </dev/null & echo $!"], env=env,
                          capture_output=True, text=True, check=True, timeout=30)
    pid = int(done.stdout)
    daemons.append(pid)
    assert running(pid, "sleep")
    assert not free(env)


def test_a_nested_caller_runs_at_once(env: dict[str, str]) -> None:
    proc = subprocess.Popen([*LOCK, *LOCK, "echo", "nested"], env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, _err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 0 and out.strip() == "nested"


def test_a_second_caller_waits_for_the_first(env: dict[str, str], tmp_path: Path) -> None:
    ready, release = tmp_path / "ready", tmp_path / "release"
    first = subprocess.Popen([*LOCK, "bash", "-c", f"touch {ready}; while [ ! -e {release} ]; do sleep 0.05; done"],
                             env=env, start_new_session=True)
    second = None
    try:
        deadline = time.monotonic() + 10
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists() and not free(env)
        second = subprocess.Popen([*LOCK, "true"], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
        time.sleep(1.0)
        assert second.poll() is None, "the second caller ran while the first held the lock"
        release.touch()
        _out, err = second.communicate(timeout=30)
        assert second.returncode == 0 and "docker-lock: waiting for" in err
    finally:
        release.touch()
        for proc in (first, second):
            if proc is not None:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
