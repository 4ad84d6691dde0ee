"""Testinfra checks of the nvidia_driver scenario (stand-in packages: real names, versions and units)."""
import pytest

testinfra_hosts = ["ansible://all"]

STACK = {
    "metalserve-nvd-h200": ["nvidia-open-580", "nvidia-persistenced", "nvidia-fabricmanager", "libnvidia-nscq"],
    "metalserve-nvd-b300": ["nvidia-open-580", "nvidia-persistenced", "nvidia-fabricmanager", "libnvidia-nscq", "nvlsm"],
    "metalserve-nvd-gb300a": ["nvidia-open-580", "nvidia-persistenced", "nvidia-imex"],
    "metalserve-nvd-gb300b": ["nvidia-open-580", "nvidia-persistenced", "nvidia-imex"],
    "metalserve-nvd-pcie": ["cuda-drivers-580", "nvidia-persistenced"],
}
ABSENT = {"nvidia-fabricmanager", "libnvidia-nscq", "nvlsm", "nvidia-imex", "nvidia-open-580", "cuda-drivers-580"}
# side_effect moved the H200 and the PCIe box to 580.105.08 (the PCIe box then refused to go on without a reboot)
VERSION = {"metalserve-nvd-h200": "580.105.08-1", "metalserve-nvd-pcie": "580.105.08-1"}


def name(host):
    return host.backend.get_hostname()


def test_exact_versions_and_holds(host):
    wanted = STACK[name(host)]
    version = VERSION.get(name(host), "580.95.05-1")
    held = host.run("apt-mark showhold").stdout.split()
    for pkg in wanted:
        expect = "2025.10.2-1" if pkg == "nvlsm" else version
        assert host.package(pkg).version == expect, pkg
        assert pkg in held, pkg
    for pkg in ABSENT - set(wanted):
        assert not host.package(pkg).is_installed, pkg
    blacklist = host.file("/etc/apt/apt.conf.d/51metalserve-nvidia").content_string
    assert all(f'"{pkg}";' in blacklist for pkg in wanted)


def test_services_where_they_belong(host):
    units = {"nvidia-persistenced": True,
             "nvidia-fabricmanager": "nvidia-fabricmanager" in STACK[name(host)],
             "nvlsm": "nvlsm" in STACK[name(host)],
             "nvidia-imex": "nvidia-imex" in STACK[name(host)]}
    for unit, wanted in units.items():
        service = host.service(unit)
        if wanted:
            assert service.is_enabled and service.is_running, unit
        else:
            assert not host.file(f"/lib/systemd/system/{unit}.service").exists, unit


def test_modprobe_files(host):
    nouveau = host.file("/etc/modprobe.d/metalserve-blacklist-nouveau.conf")
    assert "blacklist nouveau" in nouveau.content_string and "modeset=0" in nouveau.content_string
    nvlink5 = host.file("/etc/modules-load.d/metalserve-nvlink5.conf")
    assert nvlink5.exists == (name(host) == "metalserve-nvd-b300")
    if nvlink5.exists:
        assert nvlink5.content_string.splitlines()[1:] == ["ib_umad"]


@pytest.mark.parametrize("member", ["metalserve-nvd-gb300a", "metalserve-nvd-gb300b"])
def test_imex_nodes_config_is_the_same_on_every_member(host, member):
    if name(host) != member:
        pytest.skip("IMEX members only")
    config = host.file("/etc/nvidia-imex/nodes_config.cfg").content_string
    assert config.split() == ["metalserve-nvd-gb300a", "metalserve-nvd-gb300b"]
