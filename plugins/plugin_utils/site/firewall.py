# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Our nftables tables, written by one function: ports that answer only a set of addresses. Pure.

Three tables use it: a multi-node instance's rendezvous and NCCL ports (its members), the metrics ports (the
monitoring hosts) and the IMEX ports of a GB300 NVLink domain (its members). Each table is ours alone
(inet metalserve_*): it only drops what reaches its ports from anyone else and never touches the site's own
tables, so it works beside any firewall. It cannot OPEN a port in a default-drop site firewall (nftables: a drop
in any base chain is final, our accept does not override theirs); such a site adds the ports from rendered/ to
its own rules. NCCL's data connections use ephemeral ports that no rule can pin without owning the whole range,
so they are left alone. One role writes them all (roles/nftables), from the text made here.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node, systemd


@dataclass(frozen=True)
class Table:
    """One of our nftables tables: its name, the file that holds it and the unit that loads it."""
    name: str
    file: str
    unit: str
    description: str
    set_name: str        # members or monitors
    interval: bool       # the set holds networks (CIDR) as well as addresses


def _table(kind: str, description: str, set_name: str, interval: bool) -> Table:
    """One of our tables as data/node.yml names it (its table, file and unit)."""
    spec = node.get(f"firewalls.{kind}")
    return Table(spec["table"], spec["file"], spec["unit"], description, set_name, interval)


#: the instance firewall (sglang_server), the scrape ports (monitoring) and the IMEX ports (nvidia_driver)
SGLANG = _table("sglang", "metalserve.sglang instance firewall (rendezvous and NCCL ports to instance members only)",
                "members", False)
MONITORING = _table("monitoring", "metalserve.sglang monitoring firewall (metrics ports to the monitoring hosts only)",
                    "monitors", True)
IMEX = _table("imex", "metalserve.sglang IMEX firewall (IMEX ports to the domain's members only)", "members", False)
TABLE = SGLANG.name
UNIT = SGLANG.unit


def guarded_ports(plan: dict[str, Any]) -> list[int]:
    """A multi-node member's rendezvous port (--dist-init-addr) and the block SGLang takes from it (the plan's
    `ports` after --port: DP attention's ZMQ ports from the rendezvous port + 1)."""
    rec = plan["recipe"]
    return sorted({int(rec["dist_port"]), *(int(p) for p in rec["ports"][1:])})


def source_networks(sources: list[str]) -> tuple[list[str], list[str]]:
    """IPv4 and IPv6 addresses or networks (CIDR) of the hosts allowed in, overlaps merged (nft refuses an interval
    set whose elements overlap: a monitoring host inside an allowed network); names that are not addresses are
    skipped (a caller that needs every member known checks that first)."""
    nets: dict[int, list[Any]] = {4: [], 6: []}
    for value in sources:
        try:
            net = ipaddress.ip_network(str(value), strict=False)
        except ValueError:
            continue
        nets[net.version].append(net)

    def texts(version: int) -> list[str]:
        # an element inside another is dropped; neighbours stay apart (a set of addresses, not networks, must
        # keep its members as they are)
        unique = sorted(set(nets[version]), key=lambda n: (n.network_address, -n.num_addresses))
        kept = [n for n in unique if not any(o != n and n.subnet_of(o) for o in unique)]  # type: ignore[arg-type]
        return [str(n.network_address) if n.num_addresses == 1 else str(n) for n in kept]

    return texts(4), texts(6)


def _ports(ports: list[int]) -> str:
    return "{ " + ", ".join(str(p) for p in sorted(ports)) + " }"


def members_only(table: Table, header: list[str], sources: list[str], ports: list[int]) -> str:
    """The whole nft file of one table: replaces it atomically; `ports` (TCP) answer only `sources` (and
    loopback), everything else is accepted."""
    v4, v6 = source_networks(sources)
    name, flags = table.set_name, ["    flags interval"] if table.interval else []
    lines = [f"# Managed by metalserve.sglang: {header[0]}", *(f"# {line}" for line in header[1:]),
             f"table inet {table.name}", f"delete table inet {table.name}", f"table inet {table.name} {{"]
    if v4:
        lines += [f"  set {name}_v4 {{", "    type ipv4_addr", *flags, f"    elements = {{ {', '.join(v4)} }}", "  }"]
    if v6:
        lines += [f"  set {name}_v6 {{", "    type ipv6_addr", *flags, f"    elements = {{ {', '.join(v6)} }}", "  }"]
    lines += ["  chain input {", "    type filter hook input priority -5; policy accept;", '    iifname "lo" accept',
              f"    meta nfproto ipv4 tcp dport {_ports(ports)} " + (f"ip saddr != @{name}_v4 drop" if v4 else "drop"),
              f"    meta nfproto ipv6 tcp dport {_ports(ports)} " + (f"ip6 saddr != @{name}_v6 drop" if v6 else "drop"),
              "  }", "}"]
    return "\n".join(lines) + "\n"


def table_unit(table: Table) -> str:
    """The oneshot unit that loads a table at boot and whenever nftables reloads."""
    nft, nftables = node.program("nft"), node.systemd("nftables")
    # nftables.service's reload runs /etc/nftables.conf, which starts with `flush ruleset`: a reload must load the
    # table again (ReloadPropagatedFrom), a restart restarts it (PartOf)
    return systemd.service_unit([systemd.HEADER], table.description, [
        f"After={nftables}", f"PartOf={nftables}", f"ReloadPropagatedFrom={nftables}"], [
        "Type=oneshot", "RemainAfterExit=yes", f"ExecStart={nft} -f {table.file}", f"ExecReload={nft} -f {table.file}",
        f"ExecStop={nft} delete table inet {table.name}"])


def is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
        return True
    except ValueError:
        return False


def ruleset(plan: dict[str, Any], addresses: dict[str, list[str]]) -> str:
    """A multi-node instance's table: its rendezvous and NCCL ports answer only its members."""
    missing = sorted(m for m in plan["members"] if not any(is_ip(a) for a in addresses.get(m, [])))
    if missing:
        raise ValueError(f"no IP address known for instance member(s) {', '.join(missing)}; gather their facts "
                         "(default_ipv4) or set sglang_dist_address to an IP")
    return members_only(SGLANG, [f"instance {plan['instance']} ({', '.join(plan['members'])}).",
                                 "Rendezvous and NCCL ports answer only the instance's members; nothing else is touched."],
                        [a for values in addresses.values() for a in values if is_ip(a)],
                        guarded_ports(plan))


def monitoring_ruleset(host: str, ports: list[int], sources: list[str]) -> str:
    """A node's metrics ports (exporters, a router's metrics port, a member's health-only --port) answer only the
    monitoring hosts. A server head's --port is not guarded: clients use it, and SGLang serves /metrics there."""
    return members_only(MONITORING, [f"metrics ports of {host} answer only the monitoring hosts.",
                                     "Everything else is accepted here; the site's own tables are not touched."],
                        sources, ports)


def imex_ruleset(member_ips: list[str], tcp_ports: list[int], domain: str) -> str:
    """An IMEX domain's table: IMEX's TCP ports answer only the domain's members (NVIDIA IMEX guide)."""
    return members_only(IMEX, [f"IMEX domain {domain}. TCP {', '.join(map(str, sorted(tcp_ports)))}",
                               "answer only the domain's members; nothing else is touched."], member_ips, tcp_ports)
