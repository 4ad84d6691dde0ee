"""NVIDIA driver logic beyond the conformance table: repository refusals, parsing what apt and dnf print, the reboot
policy (against a real node's module version), and the IMEX domain (against a real node's /proc/devices)."""
from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import imex as im
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import firewall
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, ROOT

GPUS = load_catalog().gpus
REAL = FIXTURES / "nvidia" / "h200-x1-module"


def test_repository_refusals_and_mirror() -> None:
    assert nv.repository("Ubuntu", "24.04", "x86_64", "http://mirror.local/cuda/")["url"] == \
        "http://mirror.local/cuda/ubuntu2404/x86_64/"
    with pytest.raises(RecipeError, match=r"Ubuntu 20.04 has no CUDA repository we know; supported: Debian-12, "
                                          r"RedHat-9, Rocky-9, Ubuntu-22, Ubuntu-24"):
        nv.repository("Ubuntu", "20.04", "x86_64")
    with pytest.raises(RecipeError, match=r"CPU architecture ppc64le is not one of aarch64, x86_64"):
        nv.repository("Ubuntu", "24.04", "ppc64le")
    with pytest.raises(RecipeError, match=r"SLES 15 has no CUDA repository we know"):
        nv.repository("SLES", "15", "x86_64")


def test_apt_preferences_parse_as_apt_reads_them(tmp_path) -> None:
    """The pin file is valid apt_preferences(5): apt-cache policy reads it without complaint."""
    if shutil.which("apt-cache") is None:
        pytest.skip("no apt here")
    prefs = tmp_path / "prefs"
    prefs.write_text(nv.repository("Ubuntu", "24.04", "x86_64")["pin"] + "\n" + nv.version_lock("580.95.05")["text"])
    proc = subprocess.run(["apt-cache", "-o", f"Dir::Etc::preferences={prefs}", "-o",
                           f"Dir::Etc::preferencesparts={tmp_path}/none", "policy"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "E:" not in proc.stderr, proc.stderr


def test_parse_madison_and_dnf_list() -> None:
    madison = (" nvidia-fabricmanager | 580.159.03-1ubuntu1 | https://developer.download.nvidia.com/compute/cuda/repos/"
               "ubuntu2404/x86_64  Packages\n"
               " nvidia-fabricmanager |  580.95.05-1 | https://developer.download.nvidia.com/compute/cuda/repos/"
               "ubuntu2404/x86_64  Packages\n"
               "nvidia-graphics-drivers-580 | 580.95.05-0ubuntu1 | http://archive.ubuntu.com noble/restricted Sources\n")
    assert nv.parse_madison(madison) == {"nvidia-fabricmanager": ["580.159.03-1ubuntu1", "580.95.05-1"]}
    dnf = ("Available Packages\n"
           "nvidia-fabricmanager.x86_64        3:580.126.20-1         cuda-rhel9-x86_64\n"
           "nvidia-fabricmanager.x86_64        3:580.95.05-1          cuda-rhel9-x86_64\n"
           "libnvidia-nscq.x86_64              580.126.20-1           cuda-rhel9-x86_64\n")
    table = nv.parse_dnf_list(dnf)
    assert table == {"nvidia-fabricmanager": ["3:580.126.20-1", "3:580.95.05-1"], "libnvidia-nscq": ["580.126.20-1"]}
    # dnf's "<name>-<version>" takes any release and ignores the epoch; a longer version is not a match
    assert nv.matches("3:580.126.20-1", "580.126.20", "dnf") and not nv.matches("3:580.126.200-1", "580.126.20", "dnf")
    assert nv.resolve(580, "", table, ["nvidia-fabricmanager", "libnvidia-nscq"], "nvidia-fabricmanager",
                      "dnf") == "580.126.20"


def test_requested_version_outside_the_branch() -> None:
    table = {"nvidia-open-580": ["580.95.05-0ubuntu1"]}
    with pytest.raises(RecipeError, match=r"nvidia_driver_version: 575.57.08 is not in branch 580"):
        nv.resolve(580, "575.57.08", table, ["nvidia-open-580"], "nvidia-open-580", "apt")
    with pytest.raises(RecipeError, match=r"'latest' is not a driver branch number"):
        nv.resolve("latest", "", table, ["nvidia-open-580"], "nvidia-open-580", "apt")


def test_lock_set_ignores_other_versions_and_other_software() -> None:
    installed = {"nvidia-open-580": ["580.95.05-0ubuntu1"], "libnvidia-compute-580": ["580.95.05-0ubuntu1"],
                 "nvidia-fabricmanager": ["580.95.05-1"], "cuda-compat-13-0": ["580.95.05-0ubuntu1"],
                 "cuda-cudart-13-0": ["13.0.96-1"], "libnvidia-container1": ["1.18.0-1"]}
    held = nv.lock_set(["nvidia-open-580", "nvidia-fabricmanager"], installed, "580.95.05")
    assert set(held) == {"nvidia-open-580", "nvidia-fabricmanager", "libnvidia-compute-580"}


@pytest.mark.parametrize("kw,action", [
    ({"running": "580.95.05", "changed": True}, "none"),
    ({"running": "580.95.05", "changed": False}, "none"),
    ({"running": None, "changed": True}, "refuse"),            # a fresh node
    ({"running": None, "changed": False}, "refuse"),           # a run after a refused one: still pending
    ({"running": "580.82.07", "changed": True, "container": True}, "skip"),
    ({"running": "580.82.07", "changed": True, "control_node": True, "allow": True}, "refuse"),
    ({"running": "580.82.07", "changed": True, "allow": True}, "reboot"),
])
def test_reboot_policy(kw: dict, action: str) -> None:
    decision = nv.reboot(**{"installed": "580.95.05", "allow": False, "container": False, "control_node": False, **kw})
    assert decision["action"] == action
    assert decision["start_services"] == (kw["running"] == "580.95.05")
    if action == "refuse" and not kw.get("control_node"):
        assert decision["msg"].startswith("a reboot is pending: the installed driver is 580.95.05 and the running "
                                          f"module is {kw['running'] or 'not loaded'}")
        assert "nvidia_driver_allow_reboot: true" in decision["msg"]


def test_reboot_reads_a_real_nodes_module_version() -> None:
    """/sys/module/nvidia/version of a real H200 node against the same driver installed: nothing pending."""
    loaded = (REAL / "sys-module-nvidia-version.txt").read_text().strip()
    assert loaded == "580.159.04"
    assert nv.reboot(installed="580.159.04", running=loaded, changed=False, allow=False, container=False,
                     control_node=False)["action"] == "none"


def test_a_newer_kernel_pulled_by_the_install_needs_a_reboot() -> None:
    base = {"installed": "580.95.05", "running": "580.95.05", "changed": True, "allow": False, "container": False,
            "control_node": False, "running_kernel": "6.8.0-45-generic"}
    assert nv.newest_kernel(["vmlinuz-6.8.0-45-generic", "vmlinuz-6.8.0-51-generic", "vmlinuz-6.8.0-9-generic"]) \
        == "6.8.0-51-generic"
    pulled = nv.reboot(**base, kernels=["vmlinuz-6.8.0-45-generic", "vmlinuz-6.8.0-51-generic"])
    assert pulled["action"] == "refuse" and not pulled["start_services"]
    assert "the install pulled kernel 6.8.0-51-generic while 6.8.0-45-generic runs" in pulled["msg"]
    assert nv.reboot(**{**base, "changed": False}, kernels=["vmlinuz-6.8.0-51-generic"])["action"] == "none"


def test_imex_channel_major_from_a_real_node() -> None:
    """The real H200's /proc/devices registers nvidia-caps-imex-channels (242) although no channel node exists."""
    assert im.channel_major((REAL.parent / "h200-x1-devices" / "proc-devices.txt").read_text()) == 242
    assert "CreateImexChannel0: 0" in (REAL / "proc-driver-params.txt").read_text()
    assert im.channel_major("Character devices:\n195 nvidia\n\nBlock devices:\n242 nvidia-caps-imex-channels\n") is None


HOSTVARS = {"t1": {"ansible_host": "10.1.0.11"}, "t2": {"sglang_dist_address": "10.1.0.12", "ansible_host": "t2.lab"},
            "t3": {"ansible_host": "t3.lab", "ansible_default_ipv4": {"address": "10.1.0.13"}},
            "t4": {"nvidia_driver_imex_address": "fd00::14", "ansible_host": "10.9.9.9"}}


def test_nodes_config_lists_ips_in_member_order() -> None:
    text = im.nodes_config(["t1", "t2", "t3", "t4"], HOSTVARS)
    assert text == "10.1.0.11\n10.1.0.12\n10.1.0.13\nfd00::14\n"
    assert all(ipaddress.ip_address(line) for line in text.split())


def test_nodes_config_refusals() -> None:
    with pytest.raises(RecipeError, match=r"IMEX member t5 has no IP address \(sglang_dist_address is 't5-ib'; "
                                          r"ansible_host is 't5.lab'; no gathered default IPv4 address\).*Set "
                                          r"nvidia_driver_imex_address on t5"):
        im.nodes_config(["t1", "t5"], {**HOSTVARS, "t5": {"sglang_dist_address": "t5-ib", "ansible_host": "t5.lab"}})
    with pytest.raises(RecipeError, match=r"IMEX members share address\(es\) 10.1.0.11"):
        im.nodes_config(["t1", "t6"], {**HOSTVARS, "t6": {"ansible_host": "10.1.0.11"}})


def test_imex_ports_follow_config_cfg() -> None:
    assert im.ports("") == [50000, 50005]                              # NVIDIA's defaults: command service on
    assert im.ports("# comment\nSERVER_PORT=51000\nIMEX_CMD_ENABLED=0\n") == [51000]
    assert im.ports("IMEX_CMD_PORT=50100\n") == [50000, 50100]


def test_imex_ruleset_is_valid_nft_and_only_guards_the_imex_ports(tmp_path) -> None:
    text = firewall.imex_ruleset(["10.1.0.11", "10.1.0.12", "fd00::14"], [50000, 50005], "rack1")
    assert "table inet metalserve_imex\ndelete table inet metalserve_imex\ntable inet metalserve_imex {" in text
    assert "meta nfproto ipv4 tcp dport { 50000, 50005 } ip saddr != @members_v4 drop" in text
    assert "meta nfproto ipv6 tcp dport { 50000, 50005 } ip6 saddr != @members_v6 drop" in text
    assert "policy accept" in text and text.count("drop") == 2
    nft = shutil.which("nft") or "/usr/sbin/nft"
    if not shutil.which(nft):
        pytest.skip("nft is not installed here")
    path = tmp_path / "imex.nft"
    path.write_text(text)
    proc = subprocess.run([nft, "-c", "-f", str(path)], capture_output=True, text=True, check=False)
    if "Operation not permitted" in proc.stderr:
        pytest.skip("nft -c needs CAP_NET_ADMIN here")
    assert proc.returncode == 0, proc.stderr


def test_the_channel_program_reads_the_major_the_real_node_registers(tmp_path: Path) -> None:
    """metalserve-imex-channel0, the one program that makes IMEX channel 0 by hand (at boot and on a running module):
    its awk line finds 242 in the real H200's /proc/devices, and never takes a block device of the same name."""
    script = (ROOT / "roles" / "nvidia_driver" / "files" / "metalserve-imex-channel0").read_text()
    program = re.search(r"awk '([^']+)' /proc/devices", script)
    assert program, "the script reads the major from /proc/devices with awk"

    def major(text: str) -> str:
        devices = tmp_path / "devices"
        devices.write_text(text)
        return subprocess.run(["awk", program.group(1), str(devices)], capture_output=True, text=True,
                              check=True).stdout.strip()

    assert major((REAL.parent / "h200-x1-devices" / "proc-devices.txt").read_text()) == "242"
    assert major("Character devices:\n195 nvidia\n\nBlock devices:\n242 nvidia-caps-imex-channels\n") == ""
