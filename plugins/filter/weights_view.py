# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.weights_view: a thin plugin over plugins/plugin_utils/site/probe.py, where its logic
and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: weights_view
version_added: 0.4.0
author: metalserve.sglang contributors (@metalserve)
short_description: Who stages a host's weights in this run, and from where
description:
  - For a server's plan, the weights fan-out members among this run's hosts, the leader that serves its peers,
    whether this host is the leader or a peer, its source (a peer fetches from its leader over rsync), the rsync URL
    and the Hub's address - what C(metalserve.sglang.model_weights) and M(metalserve.sglang.node_probe) both read.
positional: _input, play_hosts, token
options:
  _input:
    description: A server's plan (one entry of the plan action's RV(metalserve.sglang.plan#module:plans)).
    type: dict
    required: true
  play_hosts:
    description: The hosts of this run.
    type: list
    elements: str
    required: true
  token:
    description: The Hub token (only whether it is set is used; the Hub is then asked with its file).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Show where this host fetches from
  ansible.builtin.debug:
    msg: "{{ (metalserve_site.plans[inventory_hostname] | metalserve.sglang.weights_view(ansible_play_hosts_all)).source }}"
"""

RETURN = r"""
_value:
  description: C({members, leader, is_leader, is_peer, source, rsync_url, hub}).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import probe  # noqa: E402


def weights_view(plan: dict[str, Any], play_hosts: list[str], token: str = "") -> dict[str, Any]:
    return probe.weights_view(plan, [str(h) for h in play_hosts or []], str(token or ""))


class FilterModule:
    """The filter metalserve.sglang.weights_view."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"weights_view": wrap(weights_view)}
