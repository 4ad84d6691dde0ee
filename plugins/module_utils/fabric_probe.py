# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read InfiniBand/RoCE HCAs from a sysfs tree (the kernel's sysfs-class-infiniband ABI).

`root` prefixes every path so tests run on a tree they build. Standard library only: this runs on the
nodes inside the fabric_facts module.
"""
from __future__ import annotations

import ipaddress
import os
from typing import Any

IB_CLASS = "sys/class/infiniband"
IPV4_MAPPED_PREFIX = "0000:0000:0000:0000:0000:ffff:"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _state(raw: str | None) -> str | None:
    """'4: ACTIVE' -> 'ACTIVE'; '5: LinkUp' -> 'LinkUp'."""
    if raw is None:
        return None
    return raw.split(":", 1)[1].strip() if ":" in raw else raw


def gid_ipv4(gid: str) -> str | None:
    """An IPv4-mapped GID (RoCE v2 over IPv4) -> the IPv4 address, else None."""
    if not gid.startswith(IPV4_MAPPED_PREFIX):
        return None
    tail = gid[len(IPV4_MAPPED_PREFIX):].replace(":", "")
    return str(ipaddress.IPv4Address(int(tail, 16))) if len(tail) == 8 else None


def read_gids(port_dir: str) -> list[dict[str, Any]]:
    gids = []
    for name in _listdir(os.path.join(port_dir, "gids")):
        if not name.isdigit():
            continue
        gid = _read(os.path.join(port_dir, "gids", name)) or ""
        if not gid or gid.strip("0:") == "":
            continue
        gids.append({
            "index": int(name),
            "gid": gid,
            "type": _read(os.path.join(port_dir, "gid_attrs", "types", name)),
            "netdev": _read(os.path.join(port_dir, "gid_attrs", "ndevs", name)),
            "ipv4": gid_ipv4(gid),
        })
    return sorted(gids, key=lambda g: g["index"])


def roce_v2_gid_index(gids: list[dict[str, Any]]) -> int | None:
    """The lowest RoCE v2 GID carrying an IPv4 address: what NCCL_IB_GID_INDEX should name."""
    for gid in gids:
        if (gid.get("type") or "").strip() == "RoCE v2" and gid.get("ipv4"):
            return int(gid["index"])
    return None


def read_port(dev_dir: str, port: str) -> dict[str, Any]:
    port_dir = os.path.join(dev_dir, "ports", port)
    link_layer = _read(os.path.join(port_dir, "link_layer"))
    gids = read_gids(port_dir)
    netdevs = sorted({g["netdev"] for g in gids if g.get("netdev")})
    return {
        "port": int(port),
        "state": _state(_read(os.path.join(port_dir, "state"))),
        "phys_state": _state(_read(os.path.join(port_dir, "phys_state"))),
        "link_layer": link_layer,
        "rate": _read(os.path.join(port_dir, "rate")),
        "lid": _read(os.path.join(port_dir, "lid")),
        "roce_v2_gid_index": roce_v2_gid_index(gids) if link_layer == "Ethernet" else None,
        "netdevs": netdevs,
        "ipv4": sorted({g["ipv4"] for g in gids if g.get("ipv4")}),
    }


def read_device(root: str, name: str) -> dict[str, Any]:
    dev_dir = os.path.join(root, IB_CLASS, name)
    ports = [read_port(dev_dir, p) for p in _listdir(os.path.join(dev_dir, "ports")) if p.isdigit()]
    numa = _read(os.path.join(dev_dir, "device", "numa_node"))
    pci = os.path.basename(os.path.realpath(os.path.join(dev_dir, "device")))
    netdevs = sorted(set(_listdir(os.path.join(dev_dir, "device", "net"))) | {n for p in ports for n in p["netdevs"]})
    return {
        "name": name,
        "node_guid": _read(os.path.join(dev_dir, "node_guid")),
        "node_type": _state(_read(os.path.join(dev_dir, "node_type"))),
        "fw_ver": _read(os.path.join(dev_dir, "fw_ver")),
        "pci_address": pci if ":" in pci else None,
        "numa_node": int(numa) if numa and numa.lstrip("-").isdigit() and int(numa) >= 0 else None,
        "netdevs": netdevs,
        "ports": ports,
    }


def read_fabric(root: str = "/") -> dict[str, Any]:
    devices = [read_device(root, n) for n in _listdir(os.path.join(root, IB_CLASS))]
    active = [f"{d['name']}:{p['port']}" for d in devices for p in d["ports"] if p["state"] == "ACTIVE"]
    layers = sorted({p["link_layer"] for d in devices for p in d["ports"] if p["link_layer"]})
    dev_ib = _listdir(os.path.join(root, "dev", "infiniband"))
    return {
        "devices": devices,
        "device_count": len(devices),
        "active_ports": active,
        "link_layers": layers,
        "dev_infiniband": dev_ib,
        "uverbs_present": any(n.startswith("uverbs") for n in dev_ib),
    }
