# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse what GPU tools print, and name the GPUs with our ids. Pure functions, no I/O.

Runs on the nodes inside the gpu_facts module (standard library only). Formats:
nvidia-smi --query-gpu CSV (noheader, nounits), `nvidia-smi topo -m`, `nvidia-smi -q -x`,
/proc/driver/nvidia/version, `amd-smi static --json` (ROCm 6.x list form and 7.x gpu_data form),
`rocm-smi --showproductname --showmeminfo vram --showdriverversion --json`, and sysfs PCI listings.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

NVIDIA_VENDOR = "0x10de"
AMD_VENDOR = "0x1002"
# PCI classes of compute GPUs: 0x0300 VGA, 0x0302 3D controller, 0x0380 display other, 0x1200 accelerator
GPU_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")
NVSWITCH_CLASS = "0x0680"  # NVSwitches enumerate as bridges (class 0x0680) with NVIDIA's vendor id

NVIDIA_QUERY_FIELDS = ("index", "name", "uuid", "pci.bus_id", "pci.device_id", "memory.total", "driver_version",
                       "compute_cap", "persistence_mode", "mig.mode.current")


def _na(value: str) -> str | None:
    value = value.strip()
    return None if value in ("", "N/A", "[N/A]", "[Not Supported]", "Not Supported") else value


def _int(value: str | None) -> int | None:
    try:
        return int(str(value).split()[0]) if value is not None else None
    except (ValueError, IndexError):
        return None


def pci_device_id(raw: str | None) -> str | None:
    """'0x233510DE' (nvidia-smi: device then vendor) or '233510DE' or '0x2335' -> '0x2335'."""
    if not raw:
        return None
    text = raw.lower().removeprefix("0x")
    if len(text) == 8:
        text = text[:4]
    return "0x" + text


