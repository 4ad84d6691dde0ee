#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module metalserve.sglang.fabric_facts: InfiniBand/RoCE HCAs of a node, read-only."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: fabric_facts
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Read the InfiniBand/RoCE HCAs of a node from sysfs
description:
  - For each device under C(/sys/class/infiniband) reports its ports with state, physical state, link layer, rate,
    the RoCE v2 GID index (the lowest RoCE v2 GID that carries an IPv4 address), the mapped netdevs and their IPv4,
    plus node GUID, PCI address and NUMA node.
  - Also reports C(/dev/infiniband) entries, this session's memlock limit, the IPv4 addresses of named interfaces,
    and what the names in O(resolve) resolve to on the node.
  - Facts go under C(metalserve_fabric). Changes nothing; check mode is the same as a normal run.
options:
  sysfs_root:
    description: Root under which C(sys/class/infiniband) and C(dev/infiniband) are read (tests build a tree).
    type: path
    default: /
  resolve:
    description: Host names or addresses to resolve on the node (for example a multi-node head).
    type: list
    elements: str
    default: []
  interfaces:
    description: Interfaces whose IPv4 addresses to report (for example the rendezvous interface).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - metalserve.sglang.attributes.node
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  facts: {support: full}
"""

EXAMPLES = r"""
- name: Read the fabric and check that the head resolves
  metalserve.sglang.fabric_facts:
    resolve: [h200-b01]
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(metalserve_fabric).
  returned: always
  type: dict
  contains:
    metalserve_fabric:
      description: >-
        devices (name, node_guid, pci_address, numa_node, netdevs, ports with state, phys_state, link_layer, rate,
        roce_v2_gid_index, netdevs, ipv4), device_count, active_ports, link_layers, dev_infiniband, uverbs_present,
        memlock (soft, hard; -1 is unlimited), interfaces (name to IPv4 list), resolved (name to addresses).
      type: dict
"""

import fcntl
import resource
import socket
import struct

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metalserve.sglang.plugins.module_utils import fabric_probe
SIOCGIFADDR = 0x8915


def interface_ipv4(name):
    """The primary IPv4 of an interface, or None (ioctl, no external tools)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name[:15].encode()))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


def resolve(name):
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    return sorted({info[4][0] for info in infos})


def limit(value):
    return -1 if value == resource.RLIM_INFINITY else value


def main():
    module = AnsibleModule(argument_spec={"sysfs_root": {"type": "path", "default": "/"},
                                          "resolve": {"type": "list", "elements": "str", "default": []},
                                          "interfaces": {"type": "list", "elements": "str", "default": []}},
                           supports_check_mode=True)
    root = module.params["sysfs_root"]
    facts = fabric_probe.read_fabric(root)
    if root == "/":
        for device in facts["devices"]:
            for port in device["ports"]:
                if not port["ipv4"]:
                    port["ipv4"] = sorted({a for a in map(interface_ipv4, port["netdevs"]) if a})
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    facts["memlock"] = {"soft": limit(soft), "hard": limit(hard)}
    facts["interfaces"] = {name: [a for a in [interface_ipv4(name)] if a] for name in module.params["interfaces"]}
    facts["resolved"] = {name: resolve(name) for name in module.params["resolve"]}
    module.exit_json(changed=False, ansible_facts={"metalserve_fabric": facts})


if __name__ == "__main__":
    main()
