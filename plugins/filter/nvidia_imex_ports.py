# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.nvidia_imex_ports: a thin plugin over plugins/plugin_utils/drivers/imex.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: nvidia_imex_ports
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The TCP ports an IMEX daemon uses, from its config.cfg
description:
  - Used by the nvidia_driver role to check a node's /etc/nvidia-imex/config.cfg against the ports the site plan's
    IMEX firewall guards; the logic is in plugins/plugin_utils/drivers/imex.py.
  - SERVER_PORT and, with IMEX_CMD_ENABLED=1, IMEX_CMD_PORT; keys the file does not set take NVIDIA's defaults
    (50000, 50005; data/nvidia/services.yml).
  - The domain itself (its members, nodes_config.cfg and the members-only table) is in the site plan
    (plugins/plugin_utils/site/stages.py).
positional: _input
options:
  _input:
    description: The text of /etc/nvidia-imex/config.cfg (empty takes NVIDIA's defaults).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: IMEX ports of this node
  ansible.builtin.debug:
    msg: "{{ (lookup('ansible.builtin.file', '/etc/nvidia-imex/config.cfg')) | metalserve.sglang.nvidia_imex_ports }}"
"""

RETURN = r"""
_value:
  description: The sorted TCP ports, e.g. [50000, 50005].
  type: list
  elements: int
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import imex as im  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def nvidia_imex_ports(config: str) -> list[int]:
    """The TCP ports an IMEX daemon uses, from its config.cfg text."""
    return im.ports(config or "")


class FilterModule:
    """The filter metalserve.sglang.nvidia_imex_ports."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"nvidia_imex_ports": wrap(nvidia_imex_ports)}
