# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.verify_targets: every endpoint playbooks/verify.yml and playbooks/benchmark.yml ask
on a host, from its plan (the checks themselves are in plugins/plugin_utils/checks/verify.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: verify_targets
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Every endpoint playbooks/verify.yml asks on a host (each serving instance, or a router)
description:
  - 'Every endpoint playbooks/verify.yml asks on a host, from its plan: each serving instance the host heads (one per
    replica on a host with sglang_replicas; PD workers are asked through their router), or its router; an empty list
    for other hosts.'
  - Each target carries what the served model's data expects (C(verify)), so a site of several models judges every
    instance by its own model.
  - The logic is in plugins/plugin_utils/checks/verify.py.
options:
  _input:
    description: The host's plan (an entry of the C(plans) that M(metalserve.sglang.plan) returns).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The endpoints verify.yml asks on this host
  ansible.builtin.debug:
    msg: "{{ site_plan.plans[inventory_hostname] | metalserve.sglang.verify_targets | map(attribute='url') }}"
"""

RETURN = r"""
_value:
  description: >-
    One entry per endpoint: C(instance), C(url), C(served_model_name), C(argv), C(verify) (the model's name, parsers,
    the request key that asks for reasoning, what opens an unparsed tool call) and, where a check does not apply (a
    route the pinned router lacks, a parser the model has none of), C(not_applicable).
  type: list
  elements: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402


def verify_targets(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return verify.targets(to_plain(plan) or {})


class FilterModule:
    """The filter metalserve.sglang.verify_targets."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"verify_targets": verify_targets}
