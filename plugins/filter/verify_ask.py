# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.verify_ask: the arguments that hand a verify target's request shapes to
playbooks/files/verify_endpoint.py (the logic is in plugins/plugin_utils/checks/verify.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: verify_ask
version_added: 0.3.0
author: metalserve.sglang contributors (@metalserve)
short_description: verify_endpoint.py's arguments for the request shapes of a target's model
description:
  - 'The arguments, one shell-quoted string, that hand the served model''s request shapes to
    playbooks/files/verify_endpoint.py: C(--reasoning-request) and C(--tool-call-request), each a JSON object merged
    into that request''s body (e.g. C({"chat_template_kwargs": {"thinking_mode": "enabled"}})).'
  - The shapes come from the model's data (model.yml C(requests)), else from the parser table of the SGLang release
    that serves it; playbooks/verify.yml and playbooks/upgrade.yml both read them here.
  - The logic is in plugins/plugin_utils/checks/verify.py.
options:
  _input:
    description: A target of M(metalserve.sglang.plan)'s plan, as the filter metalserve.sglang.verify_targets lists.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The request-shape arguments of the first target on this host
  ansible.builtin.debug:
    msg: "{{ (site_plan.plans[inventory_hostname] | metalserve.sglang.verify_targets | first) | metalserve.sglang.verify_ask }}"
"""

RETURN = r"""
_value:
  description: C(--reasoning-request '<json>' --tool-call-request '<json>'), shell-quoted.
  type: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402


def verify_ask(target: dict[str, Any]) -> str:
    return verify.ask_line(to_plain(target) or {})


class FilterModule:
    """The filter metalserve.sglang.verify_ask."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"verify_ask": verify_ask}
