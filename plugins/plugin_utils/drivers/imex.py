# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An IMEX domain (GB300 NVL trays): nodes_config.cfg, the ports IMEX listens on, the members-only firewall and the
channel device. Pure; facts in data/nvidia/services.yml.

nodes_config.cfg must hold IP addresses, one per line, identical on every member (NVIDIA IMEX guide); IMEX
peers talk TCP on SERVER_PORT (50000) and, when the command service is on, IMEX_CMD_PORT (50005).
"""
from __future__ import annotations

import ipaddress
import re
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers.nvidia import data
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

# where a member's IMEX address may come from, first IP wins
ADDRESS_VARS = ("nvidia_driver_imex_address", "sglang_dist_address", "ansible_host")


def _ip(value: Any) -> str | None:
    try:
        return str(ipaddress.ip_address(str(value).strip()))
    except ValueError:
        return None


def member_address(host: str, hostvars: dict[str, Any]) -> str:
    """The IP a member is listed with: nvidia_driver_imex_address, sglang_dist_address, ansible_host, then the
    gathered default IPv4 address, the first that is an IP. Refuses naming what it found."""
    seen = []
    for var in ADDRESS_VARS:
        value = hostvars.get(var)
        if value in (None, ""):
            continue
        ip = _ip(value)
        if ip:
            return ip
        seen.append(f"{var} is {value!r}")
    facts = hostvars.get("ansible_facts") or {}
    fact = (facts.get("default_ipv4") or {}).get("address") or (hostvars.get("ansible_default_ipv4") or {}).get("address")
    if fact and _ip(fact):
        return str(_ip(fact))
    found = "; ".join(seen) or "none of " + ", ".join(ADDRESS_VARS) + " is set"
    raise RecipeError(f"IMEX member {host} has no IP address ({found}; no gathered default IPv4 address): "
                      "nodes_config.cfg must list IP addresses (NVIDIA IMEX guide). Set nvidia_driver_imex_address "
                      f"on {host} to the IP of its IMEX network interface")


def nodes_config(members: list[str], hostvars: dict[str, dict[str, Any]]) -> str:
    """The nodes_config.cfg text of a domain: one IP per member, in member order, the same on every member."""
    if not members:
        raise RecipeError("nvidia_driver_imex_group: the IMEX domain has no members")
    ips = [member_address(m, hostvars.get(m) or {}) for m in members]
    dupes = sorted({ip for ip in ips if ips.count(ip) > 1})
    if dupes:
        raise RecipeError(f"IMEX members share address(es) {', '.join(dupes)}: each member needs its own IP "
                          "(set nvidia_driver_imex_address per host)")
    return "\n".join(ips) + "\n"


def parse_config(text: str) -> dict[str, str]:
    """KEY=VALUE lines of /etc/nvidia-imex/config.cfg (comments and blanks skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def ports(config_text: str) -> list[int]:
    """The TCP ports IMEX members use: SERVER_PORT, plus IMEX_CMD_PORT when IMEX_CMD_ENABLED is 1.
    Keys the file does not set take NVIDIA's defaults."""
    config = {**data("services")["imex"]["defaults"], **parse_config(config_text)}
    out = [int(config["SERVER_PORT"])]
    if str(config.get("IMEX_CMD_ENABLED", "0")).strip() == "1":
        out.append(int(config["IMEX_CMD_PORT"]))
    return sorted(set(out))


def channel_major(proc_devices: str) -> int | None:
    """The major of nvidia-caps-imex-channels in /proc/devices (the driver registers it; the nodes are not made)."""
    name = data("services")["imex"]["channel_char_device"]
    for line in proc_devices.splitlines():
        if line.startswith("Block devices"):
            break
        m = re.match(r"^\s*(\d+)\s+(\S+)\s*$", line)
        if m and m.group(2) == name:
            return int(m.group(1))
    return None
