"""Testinfra checks of the rocm_driver scenario (stand-ins for AMD's packages: real names, version format)."""
testinfra_hosts = ["ansible://all"]

# side_effect moved the MI300X to 6.4.3 with rocm_driver_upgrade
ROCM = {"metalserve-rocm-mi300x": "6.4.3.60403-128~22.04", "metalserve-rocm-mi355x": "7.0.2.70002-56~22.04"}
HELD = ["amdgpu-dkms", "amdgpu-dkms-firmware", "rocm", "rocm-core", "amd-smi-lib"]


def name(host):
    return host.backend.get_hostname()


def test_release_and_holds(host):
    assert host.package("rocm").version == ROCM[name(host)]
    assert host.package("rocm-core").version == ROCM[name(host)]
    assert host.package("amdgpu-dkms").is_installed
    held = host.run("apt-mark showhold").stdout.split()
    assert sorted(p for p in HELD if p in held) == sorted(HELD)
    blacklist = host.file("/etc/apt/apt.conf.d/51metalserve-rocm").content_string
    assert all(f'"{pkg}";' in blacklist for pkg in HELD)


def test_devices_for_the_serving_user_only(host):
    rules = host.file("/etc/udev/rules.d/70-metalserve-amdgpu.rules")
    assert rules.mode == 0o644
    assert 'KERNEL=="kfd", GROUP="render", MODE="0660"' in rules.content_string
    assert 'KERNEL=="renderD*", GROUP="render", MODE="0660"' in rules.content_string
    user = host.user("sglang")
    assert {"video", "render"} <= set(user.groups)
    assert user.shell == "/usr/sbin/nologin"


def test_kernel_settings_in_grub(host):
    grub = host.file("/etc/default/grub.d/60-metalserve-rocm.cfg")
    assert grub.content_string.strip().endswith('GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} iommu=pt"')


def test_repositories_signed_and_pinned(host):
    """deb822 with Signed-By (the repository is signed by a throw-away test key standing in for AMD's)."""
    sources = host.file("/etc/apt/sources.list.d/rocm.sources").content_string
    release = ROCM[name(host)].split(".", 3)
    assert f"URIs: file:/srv/aptrepo/amd/rocm/apt/{'.'.join(release[:3])}" in sources
    assert "Suites: jammy" in sources and "Signed-By: /etc/apt/keyrings/rocm.asc" in sources
    pin = host.file("/etc/apt/preferences.d/metalserve-rocm-pin-600").content_string
    assert 'Pin: origin ""' in pin and "Pin-Priority: 600" in pin
    policy = host.run("apt-cache policy rocm").stdout
    assert " 600 file:/srv/aptrepo/amd/rocm/apt/" in policy
