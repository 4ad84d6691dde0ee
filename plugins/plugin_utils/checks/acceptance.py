# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node acceptance: parse what the node probes brought back and judge it against the platform's limits.

Pure functions over the JSON of roles/node_acceptance/files/accept_node.py (raw tool output) and
accept_bench.py (all-reduce and memory figures); plot() alone needs matplotlib. Formats parsed:

- `nvidia-smi -q -x` (PCIe generation and width, ECC mode and counters, retired pages, row remapping,
  persistence mode, clocks, clock event (throttle) reasons, power limits, processes), both the flat ECC
  layout of R5xx drivers (sram_/dram_ counters) and the older nested one (single_bit/double_bit totals);
- `nvidia-smi nvlink -s` ("Link N: 26.562 GB/s", "Link N: <inactive>") and `nvidia-smi topo -m`;
- kernel log lines "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.";
- sysfs current_link_speed / current_link_width ("32.0 GT/s PCIe", "16");
- `amd-smi static|metric|topology|bad-pages|process --json` (ROCm 6.x: a JSON list; 7.x: {"gpu_data": [...]}),
  in the shape amdsmi_cli/amdsmi_commands.py writes;
- `/proc/<pid>/cgroup` of every process the GPU tools list (cgroup v2 '0::/system.slice/x.service', v1
  'N:name=systemd:/...'; docker's 'docker-<id>.scope' (systemd driver) or '/docker/<id>' (cgroupfs driver)) and
  `docker ps --no-trunc --format '{{.ID}} {{.Names}}'`, to tell this host's serving unit from anything else.

judge_host() returns every problem of one node with measured and expected figures and what to check;
judge_fabric() does the same for each multi-node instance; report_text() makes the one message the play
fails with (or warns with, when refusals are not enforced).
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.module_utils import gpu_probe
from ansible_collections.metalserve.sglang.plugins.plugin_utils import container, node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml

NA = ("", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "Unknown Error", "[Unknown Error]")
GT_S_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
# clock event reasons that mean the hardware holds the clocks down (not idling, not an application setting)
HW_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),\s*(?:pid=(?P<pid>[^,]*),\s*)?(?P<text>.*)")
_LINK = re.compile(r"^\s*Link\s+(\d+):\s*(.*?)\s*$")
_GPU_HEAD = re.compile(r"^GPU\s+(\d+):\s*(.*?)(?:\s+\(UUID:.*)?$")
MIB = 2**20


# ---------------------------------------------------------------------------------------------- values


def value(raw: Any) -> str | None:
    text = str(raw).strip() if raw is not None else ""
    return None if text in NA else text


def number(raw: Any) -> float | None:
    """'700.00 W' -> 700.0; '16x' -> 16.0; '1980 MHz' -> 1980.0; 'N/A' -> None."""
    text = value(raw)
    if text is None:
        return None
    match = re.match(r"^-?\d+(\.\d+)?", text)
    return float(match.group(0)) if match else None


def integer(raw: Any) -> int | None:
    found = number(raw)
    return int(found) if found is not None else None


def flag(raw: Any) -> bool | None:
    text = (value(raw) or "").lower()
    if text in ("yes", "enabled", "active", "true"):
        return True
    if text in ("no", "disabled", "not active", "false"):
        return False
    return None


def pcie_gen(speed: Any) -> int | None:
    """A link speed in GT/s ('32.0 GT/s PCIe', 32, {'value': 32, 'unit': 'GT/s'}) -> PCIe generation."""
    if isinstance(speed, dict):
        speed = speed.get("value")
    found = number(speed)
    return GT_S_TO_GEN.get(found) if found is not None else None


def bdf(bus_id: str | None) -> str | None:
    """'00000000:00:06.0' (nvidia-smi) or '0000:00:06.0' (sysfs) -> '0000:00:06.0'."""
    if not bus_id:
        return None
    parts = bus_id.lower().split(":")
    if len(parts) == 3:
        return f"{parts[0][-4:]}:{parts[1]}:{parts[2]}"
    return bus_id.lower()


# ---------------------------------------------------------------------------------------------- NVIDIA


def _t(el: ET.Element | None, path: str) -> str | None:
    return value(el.findtext(path)) if el is not None else None


def _ecc(gpu: ET.Element) -> dict[str, Any]:
    errors = gpu.find("ecc_errors")

    def total(scope: str, kind: str) -> int | None:
        node = errors.find(scope) if errors is not None else None
        if node is None:
            return None
        if node.find(f"{kind}_bit") is not None:  # older drivers: single_bit / double_bit with a total
            return integer(node.findtext(f"{'single' if kind == 'single' else 'double'}_bit/total"))
        names = (("sram_correctable", "dram_correctable") if kind == "single" else
                 ("sram_uncorrectable_parity", "sram_uncorrectable_secded", "sram_uncorrectable", "dram_uncorrectable"))
        found = [integer(node.findtext(n)) for n in names if node.find(n) is not None]
        found = [f for f in found if f is not None]
        return sum(found) if found else None

    return {
        "mode": _t(gpu, "ecc_mode/current_ecc"),
        "volatile_correctable": total("volatile", "single"),
        "volatile_uncorrectable": total("volatile", "double"),
        "aggregate_correctable": total("aggregate", "single"),
        "aggregate_uncorrectable": total("aggregate", "double"),
        "sram_threshold_exceeded": flag(_t(gpu, "ecc_errors/aggregate/sram_threshold_exceeded")),
        "unrepairable_memory": flag(_t(gpu, "ecc_errors/unrepairable_memory")),
    }


def _throttle(gpu: ET.Element) -> list[str]:
    """Active clock event reasons (clocks_event_reasons in R535+, clocks_throttle_reasons before)."""
    active = []
    for parent in ("clocks_event_reasons", "clocks_throttle_reasons"):
        node = gpu.find(parent)
        if node is None:
            continue
        for child in node:
            name = re.sub(r"^clocks_(event|throttle)_reason_", "", child.tag)
            if flag(child.text):
                active.append(name)
    return active


