"""Testinfra checks of the nvidia_driver scenario, against the tests' own vendor facts (tests/vendor/nvidia.yml).

The stand-ins carry NVIDIA's names, every published version with its real revision, and units that refuse to start
while the loaded module is not theirs. State at verify: every node rebooted (simulated) on 580.95.05; the H200 then
upgraded to 580.159.03 and rebooted again.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
import yaml

testinfra_hosts = ["ansible://all"]

FACTS = yaml.safe_load((Path(__file__).resolve().parents[3] / "tests" / "vendor" / "nvidia.yml").read_text())
FOLDER = {"metalserve-nvd-pcie": "debian12"}
VERSION = {"metalserve-nvd-h200": "580.159.03"}
PINNED = {   # what each node needs, by NVIDIA's facts (driver set of its family, extras of its platform)
    "metalserve-nvd-h200": ["nvidia-open-580", "nvidia-fabricmanager", "libnvidia-nscq", "libnvsdm"],
    "metalserve-nvd-b300": ["nvidia-open-580", "nvidia-fabricmanager", "libnvidia-nscq", "libnvsdm"],
    "metalserve-nvd-gb300a": ["nvidia-open-580", "nvidia-imex", "nvidia-modprobe"],
    "metalserve-nvd-gb300b": ["nvidia-open-580", "nvidia-imex", "nvidia-modprobe"],
    "metalserve-nvd-pcie": ["nvidia-driver-cuda", "nvidia-kernel-dkms", "nvidia-persistenced"],
}
UNITS = {"metalserve-nvd-h200": ["nvidia-persistenced", "nvidia-fabricmanager"],
         "metalserve-nvd-b300": ["nvidia-persistenced", "nvidia-fabricmanager"],
         "metalserve-nvd-gb300a": ["nvidia-persistenced", "nvidia-imex"],
         "metalserve-nvd-gb300b": ["nvidia-persistenced", "nvidia-imex"],
         "metalserve-nvd-pcie": ["nvidia-persistenced"]}


def name(host) -> str:
    return host.backend.get_hostname()


def published(host, package: str) -> list[str]:
    return FACTS["published"][FOLDER.get(name(host), "ubuntu2404")]["packages"][package]["versions"]


def test_every_pinned_package_at_the_driver_version_with_its_own_revision_and_held(host) -> None:
    version = VERSION.get(name(host), "580.95.05")
    held = set(host.run("apt-mark showhold").stdout.split())
    for package in PINNED[name(host)]:
        want = next(v for v in published(host, package) if v.startswith(version + "-"))
        assert host.package(package).version == want, package
        assert package in held, package
    # the whole driver is held, not only the metas (NVIDIA's lock: every package of the driver's version)
    driver_libs = [p for p in ("nvidia-driver-580-open", "libnvidia-compute-580", "nvidia-dkms-580-open")
                   if host.package(p).is_installed]
    assert all(p in held for p in driver_libs)
    if name(host) == "metalserve-nvd-h200":       # upgraded: the NVLink side now carries -1ubuntu1
        assert host.package("nvidia-fabricmanager").version == "580.159.03-1ubuntu1"
        assert host.package("nvidia-open-580").version == "580.159.03-1ubuntu1"


def test_nothing_a_platform_does_not_need(host) -> None:
    for package in ("nvidia-fabricmanager", "libnvidia-nscq", "nvlsm", "nvidia-imex", "cuda-drivers-580"):
        needed = package in PINNED[name(host)] or (package == "nvlsm" and name(host) == "metalserve-nvd-b300")
        assert host.package(package).is_installed == needed, package


def test_the_services_run_in_order_on_the_loaded_module(host) -> None:
    loaded = host.file("/run/nvidia-standin/module-version").content_string.strip()
    assert loaded == VERSION.get(name(host), "580.95.05")
    for unit in UNITS[name(host)]:
        service = host.service(unit)
        assert service.is_enabled and service.is_running, unit


def test_nvlsm_runs_inside_fabric_manager_and_has_no_unit(host) -> None:
    units = host.run("systemctl list-unit-files --no-legend").stdout
    assert "nvlsm" not in units
    if name(host) != "metalserve-nvd-b300":
        assert not host.file("/etc/modules-load.d/metalserve-nvlink5.conf").exists
        return
    conf = host.file("/etc/modules-load.d/metalserve-nvlink5.conf").content_string.split()
    assert {"mlx5_core", "ib_umad"} <= set(conf)
    assert {"mlx5_core", "ib_umad"} <= set(host.file("/run/nvidia-standin/lsmod").content_string.split())
    # the processes of Fabric Manager's unit, as systemd lists them (the cgroup path systemd reports is the host's
    # view, so /proc of each process says which unit it belongs to)
    assert host.service("nvidia-fabricmanager").is_running
    pids = host.run("pgrep -f '/opt/nvidia/nvlsm/sbin/nvls[m] '").stdout.split()  # [m]: not the shell running pgrep
    assert pids, "nvlsm is not running"
    for pid in pids:
        assert "nvidia-fabricmanager.service" in host.file(f"/proc/{pid}/cgroup").content_string


def test_cuda_repository_as_nvidia_writes_it(host) -> None:
    sources = host.file("/etc/apt/sources.list.d/cuda.sources").content_string
    # the H200 had cuda-keyring's line for the same repository (prepare.yml): only that line went, apt reads its
    # sources again
    if name(host) == "metalserve-nvd-h200":
        left = host.file("/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list").content_string.splitlines()
        assert [line for line in left if line.startswith("deb ")] == [
            "deb [trusted=yes] file:///srv/aptrepo/amd/graphics/7.2.4/ubuntu jammy main"]
        assert any(line.startswith("# deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg]") for line in left)
    update = host.run("apt-get update")
    assert update.rc == 0, update.stderr
    folder = FOLDER.get(name(host), "ubuntu2404")
    assert f"URIs: file:///srv/aptrepo/nvidia/cuda/repos/{folder}/x86_64/" in sources
    assert "Suites: /" in sources and "Signed-By: /etc/apt/keyrings/cuda-archive-keyring.asc" in sources
    pin = host.file(FACTS["repository"]["apt"]["pin_file"]).content_string
    assert pin.strip() == FACTS["repository"]["apt"]["pin"].strip()


def test_the_pins_keep_the_distributions_newer_builds_out(host) -> None:
    """Ubuntu's noble-updates publishes nvidia-utils-580 580.173.02 (newer than any of NVIDIA's): it stays at 500,
    NVIDIA's builds at 600 (cuda-<distro>.pin), the driver's own version at 1000 (NVIDIA's APT version lock)."""
    if name(host) == "metalserve-nvd-pcie":
        pytest.skip("the Debian node has no distribution build of these names")
    policy = host.run("apt-cache policy nvidia-utils-580").stdout
    installed = host.package("nvidia-utils-580").version
    archive = FACTS["distribution_archive"]["ubuntu2404"]["packages"]["nvidia-utils-580"]["versions"][0]
    cuda = FACTS["published"]["ubuntu2404"]["packages"]["nvidia-utils-580"]["versions"]
    assert f"Candidate: {installed}" in policy, policy
    assert f"{archive} 500" in policy, policy
    assert all(f"{v} {1000 if v == installed else 600}" in policy for v in cuda), policy
    lock = host.file("/etc/apt/preferences.d/metalserve-nvidia-version-lock").content_string
    assert f"Pin: version {VERSION.get(name(host), '580.95.05')}*" in lock


@pytest.mark.parametrize("member", ["metalserve-nvd-gb300a", "metalserve-nvd-gb300b"])
def test_imex_domain(host, member: str) -> None:
    if name(host) != member:
        pytest.skip("IMEX members only")
    ips = host.file("/etc/nvidia-imex/nodes_config.cfg").content_string.split()
    assert len(ips) == 2 and all(ipaddress.ip_address(ip) for ip in ips)
    assert host.interface("eth0").addresses[0] in ips
    # channel 0 at every module load: the stand-in module read the option at the simulated boot
    assert "CreateImexChannel0: 1" in host.file("/run/nvidia-standin/params").content_string
    assert "options nvidia NVreg_CreateImexChannel0=1" in host.file("/etc/modprobe.d/metalserve-nvidia-imex.conf").content_string
    ruleset = host.run("nft list table inet metalserve_imex").stdout
    ports = f"{FACTS['imex']['server_port']}, {FACTS['imex']['cmd_port']}"
    assert f"tcp dport {{ {ports} }} ip saddr != @members_v4 drop" in ruleset
    assert all(ip in ruleset for ip in ips)
