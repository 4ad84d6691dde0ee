# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.plan_missing: a thin plugin over plugins/plugin_utils/site/runtime.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: plan_missing
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Whether any host of a play lacks the site plan
description:
  - The roles read the site plan (M(metalserve.sglang.plan)) from each host's C(metalserve_site). Used alone, a
    role plans once per play (C(run_once)); this filter is the condition, decided from every host of the play,
    so that a play where only some hosts carry a plan (an earlier play covered them, or a plan was dropped)
    still plans for all of them.
  - Reads only whether each host's C(metalserve_site) is a plan, not the plans inside it.
positional: _input, hostvars
options:
  _input:
    description: The hosts of the play (C(ansible_play_hosts)).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Plan the site unless every host of this play already has a plan
  ansible.builtin.include_role:
    name: metalserve.sglang.preflight
    tasks_from: plan
  when: ansible_play_hosts | metalserve.sglang.plan_missing(hostvars)
  run_once: true
"""

RETURN = r"""
_value:
  description: True when at least one of the hosts has no site plan.
  type: bool
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime  # noqa: E402


def plan_missing(hosts: list[str], hostvars: Any) -> bool:
    # not wrapped: each host's metalserve_site holds the whole site's plans; only whether it is one is read
    views = [hostvars[str(h)] for h in hosts]
    return runtime.plan_missing(view["metalserve_site"] if "metalserve_site" in view else None for view in views)


class FilterModule:
    """The filter metalserve.sglang.plan_missing."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"plan_missing": plan_missing}
