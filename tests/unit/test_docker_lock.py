"""The lab's lock (tests/lab/docker-lock.sh) and its daemon launcher (tests/lab/detach.sh), judged by flock(1) itself:
a daemon started under the lock must not keep it (flock hands its locked descriptor to the command it runs, and a
child that inherits it holds the lock for as long as it lives), a nested caller must not wait for itself, and a
second caller must wait for the first."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

LAB = ROOT / "tests" / "lab"
pytestmark = pytest.mark.skipif(shutil.which("flock") is None, reason="flock(1) (util-linux) is the oracle")


@pytest.fixture()
def lock(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != "METALSERVE_DOCKER_LOCK_HELD"}
    env["METALSERVE_DOCKER_LOCK"] = str(tmp_path / "docker.lock")
    yield env
    subprocess.run(["pkill", "-f", f"sleep 41.{os.getpid()}"], check=False)


def free(env: dict[str, str]) -> bool:
    """Whether flock(1) can take the lock right now."""
    return subprocess.run(["flock", "-n", env["METALSERVE_DOCKER_LOCK"], "true"], check=False).returncode == 0


def test_a_daemon_started_through_detach_leaves_the_lock_free(lock: dict[str, str], tmp_path: Path) -> None:
    subprocess.run(["bash", str(LAB / "docker-lock.sh"), "bash", str(LAB / "detach.sh"), str(tmp_path / "d.log"),
                    "sleep", f"41.{os.getpid()}"], env=lock, check=True, timeout=30)
    assert subprocess.run(["pgrep", "-f", f"sleep 41.{os.getpid()}"], check=False, capture_output=True).returncode == 0
    assert free(lock)


def test_a_daemon_started_without_detach_keeps_the_lock(lock: dict[str, str]) -> None:
    """The failure detach.sh exists for, shown by flock itself (so the test above can tell the two apart)."""
    subprocess.run(["bash", str(LAB / "docker-lock.sh"), "bash", "-c", f"setsid nohup sleep 41.{os.getpid()} "
                    ">/dev/null 2>&1 </dev/null &"], env=lock, check=True, timeout=30)
    assert not free(lock)


def test_a_nested_caller_runs_at_once(lock: dict[str, str]) -> None:
    done = subprocess.run(["bash", str(LAB / "docker-lock.sh"), "bash", str(LAB / "docker-lock.sh"), "echo", "nested"],
                          env=lock, capture_output=True, text=True, check=True, timeout=30)
    assert done.stdout.strip() == "nested"


def test_a_second_caller_waits_for_the_first(lock: dict[str, str]) -> None:
    first = subprocess.Popen(["bash", str(LAB / "docker-lock.sh"), "sleep", "2"], env=lock)
    try:
        for _ in range(50):
            if not free(lock):
                break
            time.sleep(0.05)
        start = time.monotonic()
        second = subprocess.run(["bash", str(LAB / "docker-lock.sh"), "true"], env=lock, capture_output=True,
                                text=True, check=True, timeout=30)
        assert time.monotonic() - start >= 1.0
        assert "waiting for" in second.stderr
    finally:
        first.wait(timeout=30)
