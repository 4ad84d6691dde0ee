# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.serving_instances: the serving instances of a planned site (or of one host's plan), a
host with several replicas (sglang_replicas) counted once per replica (plugins/plugin_utils/site/replicas.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: serving_instances
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The serving instances of a site plan, one per replica
description:
  - 'The server plans of a site, or of one host: a host with several replicas (sglang_replicas) gives one plan per
    replica (each with its own C(instance), C(unit), port and GPUs), any other server its own plan. Routers and
    hosts that serve nothing give none.'
  - Playbooks that act per instance (rolling_restart.yml, nvidia_driver_upgrade.yml, benchmark.yml) walk these.
options:
  _input:
    description: >-
      The C(plans) that M(metalserve.sglang.plan) returns (a mapping of host to plan), a list of host plans, or one
      host's plan.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: The units this host runs
  ansible.builtin.debug:
    msg: "{{ site_plan.plans[inventory_hostname] | metalserve.sglang.serving_instances | map(attribute='unit') }}"

- name: Every instance head of the site
  ansible.builtin.debug:
    msg: "{{ site_plan.plans | metalserve.sglang.serving_instances | selectattr('rank', 'eq', 0) | map(attribute='instance') }}"
"""

RETURN = r"""
_value:
  description: Server plans, in host order, each replica of a host in order.
  type: list
  elements: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.replicas import instances_of  # noqa: E402


def serving_instances(plans: Any) -> list[dict[str, Any]]:
    plans = to_plain(plans)
    if isinstance(plans, dict) and "role" in plans:
        hosts = [plans]
    elif isinstance(plans, dict):
        hosts = [plans[h] for h in sorted(plans)]
    else:
        hosts = list(plans or [])
    return [i for plan in hosts if (plan or {}).get("role") == "server" for i in instances_of(plan)]


class FilterModule:
    """The filter metalserve.sglang.serving_instances."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"serving_instances": serving_instances}
