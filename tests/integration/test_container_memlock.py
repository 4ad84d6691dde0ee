"""A container started the way the serving role starts one (docker mode, multi-node or PD) gets an
unlimited memlock, and /dev/infiniband when the host has it; without those flags it does not.
Runs against this machine's docker engine (tests/lab/setup.sh starts it)."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.metalserve.sglang.plugins.module_utils.serving_units import docker_forms

IMAGE = "metalserve-lab/debian-systemd:12"
pytestmark = pytest.mark.skipif(shutil.which("docker") is None or subprocess.run(
    ["docker", "image", "inspect", IMAGE], capture_output=True, check=False).returncode != 0,
    reason="needs the lab's docker engine and image (make lab)")


def rdma_flags() -> list[str]:
    flags = list(docker_forms()["rdma"])
    if not os.path.exists("/dev/infiniband"):  # this machine has no HCA: keep the rest of the flags
        i = flags.index("--device")
        del flags[i:i + 2]
    return flags


def run(flags: list[str], command: str) -> str:
    proc = subprocess.run(["docker", "run", "--rm", *flags, IMAGE, "sh", "-c", command], capture_output=True,
                          text=True, check=True, timeout=120)
    return proc.stdout.strip()


def test_memlock_is_unlimited_with_the_serving_flags() -> None:
    assert run(rdma_flags(), "ulimit -l") == "unlimited"
    assert run([], "ulimit -l") != "unlimited"  # the engine's default is a limit: the flags matter


def test_infiniband_devices_reach_the_container_when_the_host_has_them() -> None:
    if not os.path.exists("/dev/infiniband"):
        pytest.skip("this machine has no /dev/infiniband (no HCA); the device flag is checked where one exists")
    assert "uverbs" in run(docker_forms()["rdma"], "ls /dev/infiniband")
