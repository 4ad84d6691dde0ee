# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.verify_target: the endpoint playbooks/verify.yml asks on a host, from its plan
(the checks themselves are in plugins/plugin_utils/checks/verify.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: verify_target
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: What playbooks/verify.yml asks on a host (a server head or a router)
description:
  - 'What playbooks/verify.yml asks on a host, from its plan: a server''s head (PD workers are asked through their
    router) or a router; C(none) for other hosts. On a host with several replicas (sglang_replicas), the first one:
    the filter metalserve.sglang.verify_targets lists every instance.'
  - The logic is in plugins/plugin_utils/checks/verify.py.
options:
  _input:
    description: The host's plan (an entry of the C(plans) that M(metalserve.sglang.plan) returns).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: What verify.yml asks on this host
  ansible.builtin.debug:
    msg: "{{ site_plan.plans[inventory_hostname] | metalserve.sglang.verify_target }}"
"""

RETURN = r"""
_value:
  description: >-
    C(instance), C(url), C(served_model_name), C(argv), C(verify) (what the model's data expects) and, for routers
    and models without a parser, C(not_applicable); or C(none).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402


def verify_target(plan: dict[str, Any]) -> dict[str, Any] | None:
    """What verify.yml calls on this host: a server's head (not PD workers: their router answers) or a router; the
    first replica of a host that runs several (verify_targets lists them all)."""
    found = verify.targets(to_plain(plan) or {})
    return found[0] if found else None


class FilterModule:
    """The filter metalserve.sglang.verify_target."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"verify_target": verify_target}
