"""Testinfra checks of the rocm_driver scenario, against the tests' own vendor facts (tests/vendor/amd.yml).
State at verify: the MI300X node moved from ROCm 6.4.3 to 7.2.4 (side_effect.yml)."""
from __future__ import annotations

from pathlib import Path

import yaml

testinfra_hosts = ["ansible://all"]

FACTS = yaml.safe_load((Path(__file__).resolve().parents[3] / "tests" / "vendor" / "amd.yml").read_text())
RELEASE = "7.2.4"
HELD = ["amdgpu-dkms", "amdgpu-dkms-firmware", "rocm", "rocm-core", "amd-smi-lib"]


def test_release_and_holds(host) -> None:
    want = FACTS["published"][RELEASE]
    for package in HELD:
        version = host.run(f"dpkg-query -W -f='${{Version}}' {package}").stdout
        assert version == want[package], package
    held = host.run("apt-mark showhold").stdout.split()
    assert sorted(p for p in HELD if p in held) == sorted(HELD)
    blacklist = host.file("/etc/apt/apt.conf.d/51metalserve-rocm").content_string
    assert all(f'"{pkg}";' in blacklist for pkg in HELD)


def test_repositories_in_amds_layout_signed_and_pinned(host) -> None:
    spec = FACTS["releases"][RELEASE]
    rocm = host.file("/etc/apt/sources.list.d/rocm.sources").content_string
    assert f"file:///srv/aptrepo/amd/rocm/apt/{spec['dir']}" in rocm
    assert f"file:///srv/aptrepo/amd/graphics/{spec['dir']}/ubuntu" in rocm          # ROCm 7.x needs graphics/<dir>
    amdgpu = host.file("/etc/apt/sources.list.d/amdgpu.sources").content_string
    assert f"file:///srv/aptrepo/amd/amdgpu/{spec['driver']}/ubuntu" in amdgpu       # 30.30.4, not 7.2.4
    for text in (rocm, amdgpu):
        assert "Suites: jammy" in text and "Signed-By: /etc/apt/keyrings/rocm.asc" in text
    pin = host.file(FACTS["repository"]["apt"]["pin_file"]).content_string
    assert pin.strip() == FACTS["repository"]["apt"]["pin"].strip()
    policy = host.run("apt-cache policy amdgpu-dkms-firmware").stdout
    assert " 600 file:/srv/aptrepo/amd/amdgpu/" in policy or " 600 file:///srv/aptrepo/amd/amdgpu/" in policy, policy


def test_devices_for_the_serving_user_only(host) -> None:
    rules = host.file("/etc/udev/rules.d/70-metalserve-amdgpu.rules")
    assert rules.mode == 0o644
    assert 'KERNEL=="kfd", GROUP="render", MODE="0660"' in rules.content_string
    assert 'KERNEL=="renderD*", GROUP="render", MODE="0660"' in rules.content_string
    user = host.user("sglang")
    assert {"video", "render"} <= set(user.groups)
    assert user.shell == "/usr/sbin/nologin"


def test_kernel_settings_in_grub(host) -> None:
    grub = host.file("/etc/default/grub.d/60-metalserve-rocm.cfg")
    assert grub.content_string.strip().endswith('GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} iommu=pt"')