def parse_nvidia_query(text: str, fields: tuple[str, ...] = NVIDIA_QUERY_FIELDS) -> list[dict[str, Any]]:
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = dict(zip(fields, (v.strip() for v in line.split(","))))
        gpus.append({
            "index": _int(values.get("index")),
            "name": _na(values.get("name", "")),
            "uuid": _na(values.get("uuid", "")),
            "bus_id": _na(values.get("pci.bus_id", "")),
            "pci_device_id": pci_device_id(_na(values.get("pci.device_id", ""))),
            "memory_mib": _int(_na(values.get("memory.total", ""))),
            "driver_version": _na(values.get("driver_version", "")),
            "compute_capability": _na(values.get("compute_cap", "")),
            "persistence_mode": (_na(values.get("persistence_mode", "")) or "").lower() == "enabled",
            "mig_mode": _na(values.get("mig.mode.current", "")),
        })
    return gpus


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_topology(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m` -> GPU-to-GPU and GPU-to-NIC link types, NIC names, CPU/NUMA affinity per GPU."""
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if line.strip().startswith("GPU0")), None)
    if header_at is None:
        return {"gpus": [], "links": {}, "nics": [], "nic_names": {}, "gpu_nic": {}, "affinity": {}}
    columns = lines[header_at].split("\t")
    columns = [c.strip() for c in columns if c.strip()]
    devices = [c for c in columns if re.fullmatch(r"(GPU|NIC)\d+", c)]
    links: dict[str, str] = {}
    gpu_nic: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str | None]] = {}
    nics: list[str] = []
    for line in lines[header_at + 1:]:
        if not line.strip() or line.startswith("Legend"):
            break
        cells = [c.strip() for c in line.split("\t")]
        row, values = cells[0], cells[1:]
        if row.startswith("NIC"):
            nics.append(row)
        if not row.startswith("GPU"):
            continue
        for col, value in zip(devices, values):
            if col.startswith("GPU") and col != row:
                a, b = sorted((int(row[3:]), int(col[3:])))
                links[f"{a}-{b}"] = value
            elif col.startswith("NIC"):
                gpu_nic.setdefault(row, {})[col] = value
        extra = values[len(devices):]
        affinity[row] = {"cpu": _na(extra[0]) if len(extra) > 0 else None,
                         "numa": _na(extra[1]) if len(extra) > 1 else None}
    nic_names = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)", "\n".join(lines), re.M))
    return {"gpus": [d for d in devices if d.startswith("GPU")], "links": links, "nics": nics, "nic_names": nic_names,
            "gpu_nic": gpu_nic, "affinity": affinity}


def nvlink_summary(topology: dict[str, Any]) -> dict[str, Any]:
    links = topology.get("links", {})
    nv = {k: int(v[2:]) for k, v in links.items() if re.fullmatch(r"NV\d+", v or "")}
    n = len(topology.get("gpus", []))
    pairs = n * (n - 1) // 2
    return {"pairs": pairs, "nvlink_pairs": len(nv), "all_pairs_connected": pairs > 0 and len(nv) == pairs,
            "min_links": min(nv.values()) if nv else 0, "links": links}


def parse_smi_xml(text: str) -> dict[str, Any]:
    """`nvidia-smi -q -x` -> driver/CUDA versions and per-GPU architecture and fabric registration."""
    root = ET.fromstring(text)
    gpus = []
    for gpu in root.findall("gpu"):
        fabric = gpu.find("fabric")
        gpus.append({
            "bus_id": gpu.get("id"),
            "name": (gpu.findtext("product_name") or "").strip() or None,
            "architecture": (gpu.findtext("product_architecture") or "").strip() or None,
            "fabric_state": _na(fabric.findtext("state") or "") if fabric is not None else None,
            "fabric_status": _na(fabric.findtext("status") or "") if fabric is not None else None,
        })
    return {"driver_version": _na(root.findtext("driver_version") or ""),
            "cuda_version": _na(root.findtext("cuda_version") or ""), "gpus": gpus}


def parse_proc_driver_version(text: str) -> dict[str, Any]:
    """/proc/driver/nvidia/version -> {version, flavor: open|proprietary}."""
    match = re.search(r"NVRM version:\s+(.*?)\s+(\d+\.\d+(?:\.\d+)?)\s", text + " ")
    if not match:
        return {"version": None, "flavor": None}
    flavor = "open" if "Open Kernel Module" in match.group(1) else "proprietary"
    return {"version": match.group(2), "flavor": flavor}


def parse_pci_listing(entries: list[dict[str, str]]) -> dict[str, Any]:
    """sysfs PCI devices [{bdf, vendor, device, class, numa_node}] -> GPUs and NVSwitches by vendor."""
    gpus, nvswitches = [], []
    for entry in entries:
        vendor, klass = entry.get("vendor", "").lower(), entry.get("class", "").lower()[:6]
        if vendor == NVIDIA_VENDOR and klass == NVSWITCH_CLASS:
            nvswitches.append(entry["bdf"])
        elif vendor in (NVIDIA_VENDOR, AMD_VENDOR) and klass in GPU_CLASSES:
            if vendor == AMD_VENDOR and klass == "0x0300":
                continue  # a BMC or client display chip, not an Instinct accelerator
            gpus.append({"bus_id": entry["bdf"], "vendor": "nvidia" if vendor == NVIDIA_VENDOR else "amd",
                         "pci_device_id": entry.get("device", "").lower() or None,
                         "numa_node": _int(entry.get("numa_node"))})
    return {"gpus": gpus, "nvswitches": nvswitches}


def _amd_list(text: str) -> list[dict[str, Any]]:
    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("gpu_data") or data.get("gpus") or []
    return [d for d in data if isinstance(d, dict)]


def _mib(value: Any) -> int | None:
    """amd-smi VRAM sizes: an int in MB (6.x) or {value, unit} (7.x)."""
    if isinstance(value, dict):
        number, unit = value.get("value"), str(value.get("unit", "MB")).upper()
        scale = {"B": 1 / 2**20, "KB": 1 / 1024, "MB": 1, "MIB": 1, "GB": 1024, "GIB": 1024}.get(unit, 1)
        return int(float(number) * scale) if number is not None else None
    return _int(str(value)) if value is not None else None


def parse_amd_smi_static(text: str) -> list[dict[str, Any]]:
    gpus = []
    for i, item in enumerate(_amd_list(text)):
        asic, vram = item.get("asic") or {}, item.get("vram") or {}
        driver, bus = item.get("driver") or {}, item.get("bus") or {}
        gpus.append({
            "index": item.get("gpu", i),
            "name": asic.get("market_name"),
            "gfx": asic.get("target_graphics_version"),
            "pci_device_id": (asic.get("device_id") or "").lower() or None,
            "bus_id": bus.get("bdf"),
            "memory_mib": _mib(vram.get("size", vram.get("vram_size"))),
            "driver_version": driver.get("version") or driver.get("driver_version"),
        })
    return gpus


def parse_rocm_smi(text: str) -> dict[str, Any]:
    data = json.loads(text)
    gpus = []
    for key in sorted((k for k in data if k.startswith("card")), key=lambda k: int(k[4:] or 0)):
        card = data[key]
        vram = card.get("VRAM Total Memory (B)")
        gpus.append({
            "index": int(key[4:]),
            "name": card.get("Card Series") or card.get("Card series") or card.get("Card Model"),
            "gfx": card.get("GFX Version"),
            "pci_device_id": (card.get("Device ID") or "").lower() or None,
            "bus_id": card.get("PCI Bus"),
            "memory_mib": int(int(vram) / 2**20) if vram and str(vram).isdigit() else None,
            "driver_version": None,
        })
    driver = (data.get("system") or {}).get("Driver version")
    return {"gpus": gpus, "driver_version": driver}


def classify(gpu: dict[str, Any], platforms: dict[str, dict[str, Any]]) -> str:
    """Our GPU id for one GPU, by PCI device id, product-name pattern or gfx target; else 'unknown'."""
    device = (gpu.get("pci_device_id") or "").lower()
    name = gpu.get("name") or ""
    for gpu_id, platform in platforms.items():
        match = platform.get("match") or {}
        if device and device in [d.lower() for d in match.get("pci_device_ids", [])]:
            return gpu_id
    for gpu_id, platform in platforms.items():
        pattern = (platform.get("match") or {}).get("name_pattern")
        if pattern and name and re.search(pattern, name, re.IGNORECASE):
            return gpu_id
    return "unknown"


def summarize(gpus: list[dict[str, Any]], platforms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Name each GPU and tell whether the node is uniform (one model)."""
    for gpu in gpus:
        gpu["gpu_id"] = classify(gpu, platforms)
    ids = sorted({g["gpu_id"] for g in gpus})
    names = sorted({g.get("name") or g.get("pci_device_id") or "?" for g in gpus})
    memory = [g["memory_mib"] for g in gpus if g.get("memory_mib")]
    return {
        "count": len(gpus),
        "gpu_id": ids[0] if len(ids) == 1 else ("mixed" if ids else None),
        "models": names,
        "uniform": len(ids) <= 1,
        "memory_mib_per_gpu": min(memory) if memory else None,
    }


WANTED_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem", "amdgpu", "ib_umad")


def compose(raw: dict[str, Any], platforms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Everything gpu_facts collected on a node (raw command outputs and file contents) -> metalserve_gpu.

    raw keys (each optional): nvidia_query, nvidia_xml, nvidia_topo, amd_smi_static, amd_smi_version,
    rocm_smi, proc_version, pci (sysfs entries), proc_modules, processes (set of comm names),
    secure_boot, fm_installed, fm_version, module_signer, notes.
    """
    facts: dict[str, Any] = {"vendor": "none", "source": "none", "driver_version": None, "driver_flavor": None,
                             "cuda_version": None, "rocm_version": None, "nvlink": None, "topology": None,
                             "notes": list(raw.get("notes") or [])}
    pci = parse_pci_listing(raw.get("pci") or [])
    facts["nvswitch"] = {"pci_count": len(pci["nvswitches"]), "present": bool(pci["nvswitches"])}
    gpus: list[dict[str, Any]] = []
    if raw.get("nvidia_query"):
        gpus = parse_nvidia_query(raw["nvidia_query"])
        if gpus:
            facts.update(vendor="nvidia", source="nvidia-smi", driver_version=gpus[0]["driver_version"])
        if raw.get("nvidia_xml"):
            detail = parse_smi_xml(raw["nvidia_xml"])
            facts["cuda_version"] = detail["cuda_version"]
            by_bus = {g["bus_id"]: g for g in detail["gpus"]}
            for gpu in gpus:
                extra = by_bus.get(gpu["bus_id"], {})
                gpu.update(architecture=extra.get("architecture"), fabric_state=extra.get("fabric_state"),
                           fabric_status=extra.get("fabric_status"))
        if raw.get("nvidia_topo"):
            facts["topology"] = parse_topology(raw["nvidia_topo"])
            facts["nvlink"] = nvlink_summary(facts["topology"])
    if not gpus and raw.get("amd_smi_static"):
        gpus = parse_amd_smi_static(raw["amd_smi_static"])
        if gpus:
            facts.update(vendor="amd", source="amd-smi",
                         driver_version=next((g["driver_version"] for g in gpus if g["driver_version"]), None))
            match = re.search(r'"rocm_version"\s*:\s*"([^"]+)"', raw.get("amd_smi_version") or "")
            facts["rocm_version"] = match.group(1) if match else None
    if not gpus and raw.get("rocm_smi"):
        parsed = parse_rocm_smi(raw["rocm_smi"])
        gpus = parsed["gpus"]
        if gpus:
            facts.update(vendor="amd", source="rocm-smi", driver_version=parsed["driver_version"])
    if not gpus and pci["gpus"]:
        gpus = [dict(g, index=i, name=None, memory_mib=None) for i, g in enumerate(pci["gpus"])]
        facts.update(vendor=gpus[0]["vendor"], source="sysfs")
        facts["notes"].append("no vendor tool answered: GPUs seen on the PCI bus only (driver not loaded?)")
    driver = parse_proc_driver_version(raw.get("proc_version") or "")
    facts["driver_flavor"] = driver["flavor"]
    facts["driver_version"] = facts["driver_version"] or driver["version"]
    processes = set(raw.get("processes") or ())
    facts["fabric_manager"] = {
        "installed": bool(raw.get("fm_installed")), "running": "nv-fabricmanager" in processes,
        "version": raw.get("fm_version"),
        "gpu_fabric_states": sorted({g["fabric_state"] for g in gpus if g.get("fabric_state")}),
        "registered": facts["vendor"] == "nvidia" and bool(gpus) and all(
            (g.get("fabric_state"), g.get("fabric_status")) == ("Completed", "Success") for g in gpus),
    }
    facts["persistenced_running"] = "nvidia-persiste" in processes  # comm names are cut at 15 characters
    modules = {line.split()[0] for line in (raw.get("proc_modules") or "").splitlines() if line.strip()}
    facts["kernel_modules"] = sorted(m for m in modules if m in WANTED_MODULES)
    facts["secure_boot"] = raw.get("secure_boot")
    facts["module_signer"] = raw.get("module_signer")
    facts["gpus"] = gpus
    facts.update(summarize(gpus, platforms))
    return facts
