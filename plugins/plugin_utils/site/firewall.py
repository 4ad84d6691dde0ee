# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nftables rules that keep a multi-node instance's rendezvous and NCCL ports to its members. Pure.

The table is ours alone (inet metalserve_sglang): it only drops what reaches those ports from anyone
else and never touches the site's own tables, so it works beside any firewall. It does not open ports
in a default-drop site firewall (we cannot know its layout); NCCL's data connections use ephemeral ports
that no rule can pin without owning the whole range, so they are left alone.
"""
from __future__ import annotations

import ipaddress
from typing import Any

TABLE = "metalserve_sglang"
#: the unit that loads the table at boot (roles/sglang_server/tasks/firewall.yml writes it)
UNIT = "metalserve-sglang-firewall.service"


def guarded_ports(plan: dict[str, Any], internal_offset: int, internal_count: int) -> list[int]:
    """The rendezvous port (--dist-init-addr) and the block SGLang takes from --port (ZMQ, NCCL port)."""
    rec = plan["recipe"]
    start = int(rec["port"]) + internal_offset
    return sorted({int(rec["dist_port"]), *range(start, start + internal_count)})


def member_networks(addresses: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """IPv4 and IPv6 addresses of the members (names that are not addresses are skipped)."""
    v4: set[str] = set()
    v6: set[str] = set()
    for values in addresses.values():
        for value in values:
            try:
                ip = ipaddress.ip_address(str(value))
            except ValueError:
                continue
            (v4 if ip.version == 4 else v6).add(str(ip))
    return sorted(v4, key=ipaddress.ip_address), sorted(v6, key=ipaddress.ip_address)


def _ports(ports: list[int]) -> str:
    return "{ " + ", ".join(str(p) for p in ports) + " }"


def ruleset(plan: dict[str, Any], addresses: dict[str, list[str]], internal_offset: int,
            internal_count: int) -> str:
    """The whole nft file: replaces our table atomically, drops the guarded ports from non-members."""
    ports = guarded_ports(plan, internal_offset, internal_count)
    v4, v6 = member_networks(addresses)
    missing = sorted(m for m in plan["members"] if not any(is_ip(a) for a in addresses.get(m, [])))
    if missing:
        raise ValueError(f"no IP address known for instance member(s) {', '.join(missing)}; gather their facts "
                         "(default_ipv4) or set sglang_dist_address to an IP")
    lines = [f"# Managed by metalserve.sglang: instance {plan['instance']} ({', '.join(plan['members'])}).",
             "# Rendezvous and NCCL ports answer only the instance's members; nothing else is touched.",
             f"table inet {TABLE}", f"delete table inet {TABLE}", f"table inet {TABLE} {{"]
    if v4:
        lines += ["  set members_v4 {", "    type ipv4_addr", f"    elements = {{ {', '.join(v4)} }}", "  }"]
    if v6:
        lines += ["  set members_v6 {", "    type ipv6_addr", f"    elements = {{ {', '.join(v6)} }}", "  }"]
    lines += ["  chain input {", "    type filter hook input priority -5; policy accept;", '    iifname "lo" accept',
              f"    meta nfproto ipv4 tcp dport {_ports(ports)} "
              + ("ip saddr != @members_v4 drop" if v4 else "drop"),
              f"    meta nfproto ipv6 tcp dport {_ports(ports)} "
              + ("ip6 saddr != @members_v6 drop" if v6 else "drop"),
              "  }", "}"]
    return "\n".join(lines) + "\n"


def is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
        return True
    except ValueError:
        return False


def unit(path: str) -> str:
    """The oneshot unit that loads the table at boot and whenever nftables reloads."""
    return "\n".join([
        "# Managed by metalserve.sglang; local changes are overwritten.", "[Unit]",
        "Description=metalserve.sglang instance firewall (rendezvous and NCCL ports to instance members only)",
        "After=nftables.service", "PartOf=nftables.service", "", "[Service]", "Type=oneshot", "RemainAfterExit=yes",
        f"ExecStart=/usr/sbin/nft -f {path}", f"ExecStop=/usr/sbin/nft delete table inet {TABLE}", "",
        "[Install]", "WantedBy=multi-user.target", ""])


# --- monitoring: the scrape ports answer the monitoring hosts only ----------------------------------------------
#
# The same design as the instance table, in a table of its own that the monitoring role owns: our chain drops
# what reaches the exporter ports (and a router's metrics port, and a multi-node member's health-only --port)
# from anyone but the monitoring hosts, and accepts everything else, so a site without a default-drop policy
# keeps working exactly as before. It cannot OPEN a port in a default-drop site firewall (nftables: a drop in
# any base chain is final, our accept does not override theirs); such a site adds the ports from rendered/
# to its own rules. A server head's --port is not guarded: clients use it, and SGLang serves /metrics there.

MONITORING_TABLE = "metalserve_monitoring"
MONITORING_UNIT = "metalserve-monitoring-firewall.service"
MONITORING_FILE = "/etc/metalserve/monitoring-firewall.nft"


def source_networks(sources: list[str]) -> tuple[list[str], list[str]]:
    """IPv4 and IPv6 addresses or networks (CIDR) of the hosts allowed to scrape."""
    v4: set[str] = set()
    v6: set[str] = set()
    for value in sources:
        net = ipaddress.ip_network(str(value), strict=False)
        text = str(net.network_address) if net.num_addresses == 1 else str(net)
        (v4 if net.version == 4 else v6).add(text)
    return (sorted(v4, key=ipaddress.ip_network), sorted(v6, key=ipaddress.ip_network))


def monitoring_ruleset(host: str, ports: list[int], sources: list[str]) -> str:
    """The nft file of one node: replaces our table atomically; the ports answer only `sources` (and loopback)."""
    v4, v6 = source_networks(sources)
    lines = [f"# Managed by metalserve.sglang: metrics ports of {host} answer only the monitoring hosts.",
             "# Everything else is accepted here; the site's own tables are not touched.",
             f"table inet {MONITORING_TABLE}", f"delete table inet {MONITORING_TABLE}", f"table inet {MONITORING_TABLE} {{"]
    if v4:
        lines += ["  set monitors_v4 {", "    type ipv4_addr", "    flags interval", f"    elements = {{ {', '.join(v4)} }}",
                  "  }"]
    if v6:
        lines += ["  set monitors_v6 {", "    type ipv6_addr", "    flags interval", f"    elements = {{ {', '.join(v6)} }}",
                  "  }"]
    lines += ["  chain input {", "    type filter hook input priority -5; policy accept;", '    iifname "lo" accept',
              f"    meta nfproto ipv4 tcp dport {_ports(ports)} " + ("ip saddr != @monitors_v4 drop" if v4 else "drop"),
              f"    meta nfproto ipv6 tcp dport {_ports(ports)} " + ("ip6 saddr != @monitors_v6 drop" if v6 else "drop"),
              "  }", "}"]
    return "\n".join(lines) + "\n"


def monitoring_unit(path: str) -> str:
    """The oneshot unit that loads the monitoring table at boot and whenever nftables reloads."""
    return "\n".join([
        "# Managed by metalserve.sglang; local changes are overwritten.", "[Unit]",
        "Description=metalserve.sglang monitoring firewall (metrics ports to the monitoring hosts only)",
        "After=nftables.service", "PartOf=nftables.service", "", "[Service]", "Type=oneshot", "RemainAfterExit=yes",
        f"ExecStart=/usr/sbin/nft -f {path}", f"ExecStop=/usr/sbin/nft delete table inet {MONITORING_TABLE}", "",
        "[Install]", "WantedBy=multi-user.target", ""])
