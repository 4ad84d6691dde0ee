"""A container started the way the serving role starts one (docker mode, multi-node or PD) gets an
unlimited memlock, and /dev/infiniband when the host has it; without those flags it does not.
Runs against this machine's docker engine (tests/lab/setup.sh starts it).

A container cannot get a memlock limit above the engine's own hard limit. Where dockerd runs with a finite
hard limit and without CAP_SYS_RESOURCE (some CI sandboxes: 8 MiB), the 'unlimited' case is skipped with that
reason; the flag's mechanism is still proven there by lowering the limit and reading it back."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.units import docker_forms

IMAGE = "metalserve-lab/debian-sshd:12"
pytestmark = pytest.mark.skipif(shutil.which("docker") is None or subprocess.run(
    ["docker", "image", "inspect", IMAGE], capture_output=True, check=False).returncode != 0,
    reason="needs the lab's docker engine and image (make lab)")


def engine_memlock_hard() -> str:
    """The hard 'Max locked memory' limit of the running dockerd, as /proc/<pid>/limits prints it."""
    pid = subprocess.run(["pgrep", "-o", "-x", "dockerd"], capture_output=True, text=True, check=False).stdout.strip()
    if not pid:
        return "unknown"
    with open(f"/proc/{pid}/limits", encoding="utf-8") as limits:
        for line in limits:
            if line.startswith("Max locked memory"):
                return line.split()[4]
    return "unknown"


def rdma_flags() -> list[str]:
    flags = list(docker_forms()["rdma"])
    if not os.path.exists("/dev/infiniband"):  # this machine has no HCA: keep the rest of the flags
        i = flags.index("--device")
        del flags[i:i + 2]
    return flags


def run(flags: list[str], command: str) -> str:
    proc = subprocess.run(["docker", "run", "--rm", *flags, IMAGE, "sh", "-c", command], capture_output=True,
                          text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_serving_flags_ask_for_unlimited_memlock() -> None:
    flags = docker_forms()["rdma"]
    assert "--ulimit" in flags and flags[flags.index("--ulimit") + 1] == "memlock=-1"
    assert "IPC_LOCK" in flags


def test_the_ulimit_flag_reaches_the_container() -> None:
    default = run([], "ulimit -l")
    assert run(["--ulimit", "memlock=4096:4096"], "ulimit -l") == "4"  # 4096 bytes = 4 KiB
    assert default != "4"


def test_memlock_is_unlimited_with_the_serving_flags() -> None:
    hard = engine_memlock_hard()
    if hard != "unlimited":
        pytest.skip(f"dockerd's own hard memlock limit is {hard} bytes and it cannot raise it (no CAP_SYS_RESOURCE); "
                    "a container cannot exceed it")
    assert run(rdma_flags(), "ulimit -l") == "unlimited"
    assert run([], "ulimit -l") != "unlimited"  # the engine's default is a limit: the flags matter


def test_infiniband_devices_reach_the_container_when_the_host_has_them() -> None:
    if not os.path.exists("/dev/infiniband"):
        pytest.skip("this machine has no /dev/infiniband (no HCA); the device flag is checked where one exists")
    assert "uverbs" in run(docker_forms()["rdma"], "ls /dev/infiniband")
