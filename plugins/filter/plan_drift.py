# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.plan_drift: a thin plugin over plugins/plugin_utils/site/runtime.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: plan_drift
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Role settings a role sees that its site plan was not made from
description:
  - The site plan (M(metalserve.sglang.plan)) reads role settings such as C(sglang_server_restart_sec) from the
    inventory (group_vars, host_vars, extra vars), which is also what C(playbooks/render.yml) reads. A value set
    where the plan cannot see it, such as a play's C(vars:), would make a node differ from the preview.
  - Given the plan's RV(metalserve.sglang.plan#module:plans) entry C(inputs) and the values the role sees for
    the same names (in the same order), returns one message per setting that differs. Values are compared
    after the coercion the plan applies (C('30') is C(30), C(yes) is C(true)).
positional: _input, seen
options:
  _input:
    description: The plan's C(inputs) of one host (setting name to the value the plan used).
    type: dict
    required: true
  seen:
    description: The values the role sees for the same names, in the same order.
    type: list
    elements: raw
    required: true
"""

EXAMPLES = r"""
- name: Refuse role settings the plan did not see
  ansible.builtin.assert:
    that: drift | length == 0
    fail_msg: "{{ drift | join('; ') }}"
  vars:
    inputs: "{{ metalserve_site.plans[inventory_hostname].inputs }}"
    drift: "{{ inputs | metalserve.sglang.plan_drift(query('ansible.builtin.vars', *(inputs.keys() | list))) }}"
"""

RETURN = r"""
_value:
  description: One message per differing setting, naming it, both values and where to set it; empty when none.
  type: list
  elements: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime  # noqa: E402


def plan_drift(inputs: dict[str, Any], seen: list[Any]) -> list[str]:
    return runtime.drift(inputs, list(seen))


class FilterModule:
    """The filter metalserve.sglang.plan_drift."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"plan_drift": wrap(plan_drift)}
