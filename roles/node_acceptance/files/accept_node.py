# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node acceptance, health half: collect what the GPU tools, sysfs and the kernel log say, unparsed.

Runs on the node with any python3 (standard library only) and prints one JSON object. It parses nothing
but the process ids the GPU tools list: the controller parses (plugins/plugin_utils/checks/acceptance.py), so
the raw text that came back is what the tests replay. It changes nothing on the node.

NVIDIA: `nvidia-smi -q -x` (PCIe, ECC, retired pages, row remapping, persistence, clocks, power, processes),
`nvidia-smi nvlink -s`, `nvidia-smi topo -m`. AMD: `amd-smi static|metric|topology|bad-pages|process --json`.
Both: the GPUs' PCIe links from sysfs, and the kernel log since boot filtered to GPU error lines (Xid).
Every process the GPU tools list: /proc/<pid>/cgroup (its systemd unit or container), comm, owner and
cmdline (values of secret-looking options masked here, before anything leaves the node), and, when a process
sits in a docker cgroup, `docker ps` for the container names.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
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
# a pid of `nvidia-smi -q -x` (<processes><process_info><pid>) or of `amd-smi process --json` ("pid": N)
SMI_PID = re.compile(r"<pid>\s*(\d+)\s*</pid>|\"pid\":\s*(\d+)")
DOCKER_CGROUP = re.compile(r"docker[-/][0-9a-f]{64}")
DOCKER_PS = ["docker", "ps", "--no-trunc", "--format", "{{.ID}} {{.Names}}"]
# options whose value is a secret (--api-key X, --hf-token=X, PASSWORD=X), and token-shaped words anywhere
SECRET_OPTION = re.compile(r"(key|token|secret|passw|credential|auth)", re.I)
SECRET_WORD = re.compile(r"(hf_[A-Za-z0-9]{6,}|sk-[A-Za-z0-9_-]{6,}|gh[pousr]_[A-Za-z0-9]{10,}|glpat-[A-Za-z0-9_-]{10,}"
                         r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|://[^/@\s:]+:[^/@\s]+@)")
CMDLINE_WORDS, CMDLINE_CHARS = 24, 400
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


def masked(argv: list[str]) -> list[str]:
    """A command line fit to leave the node: the value after (or in) a secret-looking option and token-shaped
    words replaced by ********, at most CMDLINE_WORDS words of CMDLINE_CHARS characters in all."""
    out: list[str] = []
    hide_next = False
    for word in argv[:CMDLINE_WORDS]:
        if hide_next:
            out.append("********")
            hide_next = False
            continue
        name, eq, _value = word.partition("=")
        if eq and SECRET_OPTION.search(name):
            out.append(f"{name}=********")
            continue
        if word.startswith("-") and SECRET_OPTION.search(word):
            hide_next = True
        out.append(SECRET_WORD.sub("********", word))
    if len(argv) > CMDLINE_WORDS:
        out.append(f"... ({len(argv) - CMDLINE_WORDS} more)")
    text_len = 0
    for i, word in enumerate(out):
        text_len += len(word) + 1
        if text_len > CMDLINE_CHARS:
            return out[:i] + ["..."]
    return out


def process(root: str, pid: str) -> dict[str, object]:
    """What the node says about one process the GPU tools list: its cgroup (unit or container), name, owner and
    masked command line; None where it is gone or unreadable."""
    base = os.path.join(root, "proc", pid)
    raw = None
    try:
        with open(os.path.join(base, "cmdline"), "rb") as handle:
            raw = handle.read()
    except OSError:
        pass
    uid = None
    for line in (read(os.path.join(base, "status")) or "").splitlines():
        if line.startswith("Uid:"):
            uid = line.split()[1]
    user = None
    if uid is not None:
        try:
            user = pwd.getpwuid(int(uid)).pw_name
        except (KeyError, ValueError):
            user = None
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w] if raw is not None else None
    return {"cgroup": read(os.path.join(base, "cgroup")), "comm": read(os.path.join(base, "comm")),
            "uid": uid, "user": user, "cmdline": masked(words) if words is not None else None}


def gpu_processes(root: str, commands: dict[str, dict[str, object]], timeout: int) -> dict[str, object]:
    """/proc of every pid nvidia-smi or amd-smi listed, and docker's container names when one sits in docker."""
    pids: set[str] = set()
    for name in ("nvidia_smi_xml", "amd_process"):
        entry = commands.get(name) or {}
        for match in SMI_PID.finditer(str(entry.get("stdout") or "")):
            pids.add(match.group(1) or match.group(2))
    found = {pid: process(root, pid) for pid in sorted(pids, key=int)}
    if any(DOCKER_CGROUP.search(str(p["cgroup"] or "")) for p in found.values()):
        commands["docker_ps"] = run(DOCKER_PS, timeout)
    return found


def collect(root: str, timeout: int) -> dict[str, object]:
    commands: dict[str, dict[str, object]] = {}
    if shutil.which("nvidia-smi"):
        commands.update({name: run(argv, timeout) for name, argv in NVIDIA_COMMANDS.items()})
    if shutil.which("amd-smi"):
        commands.update({name: run(argv, timeout) for name, argv in AMD_COMMANDS.items()})
    processes = gpu_processes(root, commands, timeout)
    return {
        "probe": PROBE,
        "hostname": socket.gethostname(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "commands": commands,
        "processes": processes,
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
