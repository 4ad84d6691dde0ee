# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_imex_domain: a thin plugin over plugins/plugin_utils/drivers/imex.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_imex_domain
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: nodes_config.cfg, member IPs, IMEX ports and the members-only nftables file of an IMEX domain
description:
  - Used by the nvidia_driver role; the logic is in plugins/plugin_utils/drivers/imex.py.
  - Every member is listed by IP (nvidia_driver_imex_address, sglang_dist_address, ansible_host, then the gathered
    default IPv4 address); a member without one is refused, naming the host and the variable.
  - Ports are SERVER_PORT and, with IMEX_CMD_ENABLED=1, IMEX_CMD_PORT from config.cfg (NVIDIA's defaults 50000, 50005).
positional: _input, hostvars, config, name
options:
  _input:
    description: The domain's members (inventory host names).
    type: list
    elements: str
    required: true
  hostvars:
    description: hostvars.
    type: dict
    required: true
  config:
    description: The text of /etc/nvidia-imex/config.cfg (empty takes NVIDIA's defaults).
    type: str
    default: ''
  name:
    description: The domain name (for the file header).
    type: str
    default: ''
"""

RETURN = r"""
_value:
  description: nodes_config (text), ips, ports, firewall (nft file).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import imex as im  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_imex_domain(members: list[str], hostvars: dict[str, Any], config: str = "", name: str = "") -> dict[str, Any]:
    """nodes_config.cfg text, the member IPs, the IMEX ports and the nftables file of a domain."""
    text = im.nodes_config(list(members), hostvars)
    ips = text.split()
    ports = im.ports(config or "")
    return {"nodes_config": text, "ips": ips, "ports": ports, "firewall": im.ruleset(ips, ports, name or "imex")}


class FilterModule:
    """The filter metalserve.sglang.nvidia_imex_domain."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_imex_domain": wrap(nvidia_imex_domain)}