def parse_smi_health(text: str) -> dict[str, Any]:
    """`nvidia-smi -q -x` -> driver, CUDA and per-GPU health."""
    root = ET.fromstring(text)
    gpus = []
    for index, gpu in enumerate(root.findall("gpu")):
        power = gpu.find("gpu_power_readings")
        if power is None:
            power = gpu.find("power_readings")
        gpus.append({
            "index": index,
            "bus_id": bdf(gpu.get("id")),
            "name": _t(gpu, "product_name"),
            "uuid": _t(gpu, "uuid"),
            "pci_device_id": gpu_probe.pci_device_id(_t(gpu, "pci/pci_device_id")),
            "memory_mib": integer(_t(gpu, "fb_memory_usage/total")),
            "persistence": flag(_t(gpu, "persistence_mode")),
            "performance_state": _t(gpu, "performance_state"),
            "pcie": {
                "max_gen": integer(_t(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
                "current_gen": integer(_t(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
                "device_max_gen": integer(_t(gpu, "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen")),
                "max_width": integer(_t(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")),
                "current_width": integer(_t(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width")),
                "replays": integer(_t(gpu, "pci/replay_counter")),
            },
            "ecc": _ecc(gpu),
            "retired": {
                "single": integer(_t(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
                "double": integer(_t(gpu, "retired_pages/double_bit_retirement/retired_count")),
                "pending": flag(_t(gpu, "retired_pages/pending_retirement")),
            },
            "remap": {
                "correctable": integer(_t(gpu, "remapped_rows/remapped_row_corr")),
                "uncorrectable": integer(_t(gpu, "remapped_rows/remapped_row_unc")),
                "pending": flag(_t(gpu, "remapped_rows/remapped_row_pending")),
                "failure": flag(_t(gpu, "remapped_rows/remapped_row_failure")),
            },
            "power": {
                "limit_w": number(_t(power, "current_power_limit") or _t(power, "power_limit")),
                "default_limit_w": number(_t(power, "default_power_limit")),
                "max_limit_w": number(_t(power, "max_power_limit")),
                "draw_w": number(_t(power, "average_power_draw") or _t(power, "power_draw")),
            },
            "clocks": {
                "sm_mhz": number(_t(gpu, "clocks/sm_clock")),
                "max_sm_mhz": number(_t(gpu, "max_clocks/sm_clock")),
                "app_sm_mhz": number(_t(gpu, "applications_clocks/graphics_clock")),
                "default_app_sm_mhz": number(_t(gpu, "default_applications_clocks/graphics_clock")),
            },
            "throttle": _throttle(gpu),
            "fabric_state": _t(gpu, "fabric/state"),
            "processes": [{"pid": integer(p.findtext("pid")), "name": value(p.findtext("process_name")),
                           "used_mib": integer(p.findtext("used_memory"))}
                          for p in gpu.findall("processes/process_info")],
        })
    return {"driver_version": value(root.findtext("driver_version")),
            "cuda_version": value(root.findtext("cuda_version")), "gpus": gpus}


def parse_nvlink_status(text: str) -> list[dict[str, Any]]:
    """`nvidia-smi nvlink -s` -> per GPU {index, name, links: {n: GB/s or None when inactive}}."""
    gpus: list[dict[str, Any]] = []
    for line in text.splitlines():
        head = _GPU_HEAD.match(line.strip())
        if head:
            gpus.append({"index": int(head.group(1)), "name": head.group(2), "links": {}})
            continue
        link = _LINK.match(line)
        if link and gpus:
            gpus[-1]["links"][int(link.group(1))] = number(link.group(2))  # '<inactive>' -> None
    return gpus


def parse_xid_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Kernel log lines -> Xid events {pci, xid, pid, text}."""
    events = []
    for line in lines:
        match = _XID.search(line)
        if match:
            events.append({"pci": match.group("pci").lower(), "xid": int(match.group("xid")),
                           "pid": (match.group("pid") or "").strip("'") or None, "text": match.group("text").strip(),
                           "line": line.strip()})
    return events


def xid_table(data_dir: Path = DATA_DIR) -> dict[str, dict[int, dict[str, str]]]:
    doc = read_yaml(data_dir / "xid.yml")
    return {kind: {int(k): v for k, v in (doc.get(kind) or {}).items()} for kind in ("refuse", "warn")}


# ---------------------------------------------------------------------------------------------- AMD


def _amd(text: str | None) -> list[dict[str, Any]]:
    if not text or not text.strip():
        return []
    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("gpu_data") or data.get("gpus") or [data]
    return [d for d in data if isinstance(d, dict)]


def _amd_count(raw: Any) -> int | None:
    if isinstance(raw, dict):
        raw = raw.get("value")
    return integer(raw) if not isinstance(raw, int) else raw


def parse_amd_health(commands: dict[str, Any]) -> dict[str, Any]:
    """amd-smi static/metric/topology/bad-pages/process --json -> per-GPU health, by GPU index."""
    out = {"gpus": []}
    metric = {d.get("gpu"): d for d in _amd(_stdout(commands, "amd_metric"))}
    topo = {d.get("gpu"): d for d in _amd(_stdout(commands, "amd_topology"))}
    bad = {d.get("gpu"): d for d in _amd(_stdout(commands, "amd_bad_pages"))}
    procs = {d.get("gpu"): d for d in _amd(_stdout(commands, "amd_process"))}
    for i, static in enumerate(_amd(_stdout(commands, "amd_static"))):
        index = static.get("gpu", i)
        bus, asic = static.get("bus") or {}, static.get("asic") or {}
        m = metric.get(index) or {}
        pcie, ecc = m.get("pcie") or {}, m.get("ecc") or {}
        links = (topo.get(index) or {}).get("links") or []
        xgmi = [lk for lk in links if lk.get("link_type") == "XGMI"]
        retired = (bad.get(index) or {}).get("retired")
        pending = (bad.get(index) or {}).get("pending")
        plist = (procs.get(index) or {}).get("process_list") or []
        out["gpus"].append({
            "index": index,
            "bus_id": bdf(bus.get("bdf")),
            "name": asic.get("market_name"),
            "pci_device_id": (asic.get("device_id") or "").lower() or None,
            "pcie": {"max_gen": pcie_gen(bus.get("max_pcie_speed")), "max_width": _amd_count(bus.get("max_pcie_width")),
                     "current_gen": pcie_gen(pcie.get("speed")), "current_width": _amd_count(pcie.get("width")),
                     "replays": _amd_count(pcie.get("replay_count"))},
            "ecc": {"volatile_uncorrectable": _amd_count(ecc.get("total_uncorrectable_count")),
                    "volatile_correctable": _amd_count(ecc.get("total_correctable_count")),
                    "deferred": _amd_count(ecc.get("total_deferred_count"))},
            "retired_pages": len(retired) if isinstance(retired, list) else (1 if isinstance(retired, dict) else 0),
            "pending_pages": len(pending) if isinstance(pending, list) else (1 if isinstance(pending, dict) else 0),
            "xgmi_links": {"peers": len(xgmi),
                           "enabled": sum(1 for lk in xgmi if lk.get("link_status", "ENABLED") == "ENABLED")},
            "processes": [_amd_process(p.get("process_info", p)) for p in plist
                          if isinstance(p, dict) and isinstance(p.get("process_info", p), dict)],
        })
    return out


_BYTES = {"B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KIB": 1024, "MIB": MIB, "GIB": 2**30}


def _amd_mib(raw: Any) -> int | None:
    """amd-smi sizes: {"value": N, "unit": "B"} (JSON), a bare number of bytes, or "N B" -> MiB."""
    if isinstance(raw, dict):
        size, unit = number(raw.get("value")), str(raw.get("unit") or "B")
    else:
        text = value(raw) or ""
        size, unit = number(text), (text.split()[1] if len(text.split()) > 1 else "B")
    scale = _BYTES.get(unit.upper())
    return int(size * scale // MIB) if size is not None and scale else None


def _amd_process(info: dict[str, Any]) -> dict[str, Any]:
    """amd-smi process --json's process_info {name, pid, mem_usage, memory_usage{vram_mem, gtt_mem, cpu_mem}}
    -> {pid, name, used_mib} as nvidia-smi's are (VRAM, else the process's total)."""
    vram = (info.get("memory_usage") or {}).get("vram_mem") if isinstance(info.get("memory_usage"), dict) else None
    used = _amd_mib(vram) if vram is not None else _amd_mib(info.get("mem_usage", info.get("mem")))
    return {"pid": integer(info.get("pid")), "name": value(info.get("name")), "used_mib": used}


# ---------------------------------------------------------------------------------------------- node


def _stdout(commands: dict[str, Any], name: str) -> str:
    entry = commands.get(name) or {}
    return str(entry.get("stdout") or "") if entry.get("rc") == 0 else ""


def health(node: dict[str, Any] | None) -> dict[str, Any]:
    """Everything accept_node.py brought back, parsed: vendor, GPUs with their health, links, Xids."""
    node = node or {}
    commands = node.get("commands") or {}
    pci = node.get("pci") or []
    out: dict[str, Any] = {"vendor": "none", "driver_version": None, "gpus": [], "nvlink": [], "topology": None,
                           "pci": pci, "xids": [], "kernel_log": node.get("kernel_log") or {}, "tool_errors": []}
    for name, entry in sorted(commands.items()):
        if entry.get("rc") not in (0, None):
            out["tool_errors"].append(f"{' '.join(entry.get('argv') or [name])}: rc={entry.get('rc')} "
                                      f"{str(entry.get('stderr') or entry.get('stdout') or '').strip()[:200]}")
    xml = _stdout(commands, "nvidia_smi_xml")
    if xml.strip():
        parsed = parse_smi_health(xml)
        if parsed["gpus"]:
            out.update(vendor="nvidia", driver_version=parsed["driver_version"], gpus=parsed["gpus"])
            out["nvlink"] = parse_nvlink_status(_stdout(commands, "nvidia_nvlink"))
            topo = _stdout(commands, "nvidia_topo")
            out["topology"] = gpu_probe.nvlink_summary(gpu_probe.parse_topology(topo)) if topo else None
    if not out["gpus"] and _stdout(commands, "amd_static").strip():
        parsed = parse_amd_health(commands)
        if parsed["gpus"]:
            out.update(vendor="amd", gpus=parsed["gpus"])
    out["xids"] = parse_xid_lines(list((node.get("kernel_log") or {}).get("lines") or []))
    return out


_DOCKER_ID = re.compile(r"(?:^|/)docker[-/]([0-9a-f]{64})(?:\.scope)?(?:/|$)")
_UNIT = re.compile(r"\.(service|scope)$")


def cgroup_path(text: str | None) -> str | None:
    """/proc/<pid>/cgroup -> the process's cgroup: the unified (v2) line '0::/system.slice/x.service'; on v1 and
    hybrid hosts, where that line is '/' or missing, the hierarchy systemd keeps ('1:name=systemd:/...'), else the
    first path given."""
    lines = [tuple(ln.split(":", 2)) for ln in (text or "").splitlines() if ln.count(":") >= 2]
    unified = next((path for hier, ctrl, path in lines if hier == "0" and not ctrl), None)
    if unified and unified != "/":
        return unified
    systemd = next((path for _h, ctrl, path in lines if ctrl == "name=systemd" and path), None)
    named = next((path for _h, _c, path in lines if path and path != "/"), None)
    return systemd if systemd and systemd != "/" else (named or unified or systemd)


def docker_names(text: str) -> dict[str, str]:
    """`docker ps --no-trunc --format '{{.ID}} {{.Names}}'` -> {full container id: name}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out[parts[0]] = parts[1].split(",")[0]
    return out


def cgroup_owner(path: str | None, containers: dict[str, str]) -> dict[str, Any]:
    """A cgroup path -> the systemd unit it is (the innermost *.service / *.scope) and, for docker's
    docker-<id>.scope or /docker/<id>, the container id and its name (None when docker did not say)."""
    if not path:
        return {"unit": None, "container_id": None, "container": None}
    docker = _DOCKER_ID.search(path)
    units = [part for part in path.split("/") if _UNIT.search(part)]
    cid = docker.group(1) if docker else None
    return {"unit": units[-1] if units and not cid else None, "container_id": cid,
            "container": containers.get(cid) if cid else None}


def serving_unit(plan: dict[str, Any] | None) -> dict[str, Any] | None:
    """What of this host may hold its GPUs: the plan's serving unit. uv installs: the processes of
    /system.slice/<unit> (systemd's cgroup of the unit); docker installs: those of the container sglang-<instance>
    (the unit only runs the docker client). None for a host that serves nothing in the plan. A host with several
    replicas (sglang_replicas) has one per replica: `any` lists them, and the label names them all."""
    plan = plan or {}
    if plan.get("role") != "server" or not plan.get("unit"):
        return None
    if plan.get("replicas"):
        units = [serving_unit({k: v for k, v in r.items() if k != "replicas"}) for r in plan["replicas"]]
        return {"method": units[0]["method"], "unit": None, "container": None, "cgroup": None,
                "any": units, "label": ", ".join(u["label"] for u in units)}
    method = str((plan.get("install") or {}).get("method") or "docker")
    if method == "docker":
        name = node.container_name(str(plan["instance"]))
        return {"method": method, "unit": plan["unit"], "container": name, "cgroup": None,
                "label": f"{plan['unit']}'s container {name}"}
    return {"method": method, "unit": plan["unit"], "container": None, "cgroup": f"/system.slice/{plan['unit']}",
            "label": f"{plan['unit']} (cgroup /system.slice/{plan['unit']})"}


def is_serving(proc: dict[str, Any], serving: dict[str, Any] | None) -> bool:
    if not serving:
        return False
    if serving.get("any"):
        return any(is_serving(proc, one) for one in serving["any"])
    if serving["container"]:
        return proc.get("container") == serving["container"]
    path = proc.get("cgroup") or ""
    return path == serving["cgroup"] or path.startswith(serving["cgroup"] + "/")


def gpu_processes(node: dict[str, Any] | None, parsed: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every process nvidia-smi / amd-smi list on the node's GPUs, one entry per pid with the GPUs it holds and
    what the node said about it (accept_node.py's processes: cgroup, comm, user, masked cmdline)."""
    node = node or {}
    parsed = parsed or health(node)
    details = node.get("processes") or {}
    containers = docker_names(_stdout(node.get("commands") or {}, "docker_ps"))
    by_pid: dict[str, dict[str, Any]] = {}
    for gpu in parsed["gpus"]:
        for proc in gpu.get("processes") or []:
            pid = proc.get("pid")
            key = str(pid) if pid is not None else f"?{proc.get('name')}"
            entry = by_pid.get(key)
            if entry is None:
                seen = details.get(str(pid)) or {}
                path = cgroup_path(seen.get("cgroup"))
                entry = by_pid[key] = {
                    "pid": pid, "name": proc.get("name") or seen.get("comm"), "gpus": [], "cgroup": path,
                    **cgroup_owner(path, containers), "user": seen.get("user") or seen.get("uid"),
                    "cmdline": seen.get("cmdline"), "seen_in_proc": bool(seen.get("cgroup"))}
            entry["gpus"].append({"index": gpu["index"], "bus_id": gpu.get("bus_id"), "used_mib": proc.get("used_mib"),
                                  "memory_mib": gpu.get("memory_mib")})
    return sorted(by_pid.values(), key=lambda p: (p["pid"] is None, p["pid"] or 0))


def _mib(x: int | None) -> str:
    return "? MiB" if x is None else f"{x} MiB"


def describe_process(proc: dict[str, Any]) -> str:
    """'pid 4242 (python3, user root, cgroup /user.slice/...) holds 102400 MiB of 143771 MiB on GPU 0 (bus),
    command: python3 hog.py' - every fact the node gave, none it did not."""
    about = [proc.get("name") or "name unknown"]
    if proc.get("user"):
        about.append(f"user {proc['user']}")
    if proc.get("container"):
        about.append(f"container {proc['container']}")
    elif proc.get("container_id"):
        about.append(f"docker container {proc['container_id'][:12]}")
    if proc.get("unit") and not proc.get("container_id"):
        about.append(f"unit {proc['unit']}")
    if proc.get("cgroup"):
        about.append(f"cgroup {proc['cgroup']}")
    elif not proc.get("seen_in_proc"):
        about.append("not found in /proc (another PID namespace, or it exited)")  # one-owner: prose
    held = "; ".join(f"{_mib(g['used_mib'])}" + (f" of {_mib(g['memory_mib'])}" if g.get("memory_mib") else "")
                     + f" on GPU {g['index']}" + (f" ({g['bus_id']})" if g.get("bus_id") else "") for g in proc["gpus"])
    pid = proc["pid"] if proc["pid"] is not None else "?"
    command = " ".join(proc.get("cmdline") or [])
    return f"pid {pid} ({', '.join(about)}) holds {held}" + (f", command: {command}" if command else "")


def stop_hint(proc: dict[str, Any]) -> str:
    """How an operator frees the GPUs from one process, by what owns it."""
    if proc.get("container") or proc.get("container_id"):
        return f"docker stop {proc.get('container') or proc['container_id'][:12]}"
    unit = proc.get("unit") or ""
    if unit.endswith(".service") and (proc.get("cgroup") or "").startswith("/system.slice/"):
        return f"systemctl stop {unit} (and disable it if it must not come back)"
    return f"kill {proc['pid']}" if proc.get("pid") is not None else "find it with nvidia-smi / amd-smi process"


def node_summary(node: dict[str, Any] | None, plan: dict[str, Any] | None = None,
                 skip_busy: bool = True) -> dict[str, Any]:
    """What the role needs before it measures: GPU count, who holds the GPUs (this host's serving unit or not),
    and why the measurement is skipped ('' when it runs). Foreign processes skip it too; judge_host refuses them."""
    parsed = health(node)
    serving = serving_unit(plan)
    procs = gpu_processes(node, parsed)
    own = [p for p in procs if is_serving(p, serving)]
    foreign = [p for p in procs if not is_serving(p, serving)]

    def pids(group: list[dict[str, Any]]) -> str:
        return ", ".join(f"{p['pid']} ({p.get('name') or '?'})" for p in group)
    if not parsed["gpus"]:
        skip = "no GPU answered nvidia-smi/amd-smi"
    elif foreign:
        skip = f"GPU memory held by process(es) other than this host's serving unit: {pids(foreign)} (refused)"
    elif own and skip_busy and serving:
        skip = f"GPUs in use by this host's serving unit {serving['label']}: pid(s) {pids(own)} (node_acceptance_skip_busy)"
    else:
        skip = ""
    return {"vendor": parsed["vendor"], "gpus": len(parsed["gpus"]), "pci_gpus": len(parsed["pci"]),
            "own": [describe_process(p) for p in own], "foreign": [describe_process(p) for p in foreign], "skip": skip}


# ---------------------------------------------------------------------------------------------- bench


_ERROR_LINE = re.compile(r"(Error|error:|Last error|no socket interface|timed out|Timeout|refused|NCCL WARN|"
                         r"not importable|no GPU visible|outlasted|unhandled|failed)", re.I)
_NOISE = re.compile(r"destroy_process_group\(\) was not called|^\s*(File |\^|~|frame #)|Traceback|^Exception raised from")


def error_summary(text: str, limit: int = 3) -> str:
    """The informative lines of a worker's failure (the NCCL / torch error, not the traceback or C++ frames)."""
    lines: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip(". ").strip()
        if not line or _NOISE.search(line):
            continue
        if lines and lines[-1].endswith(":") and lines[-1].lower().startswith("last error"):
            lines[-1] = f"{lines[-1]} {line}"  # NCCL prints "Last error:" and the reason on the next line
        else:
            lines.append(line)
    picked = [ln for ln in lines if _ERROR_LINE.search(ln)]
    picked = picked[-limit:] if picked else lines[-1:]
    return " | ".join(ln[:240].rstrip(".") for ln in picked)


def bench_summary(bench: dict[str, Any] | None) -> dict[str, Any]:
    bench = bench or {}
    rows = [r for r in bench.get("allreduce") or [] if "busbw_gb_s" in r]
    best = max(rows, key=lambda r: r["busbw_gb_s"], default=None)
    memory = bench.get("memory") or []
    return {
        "ran": bool(bench),
        "errors": [error_summary(e) for e in bench.get("errors") or []],
        "world_size": bench.get("world_size"),
        "gpus": bench.get("gpus_per_node"),
        "nccl": bench.get("nccl"), "torch": bench.get("torch"),
        "rows": bench.get("allreduce") or [],
        "busbw_peak_gb_s": best["busbw_gb_s"] if best else None,
        "busbw_peak_size_mib": best["size_mib"] if best else None,
        "largest_size_mib": max((r["size_mib"] for r in rows), default=None),
        "incorrect_sizes": [r["size_mib"] for r in rows if r.get("correct") is False],
        "memory_min_copy_gb_s": min((m["copy_gb_s"] for m in memory), default=None),
        "memory_mismatches": sum(int(m.get("mismatches") or 0) for m in memory),
        "memory_gpus": len(memory),
        "memory_bytes": min((m["bytes"] for m in memory), default=None),
        "pcie_under_load": bench.get("pcie_under_load") or [],
        "env": bench.get("env") or {},
    }


# ---------------------------------------------------------------------------------------------- judgement


@dataclass
class Limits:
    """What one host is held to: the platform's data (data/gpus.yml acceptance) with role overrides."""
    platform: str | None = None
    link_name: str | None = None
    links: int | None = None
    link_gb_s: float | None = None
    allreduce_link_gb_s: float | None = None
    allreduce_min_fraction: float | None = None
    memory_gb_s: float | None = None
    memory_min_fraction: float | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    fabric_min_fraction: float | None = None
    expected_gpus: int | None = None
    xid_ignore: tuple[int, ...] = ()
    require_persistence: bool = False

    @classmethod
    def of(cls, platform_id: str | None, platforms: dict[str, Any], overrides: dict[str, Any]) -> Limits:
        base = dict((platforms.get(platform_id or "") or {}).get("acceptance") or {})
        keys = {f for f in cls.__dataclass_fields__ if f not in ("platform", "xid_ignore", "require_persistence")}
        merged = {k: base.get(k) for k in keys}
        for key, val in overrides.items():
            if key in keys and val not in (None, "", 0):
                merged[key] = val
        return cls(platform=platform_id, xid_ignore=tuple(int(x) for x in overrides.get("xid_ignore") or ()),
                   require_persistence=bool(overrides.get("require_persistence", False)), **merged)


@dataclass
class Problem:
    check: str
    what: str
    fix: str

    def text(self) -> str:
        return f"{self.what}. Check: {self.fix}"


@dataclass
class HostReport:
    host: str
    limits: Limits
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    row: dict[str, Any] = field(default_factory=dict)

    def refuse(self, check: str, what: str, fix: str) -> None:
        self.problems.append(Problem(check, what, fix))

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "ok": self.ok, "problems": [p.text() for p in self.problems],
                "checks_failed": sorted({p.check for p in self.problems}), "warnings": self.warnings,
                "limits": dict(self.limits.__dict__), "summary": self.row}


def _gb(x: float | None) -> str:
    return "?" if x is None else f"{x:.1f} GB/s"


def _size(mib: int | None) -> str:
    if mib is None:
        return "?"
    return f"{mib // 1024} GiB" if mib >= 1024 and mib % 1024 == 0 else f"{mib} MiB"


def detect_platform(parsed: dict[str, Any], platforms: dict[str, Any], planned: str | None) -> str | None:
    ids = {gpu_probe.classify(dict(g), platforms) for g in parsed["gpus"]}
    ids.discard("unknown")
    if len(ids) == 1:
        return ids.pop()
    return planned or None


def _check_gpus(report: HostReport, parsed: dict[str, Any]) -> bool:
    lim = report.limits
    gpus, pci = parsed["gpus"], parsed["pci"]
    if not gpus and not pci:
        report.refuse("gpus", "no GPU: nvidia-smi and amd-smi answered with no GPU and the PCI bus shows none",
                      "that the node has GPUs and their driver is loaded (nvidia-smi -L / amd-smi list); "
                      "a node without GPUs takes sglang_role: router or none")
        return False
    if not gpus:
        report.refuse("gpus", f"no GPU answers its vendor tool: {len(pci)} GPU(s) on the PCI bus "
                      f"({', '.join(str(p.get('bdf')) for p in pci)}) but nvidia-smi/amd-smi list none"
                      + (f" ({'; '.join(parsed['tool_errors'])[:300]})" if parsed["tool_errors"] else ""),
                      "the driver (lsmod | grep -E 'nvidia|amdgpu', dmesg), then run the drivers stage")
        return False
    if len(pci) > len(gpus):
        seen = {g["bus_id"] for g in gpus}
        missing = [p.get("bdf") for p in pci if bdf(p.get("bdf")) not in seen]
        report.refuse("gpus", f"GPU count: {len(pci)} GPUs on the PCI bus, {len(gpus)} answer "
                      f"{parsed['vendor']}-smi (missing: {', '.join(map(str, missing))})",
                      "the kernel log for Xid 79 (fallen off the bus), reseat or power-cycle; nvidia-smi -q -d PAGE_RETIREMENT")
    if lim.expected_gpus and len(gpus) < lim.expected_gpus:
        report.refuse("gpus", f"GPU count: measured {len(gpus)}, expected {lim.expected_gpus}",
                      "nvidia-smi -L / amd-smi list against the node's build sheet")
    names = sorted({g.get("name") or "?" for g in gpus})
    if len(names) > 1:
        report.refuse("gpus", f"mixed GPU models on one node: {', '.join(names)}", "the node's build sheet")
    return True


def _check_processes(report: HostReport, node: dict[str, Any] | None, parsed: dict[str, Any],
                     plan: dict[str, Any] | None) -> None:
    """Anything but this host's serving unit holding GPU memory refuses the node: the measurement cannot be
    trusted and SGLang would start on the memory left over (or fail to)."""
    serving = serving_unit(plan)
    mine = (f"only this host's serving unit, {serving['label']}, may hold its GPUs" if serving else
            "this host serves nothing in the site plan, so nothing may hold its GPUs")
    for proc in gpu_processes(node, parsed):
        if is_serving(proc, serving):
            continue
        report.refuse("processes", f"GPU memory held by something other than this host's serving unit: "
                      f"{describe_process(proc)}",
                      f"{stop_hint(proc)}, or move that work off this node: {mine}. Then run "
                      f"playbooks/accept.yml --limit {report.host} again")


def _check_pcie(report: HostReport, parsed: dict[str, Any], bench: dict[str, Any]) -> None:
    lim = report.limits
    loaded = {bdf(p.get("bdf")): p for p in bench.get("pcie_under_load") or []}
    sysfs = {bdf(p.get("bdf")): p for p in parsed["pci"]}
    for gpu in parsed["gpus"]:
        link = gpu["pcie"]
        where = f"GPU {gpu['index']} ({gpu.get('bus_id')})"
        width, max_width = link.get("current_width"), link.get("max_width")
        sys_entry = sysfs.get(gpu.get("bus_id")) or {}
        if width is None:
            width = integer(sys_entry.get("current_link_width"))
        if max_width is None:
            max_width = integer(sys_entry.get("max_link_width"))
        if width is not None and max_width is not None and width < max_width:
            report.refuse("pcie", f"{where} PCIe link width: measured x{width}, expected x{max_width} (its maximum)",
                          "the riser/cable and slot of that GPU (lspci -vv: LnkSta), reseat it")
        elif width is not None and lim.pcie_width and width < lim.pcie_width:
            report.refuse("pcie", f"{where} PCIe link width: measured x{width}, expected x{lim.pcie_width}",
                          "the slot the GPU sits in and the BIOS bifurcation settings")
        max_gen = link.get("max_gen") or pcie_gen(sys_entry.get("max_link_speed"))
        if max_gen is not None and lim.pcie_gen and max_gen < lim.pcie_gen:
            report.refuse("pcie", f"{where} PCIe generation: at most Gen{max_gen} on this link, expected Gen{lim.pcie_gen}",
                          "the BIOS PCIe speed setting of that slot and any retimer/riser in between")
        busy = loaded.get(gpu.get("bus_id"))
        busy_gen = pcie_gen(busy.get("current_link_speed")) if busy else None
        if busy_gen is not None and max_gen is not None and busy_gen < max_gen:
            report.refuse("pcie", f"{where} PCIe link under load: Gen{busy_gen}, expected Gen{max_gen} (its maximum)",
                          "link training errors (lspci -vv, dmesg 'pcieport'), the riser and the slot")


def _check_memory_health(report: HostReport, parsed: dict[str, Any]) -> None:
    for gpu in parsed["gpus"]:
        where = f"GPU {gpu['index']} ({gpu.get('bus_id')})"
        ecc = gpu.get("ecc") or {}
        if parsed["vendor"] == "nvidia" and (ecc.get("mode") or "").lower() == "disabled":
            report.refuse("ecc", f"{where} ECC is disabled", "nvidia-smi -e 1 and reset the GPU (ECC is on by default "
                          "on data-centre GPUs)")
        if (ecc.get("volatile_uncorrectable") or 0) > 0:
            report.refuse("ecc", f"{where} uncorrectable ECC errors since the driver loaded: measured "
                          f"{ecc['volatile_uncorrectable']}, expected 0", "nvidia-smi -q -d ECC,ROW_REMAPPER; reset the "
                          "GPU, service it if they return")
        if (ecc.get("aggregate_uncorrectable") or 0) > 0:
            report.warnings.append(f"{where}: {ecc['aggregate_uncorrectable']} uncorrectable ECC errors over the GPU's "
                                   "life (aggregate)")
        if ecc.get("sram_threshold_exceeded") or ecc.get("unrepairable_memory"):
            report.refuse("ecc", f"{where} memory past repair (SRAM threshold exceeded or unrepairable memory)",
                          "nvidia-smi -q -d ECC: the GPU needs service")
        remap = gpu.get("remap") or {}
        if remap.get("failure"):
            report.refuse("ecc", f"{where} row remapping failed", "nvidia-smi -q -d ROW_REMAPPER: the GPU needs service")
        if remap.get("pending"):
            report.refuse("ecc", f"{where} a row remap is pending", "reset the GPU (nvidia-smi -r) or reboot the node "
                          "so the remap takes effect")
        if (remap.get("uncorrectable") or 0) > 0:
            report.warnings.append(f"{where}: {remap['uncorrectable']} row(s) remapped after uncorrectable errors")
        retired = gpu.get("retired") or {}
        if retired.get("pending"):
            report.refuse("ecc", f"{where} a page retirement is pending", "reset the GPU or reboot the node")
        if gpu.get("pending_pages"):
            report.refuse("ecc", f"{where} {gpu['pending_pages']} bad page(s) pending retirement",
                          "amd-smi bad-pages; reset the GPU (reboot the node)")
        if (gpu.get("retired_pages") or 0) > 0:
            report.warnings.append(f"{where}: {gpu['retired_pages']} retired page(s) (amd-smi bad-pages)")


def _check_power(report: HostReport, parsed: dict[str, Any]) -> None:
    for gpu in parsed["gpus"]:
        where = f"GPU {gpu['index']} ({gpu.get('bus_id')})"
        if gpu.get("persistence") is False:
            text = f"{where}: persistence mode is off (nvidia-persistenced keeps the driver loaded between jobs)"
            if report.limits.require_persistence:
                report.refuse("power", text, "systemctl enable --now nvidia-persistenced")
            else:
                report.warnings.append(text)
        hw = [t for t in gpu.get("throttle") or [] if t in HW_THROTTLE]
        if hw:
            report.refuse("power", f"{where} clocks held down by {', '.join(hw)}", "cooling, power supply and "
                          "nvidia-smi -q -d PERFORMANCE (clock event reasons)")
        power = gpu.get("power") or {}
        if power.get("limit_w") and power.get("default_limit_w") and power["limit_w"] < power["default_limit_w"]:
            report.warnings.append(f"{where}: power limit {power['limit_w']:.0f} W below the default "
                                   f"{power['default_limit_w']:.0f} W (nvidia-smi -pl)")
        clocks = gpu.get("clocks") or {}
        if clocks.get("app_sm_mhz") and clocks.get("default_app_sm_mhz") and \
                clocks["app_sm_mhz"] < clocks["default_app_sm_mhz"]:
            report.warnings.append(f"{where}: application clocks {clocks['app_sm_mhz']:.0f} MHz below the default "
                                   f"{clocks['default_app_sm_mhz']:.0f} MHz (nvidia-smi -rac resets them)")


def _check_links(report: HostReport, parsed: dict[str, Any]) -> None:
    lim = report.limits
    gpus = parsed["gpus"]
    if len(gpus) < 2 or not lim.links:
        return
    if parsed["vendor"] == "nvidia":
        statuses = {s["index"]: s for s in parsed["nvlink"]}
        for gpu in gpus:
            links = (statuses.get(gpu["index"]) or {}).get("links") or {}
            up = {n: s for n, s in links.items() if s}
            slow = {n: s for n, s in up.items() if lim.link_gb_s and s < lim.link_gb_s}
            if len(up) < lim.links:
                down = sorted(n for n in links if not links[n])
                report.refuse("links", f"GPU {gpu['index']} {lim.link_name or 'NVLink'}: measured {len(up)} active links, "
                              f"expected {lim.links}" + (f" (inactive: {', '.join(map(str, down))})" if down else ""),
                              "nvidia-smi nvlink -s / -e, Fabric Manager (systemctl status nvidia-fabricmanager), "
                              "reseat the baseboard or service the GPU")
            if slow:
                report.refuse("links", f"GPU {gpu['index']} {lim.link_name or 'NVLink'} links "
                              f"{', '.join(map(str, sorted(slow)))} below {lim.link_gb_s} GB/s", "nvidia-smi nvlink -s")
        topo = parsed.get("topology") or {}
        if topo and topo.get("pairs") and not topo.get("all_pairs_connected"):
            report.refuse("links", f"GPU pairs without NVLink in nvidia-smi topo -m: "
                          f"{', '.join(k + '=' + v for k, v in sorted((topo.get('links') or {}).items()) if not str(v).startswith('NV'))}",
                          "nvidia-smi topo -m, Fabric Manager")
    else:
        for gpu in gpus:
            xgmi = gpu.get("xgmi_links") or {}
            want = min(lim.links, len(gpus) - 1)
            if xgmi.get("enabled", 0) < want:
                report.refuse("links", f"GPU {gpu['index']} {lim.link_name or 'xGMI'}: measured {xgmi.get('enabled', 0)} "
                              f"enabled links to peers, expected {want}", "amd-smi topology / amd-smi xgmi")


def _check_xids(report: HostReport, parsed: dict[str, Any], table: dict[str, dict[int, dict[str, str]]]) -> None:
    klog = parsed.get("kernel_log") or {}
    if klog.get("error") and not klog.get("source"):
        report.warnings.append(f"kernel log unreadable, Xid events not checked ({klog['error'][:200]})")
    seen: dict[int, list[dict[str, Any]]] = {}
    for event in parsed["xids"]:
        if event["xid"] in report.limits.xid_ignore:
            continue
        seen.setdefault(event["xid"], []).append(event)
    for xid, events in sorted(seen.items()):
        where = ", ".join(sorted({e["pci"] for e in events}))
        last = events[-1]["text"][:160]
        if xid in table["refuse"]:
            entry = table["refuse"][xid]
            report.refuse("xid", f"Xid {xid} ({entry['name']}) {len(events)}x since boot on {where}: {last}",
                          entry["check"] + "; node_acceptance_xid_ignore accepts it once looked at")
        else:
            entry = table["warn"].get(xid, {"name": "?", "check": "see NVIDIA's Xid catalog"})
            report.warnings.append(f"Xid {xid} ({entry['name']}) {len(events)}x since boot on {where}: {entry['check']}")


def _check_bench(report: HostReport, parsed: dict[str, Any], bench: dict[str, Any], skipped: str | None,
                 gpus: int) -> None:
    lim = report.limits
    if skipped:
        report.warnings.append(f"not measured: {skipped}")
        return
    if not bench["ran"]:
        report.refuse("bench", "the measurement did not run", "the role's output for this host")
        return
    for error in bench["errors"]:
        report.refuse("bench", f"the measurement failed: {error}", "that SGLang's Python (node_acceptance_python) "
                      "imports torch and sees the GPUs; the NCCL variables of the serving environment")
    if bench["memory_mismatches"]:
        report.refuse("memory", f"GPU memory pattern test: {bench['memory_mismatches']} mismatching words",
                      "nvidia-smi -q -d ECC,ROW_REMAPPER; reset the GPU, service it if it repeats")
    copy, spec = bench["memory_min_copy_gb_s"], lim.memory_gb_s
    if copy is not None and spec and lim.memory_min_fraction and copy < lim.memory_min_fraction * spec:
        report.refuse("memory", f"GPU memory copy bandwidth (read + write, slowest GPU): measured {_gb(copy)}, "
                      f"expected at least {_gb(lim.memory_min_fraction * spec)} ({lim.memory_min_fraction:g} x "
                      f"{spec:g} GB/s HBM; node_acceptance_memory_min_fraction)", "clocks and throttling (nvidia-smi -q -d PERFORMANCE,CLOCK), power limits")
    measured = int(bench["world_size"] or 0)
    if 0 < measured < gpus and not bench["errors"]:
        report.warnings.append(f"the measurement saw {measured} of the node's {gpus} GPUs (CUDA_VISIBLE_DEVICES / "
                               "HIP_VISIBLE_DEVICES in the serving environment?); all-reduce judged over those")
        gpus = measured
    if gpus < 2:
        return
    if bench["incorrect_sizes"]:
        report.refuse("allreduce", f"all-reduce returned wrong sums at {', '.join(map(_size, bench['incorrect_sizes']))}",
                      "the GPUs' memory and links: a wrong sum is data corruption")
    peak, ceiling = bench["busbw_peak_gb_s"], lim.allreduce_link_gb_s
    if peak is None:
        if not bench["errors"]:
            report.refuse("allreduce", "no all-reduce figure came back", "the probe's output")
        return
    if not ceiling or not lim.allreduce_min_fraction:
        report.warnings.append(f"all-reduce busbw {_gb(peak)} reported, not judged: no link bandwidth/fraction for "
                               f"platform {lim.platform or '?'}")
        return
    floor = lim.allreduce_min_fraction * ceiling
    if peak < floor:
        env = {k: v for k, v in bench["env"].items() if k.startswith("NCCL_") and k not in ("NCCL_VERSION",)}
        report.refuse("allreduce", f"all-reduce bus bandwidth over {gpus} GPUs: measured {_gb(peak)} (best of "
                      f"{_size(min(r['size_mib'] for r in bench['rows'] if 'busbw_gb_s' in r))}-{_size(bench['largest_size_mib'])}, "
                      f"bf16), expected at least {_gb(floor)} ({lim.allreduce_min_fraction:g} x {ceiling:g} GB/s "
                      f"{lim.link_name or 'link'} x{lim.links} per direction; node_acceptance_allreduce_min_fraction)",
                      "nvidia-smi nvlink -s (all links up), nvidia-smi topo -m (NV# between every pair), Fabric Manager, "
                      "and NCCL variables that narrow the path (NCCL_P2P_DISABLE, NCCL_*_NCHANNELS, NCCL_PROTO, NCCL_ALGO)"
                      + (f"; this run had {', '.join(f'{k}={v}' for k, v in sorted(env.items()))}" if env else ""))
    if (bench["largest_size_mib"] or 0) < 1024:
        report.warnings.append(f"all-reduce sizes stop at {_size(bench['largest_size_mib'])}: the fractions in "
                               "data/gpus.yml are calibrated up to 4 GiB")


def judge_host(host: str, raw: dict[str, Any], platforms: dict[str, Any], overrides: dict[str, Any],
               planned_gpu: str | None = None, xids: dict[str, dict[int, dict[str, str]]] | None = None,
               plan: dict[str, Any] | None = None) -> HostReport:
    """One node: raw = {node, bench, bench_skipped} as the role collected them (or replayed them); plan: the
    host's site plan, whose serving unit alone may hold the GPUs."""
    parsed = health(raw.get("node"))
    bench = bench_summary(raw.get("bench"))
    platform = detect_platform(parsed, platforms, planned_gpu)
    report = HostReport(host, Limits.of(platform, platforms, overrides))
    gpus = len(parsed["gpus"])
    report.row = {"host": host, "vendor": parsed["vendor"], "platform": platform, "gpus": gpus,
                  "model": ", ".join(sorted({g.get("name") or "?" for g in parsed["gpus"]})) or "-",
                  "driver": parsed["driver_version"], "busbw_peak_gb_s": bench["busbw_peak_gb_s"],
                  "busbw_floor_gb_s": (report.limits.allreduce_min_fraction or 0) * (report.limits.allreduce_link_gb_s or 0)
                  or None, "memory_copy_gb_s": bench["memory_min_copy_gb_s"],
                  "memory_floor_gb_s": (report.limits.memory_min_fraction or 0) * (report.limits.memory_gb_s or 0) or None,
                  "memory_mismatches": bench["memory_mismatches"] if bench["memory_gpus"] else None,
                  "nccl": bench["nccl"], "torch": bench["torch"], "rows": bench["rows"],
                  "xids": [e["xid"] for e in parsed["xids"]], "nvlink_active": [
                      sum(1 for s in (st.get("links") or {}).values() if s) for st in parsed["nvlink"]]}
    if not _check_gpus(report, parsed):
        report.row.update(busbw_floor_gb_s=None, memory_floor_gb_s=None)
        return report
    if platform is None:
        report.warnings.append("GPU model not in the platform table (data/gpus.yml / sglang_gpu_platforms): "
                               "links and bandwidth not judged")
    _check_processes(report, raw.get("node"), parsed, plan)
    _check_pcie(report, parsed, bench)
    _check_memory_health(report, parsed)
    _check_power(report, parsed)
    _check_links(report, parsed)
    _check_xids(report, parsed, xids or xid_table())
    _check_bench(report, parsed, bench, raw.get("bench_skipped"), gpus)
    if gpus < 2 or (bench["world_size"] == 1):
        report.row.update(busbw_peak_gb_s="n/a", busbw_floor_gb_s=None)
    return report


# ---------------------------------------------------------------------------------------------- fabric


def rate_gb_s(rate: Any) -> float | None:
    """sysfs infiniband port rate '400 Gb/sec (4X NDR)' -> 50.0 GB/s."""
    found = number(rate)
    return found / 8 if found else None


def fabric_ceiling(fabric_facts: dict[str, Any] | None, env: dict[str, str]) -> tuple[float | None, str]:
    """The node's fabric bandwidth per direction: the sum of the rates of the ports NCCL uses (NCCL_IB_HCA
    when set, else every ACTIVE port), and how it was worked out."""
    ports = [dict(p, device=d["name"]) for d in (fabric_facts or {}).get("devices") or [] for p in d.get("ports") or []
             if p.get("state") == "ACTIVE"]
    wanted = env.get("NCCL_IB_HCA", "").lstrip("=^")
    if wanted:
        names = [w.split(":") for w in wanted.split(",") if w]
        ports = [p for p in ports if any(p["device"] == n[0] and (len(n) == 1 or str(p["port"]) == n[1]) for n in names)]
    rates = [rate_gb_s(p.get("rate")) for p in ports]
    rates = [r for r in rates if r]
    if env.get("NCCL_IB_DISABLE") == "1" or not rates:
        return None, "no ACTIVE InfiniBand/RoCE port in NCCL's view: NCCL runs over TCP sockets"
    return sum(rates), f"{len(rates)} port(s) x {', '.join(sorted({f'{r * 8:g} Gb/s' for r in rates}))}"


def judge_fabric(instance: str, members: list[str], raws: dict[str, dict[str, Any]], fraction: float | None,
                 link_ceiling: float | None) -> dict[str, list[str]]:
    """A multi-node instance's cross-node all-reduce: {host: problems} (warnings under the key '_warnings')."""
    out: dict[str, list[str]] = {"_warnings": []}
    failed = []
    for host in members:
        raw = raws.get(host) or {}
        if raw.get("fabric_skipped"):
            out["_warnings"].append(f"{instance}: cross-node all-reduce not run on {host}: {raw['fabric_skipped']}")
            return out
        fab = raw.get("fabric")
        if not fab:
            failed.append((host, "no result came back"))
            continue
        errors = [error_summary(e) for e in fab.get("errors") or []]
        if errors:
            failed.append((host, errors[0]))
    env = next((((raws.get(h) or {}).get("fabric") or {}).get("env") for h in members
                if ((raws.get(h) or {}).get("fabric") or {}).get("env")), {})
    what_env = ", ".join(f"{k}={v}" for k, v in sorted(env.items()) if k in (
        "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "GLOO_SOCKET_IFNAME", "NCCL_IB_DISABLE")) or "none set"
    if failed:
        for host, error in failed:
            out.setdefault(host, []).append(
                f"cross-node all-reduce of instance {instance} ({', '.join(members)}) failed on {host}: {error}. Check: "
                f"the serving unit's NCCL environment ({what_env}) names interfaces and HCAs that exist and are ACTIVE "
                "on every member (ip -br link, ibv_devinfo), the head's address and port are reachable from every "
                "member (firewalls, routes), and the rails are cabled member to member")
        return out
    head = (raws.get(members[0]) or {}).get("fabric") or {}
    rows = [r for r in head.get("allreduce") or [] if "busbw_gb_s" in r]
    peak = max((r["busbw_gb_s"] for r in rows), default=None)
    ceilings = [fabric_ceiling((raws.get(h) or {}).get("fabric_facts"), env) for h in members]
    known = [c for c, _source in ceilings if c]
    if peak is None:
        out.setdefault(members[0], []).append(f"cross-node all-reduce of instance {instance}: no figure came back")
        return out
    if len(known) < len(members) or not fraction:
        why = next((why for c, why in ceilings if not c), "no fabric fraction set")
        out["_warnings"].append(f"{instance}: cross-node all-reduce busbw {_gb(peak)} over {head.get('world_size')} "
                                f"GPUs reported, not judged ({why})")
        return out
    ceiling = min(known + ([link_ceiling] if link_ceiling else []))
    if peak < fraction * ceiling:
        out.setdefault(members[0], []).append(
            f"cross-node all-reduce bus bandwidth of instance {instance} ({', '.join(members)}, "
            f"{head.get('world_size')} GPUs): measured {_gb(peak)}, expected at least {_gb(fraction * ceiling)} "
            f"({fraction:g} x {ceiling:g} GB/s: {ceilings[0][1]}; node_acceptance_fabric_min_fraction). Check: port rates and errors (ibstat, "
            f"perfquery), NCCL_IB_HCA ({env.get('NCCL_IB_HCA', 'unset')}) naming every rail, GPUDirect RDMA "
            "(nvidia_peermem loaded), PCIe of the HCAs")
    return out


# ---------------------------------------------------------------------------------------------- output


def report_text(reports: list[HostReport], fabric_problems: dict[str, list[str]], enforce: bool) -> str:
    fabric_refused = {h for h, p in fabric_problems.items() if p and not h.startswith("_")}
    refused = sorted({r.host for r in reports if r.problems} | fabric_refused)
    head = (f"node acceptance: {len(refused)} of {len(reports)} host(s) "
            + ("refused" if enforce else "would be refused (node_acceptance_enforce: false, warning only)") + ":")
    lines = [head]
    by_host = {r.host: r for r in reports}
    for host in refused:
        report = by_host.get(host)
        plat = report.limits.platform if report else None
        what = (f" ({report.row.get('gpus')} x {report.row.get('model')}, platform {plat or 'unknown'})"
                if report and report.row.get("gpus") else "")
        lines.append(f"{host}{what}:")
        for problem in (report.problems if report else []):
            lines.append(f"  - {problem.text()}")
        for text in fabric_problems.get(host, []):
            lines.append(f"  - {text}")
    return "\n".join(lines)


def _cell(x: Any, fmt: str = "{:.1f}") -> str:
    if x is None:
        return "-"
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return fmt.format(x)
    return str(x)


def table_markdown(reports: list[HostReport], fabric: dict[str, list[str]]) -> str:
    lines = ["# Node acceptance", "",
             "busbw: bf16 all-reduce bus bandwidth over the node's GPUs (algbw x 2(n-1)/n), best size; floor: the "
             "platform's fraction of its link bandwidth. Memory: slowest GPU's device-to-device copy (read + write).", "",
             "| host | GPUs | model | driver | NCCL | busbw GB/s | floor | memory GB/s | floor | pattern errors | Xids | verdict |",
             "| --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in sorted(reports, key=lambda x: x.host):
        row = r.row
        failed = sorted({p.check for p in r.problems}) + (["fabric"] if fabric.get(r.host) else [])
        verdict = "accepted" if not failed else "refused: " + ", ".join(failed)
        lines.append(f"| {r.host} | {row.get('gpus')} | {row.get('model')} | {row.get('driver') or '-'} | "
                     f"{row.get('nccl') or '-'} | {_cell(row.get('busbw_peak_gb_s'))} | {_cell(row.get('busbw_floor_gb_s'))} | "
                     f"{_cell(row.get('memory_copy_gb_s'))} | {_cell(row.get('memory_floor_gb_s'))} | "
                     f"{_cell(row.get('memory_mismatches'), '{:d}')} | "
                     f"{', '.join(map(str, sorted(set(row.get('xids') or [])))) or '-'} | {verdict} |")
    notes = fabric.get("_warnings") or []
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def plot(reports: list[HostReport], path: Path) -> bool:
    """Per host: all-reduce busbw against its floor and ceiling, and memory copy against its floor."""
    try:
        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    reports = sorted(reports, key=lambda x: x.host)
    hosts = [r.host for r in reports]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(8, 1.2 * len(hosts) + 6), 4))
    for ax, key, floor_key, ceiling, title in (
            (ax1, "busbw_peak_gb_s", "busbw_floor_gb_s", "allreduce_link_gb_s", "all-reduce busbw (GB/s)"),
            (ax2, "memory_copy_gb_s", "memory_floor_gb_s", "memory_gb_s", "memory copy (GB/s)")):
        xs = list(range(len(hosts)))
        vals = [r.row.get(key) if isinstance(r.row.get(key), (int, float)) else 0 for r in reports]
        colors = ["tab:green" if r.ok else "tab:red" for r in reports]
        ax.bar(xs, vals, color=colors)
        for x, r in zip(xs, reports):
            floor, top = r.row.get(floor_key), getattr(r.limits, ceiling)
            if not isinstance(r.row.get(key), (int, float)):
                floor = top = None
            if floor:
                ax.hlines(floor, x - 0.4, x + 0.4, colors="black", linestyles="--")
            if top:
                ax.hlines(top, x - 0.4, x + 0.4, colors="grey", linestyles=":")
            if not isinstance(r.row.get(key), (int, float)):
                ax.text(x, 0, "n/a", ha="center", va="bottom")
        ax.set_xticks(xs)
        ax.set_xticklabels(hosts, rotation=30, ha="right")
        ax.set_title(title + "  (-- floor, .. physical)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------- role helpers


def launcher(method: str, vendor: str, python: str, image: str, probes: str, env: dict[str, str], rdma: bool,
             docker: dict[str, Any]) -> list[str]:
    """argv that runs a probe with the installed SGLang: its venv's python, or python3 in its image with the GPUs,
    host network and IPC, the HCAs when the node has them, and the serving environment passed in."""
    if method != "docker":
        return [python]
    options = ["--network=host", "-v", f"{probes}:{probes}:ro"]
    options += list(docker["vendor"].get(vendor, docker["vendor"]["nvidia"])) + list(docker["common"])
    if rdma:
        options += list(docker["rdma"]) + (list(docker["rdma_amd_extra"]) if vendor == "amd" else [])
    for key in sorted(env):
        options += ["-e", f"{key}={env[key]}"]
    return container.python_in({"method": method, "image": image}, options, entrypoint=True)


def bench_result(out: dict[str, Any]) -> dict[str, Any]:
    """A command result of accept_bench.py -> its JSON, or an error the judgement reports when it never ran."""
    text = str(out.get("stdout") or "")
    try:
        start = text.index("{")
        return json.loads(text[start:])
    except ValueError:
        why = str(out.get("msg") or out.get("stderr") or "no output").strip().splitlines()
        return {"errors": [f"the probe did not start (rc={out.get('rc')}): {' '.join(why[-3:])[:400]}"], "ok": False}


def replay(paths: dict[str, Any]) -> dict[str, Any]:
    """node_acceptance_replay {node, bench, fabric, fabric_facts, bench_skipped, fabric_skipped} -> the result the
    probes would have given (files read on the controller)."""
    out: dict[str, Any] = {"replayed": True}
    for key in ("node", "bench", "fabric", "fabric_facts"):
        if paths.get(key):
            out[key] = json.loads(Path(str(paths[key])).read_text(encoding="utf-8"))
    for key in ("bench_skipped", "fabric_skipped"):
        if paths.get(key):
            out[key] = str(paths[key])
    return out
