# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node acceptance, health half: collect what the GPU tools, sysfs and the kernel log say, unparsed.

Runs on the node with any python3 (standard library only) and prints one JSON object. It parses nothing:
the controller parses (plugins/plugin_utils/checks/acceptance.py), so the raw text that came back is what
the tests replay. It changes nothing on the node.

NVIDIA: `nvidia-smi -q -x` (PCIe, ECC, retired pages, row remapping, persistence, clocks, power, processes),
`nvidia-smi nvlink -s`, `nvidia-smi topo -m`. AMD: `amd-smi static|metric|topology|bad-pages|process --json`.
Both: the GPUs' PCIe links from sysfs, and the kernel log since boot filtered to GPU error lines (Xid).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

PROBE = "metalserve-acceptance-node/1"
NVIDIA_VENDOR, AMD_VENDOR = "0x10de", "0x1002"
GPU_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")
PCI_FILES = ("vendor", "device", "class", "numa_node", "current_link_speed", "current_link_width",
             "max_link_speed", "max_link_width")
# kernel log lines worth bringing home: NVIDIA Xid events and amdgpu RAS / ECC reports
KERNEL_LINE = re.compile(r"NVRM: Xid|NVRM: GPU at .* has fallen off the bus|amdgpu.*(RAS|ras|uncorrect|poison|ECC|ecc)")
NVIDIA_COMMANDS = {
    "nvidia_smi_xml": ["nvidia-smi", "-q", "-x"],
    "nvidia_nvlink": ["nvidia-smi", "nvlink", "-s"],
    "nvidia_topo": ["nvidia-smi", "topo", "-m"],
}
AMD_COMMANDS = {
    "amd_static": ["amd-smi", "static", "--json"],
    "amd_metric": ["amd-smi", "metric", "--json"],
    "amd_topology": ["amd-smi", "topology", "--json"],
    "amd_bad_pages": ["amd-smi", "bad-pages", "--json"],
    "amd_process": ["amd-smi", "process", "--json"],
}


def run(argv: list[str], timeout: int) -> dict[str, object]:
    """One command: rc None when the program is not installed; output kept as text."""
    if shutil.which(argv[0]) is None:
        return {"argv": argv, "rc": None, "stdout": "", "stderr": f"{argv[0]}: not installed"}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"argv": argv, "rc": 124, "stdout": "", "stderr": f"timed out after {timeout}s"}
    except OSError as exc:
        return {"argv": argv, "rc": 126, "stdout": "", "stderr": str(exc)}
    return {"argv": argv, "rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-4000:]}


def read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def pci_gpus(root: str) -> list[dict[str, object]]:
    """GPUs on the PCI bus (NVIDIA and AMD compute classes) with their link speed and width from sysfs."""
    base = os.path.join(root, "sys/bus/pci/devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for bdf in names:
        entry: dict[str, object] = {"bdf": bdf}
        for name in PCI_FILES:
            entry[name] = read(os.path.join(base, bdf, name))
        vendor, klass = str(entry["vendor"] or "").lower(), str(entry["class"] or "").lower()[:6]
        if vendor in (NVIDIA_VENDOR, AMD_VENDOR) and klass in GPU_CLASSES:
            if vendor == AMD_VENDOR and klass == "0x0300":
                continue  # a BMC or client display chip, not an Instinct accelerator
            out.append(entry)
    return out


def kernel_log(timeout: int) -> dict[str, object]:
    """GPU error lines of the kernel log since boot: journalctl -k -b, else dmesg."""
    tried = []
    for argv in (["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short-iso"], ["dmesg", "-T"], ["dmesg"]):
        result = run(argv, timeout)
        if result["rc"] == 0:
            lines = [line for line in str(result["stdout"]).splitlines() if KERNEL_LINE.search(line)]
            return {"source": " ".join(argv), "lines": lines[-2000:], "error": None}
        tried.append(f"{' '.join(argv)}: {str(result['stderr']).strip()[:200] or 'rc=' + str(result['rc'])}")
    return {"source": None, "lines": [], "error": "; ".join(tried)}


def collect(root: str, timeout: int) -> dict[str, object]:
    commands: dict[str, object] = {}
    if shutil.which("nvidia-smi"):
        commands.update({name: run(argv, timeout) for name, argv in NVIDIA_COMMANDS.items()})
    if shutil.which("amd-smi"):
        commands.update({name: run(argv, timeout) for name, argv in AMD_COMMANDS.items()})
    return {
        "probe": PROBE,
        "hostname": socket.gethostname(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "commands": commands,
        "pci": pci_gpus(root),
        "kernel_log": kernel_log(timeout),
        "proc_driver_version": read(os.path.join(root, "proc/driver/nvidia/version")),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="/", help="prefix of /sys and /proc (tests)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds one tool may take")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    args = ap.parse_args()
    text = json.dumps(collect(args.root, args.timeout), indent=1, sort_keys=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
