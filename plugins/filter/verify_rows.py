# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.verify_rows: a thin plugin over plugins/plugin_utils/checks/verify.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: verify_rows
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Judge the answers of one SGLang endpoint to playbooks/verify.yml's questions
description:
  - Judges the HTTP answers that playbooks/files/verify_endpoint.py collected on a host (health, models, chat,
    reasoning split, tool call, Anthropic messages) and names the cause of each failure, for example a wrong C(--tool-call-parser).
  - The logic is in plugins/plugin_utils/checks/verify.py.
positional: _input, host, target, timeout
options:
  _input:
    description: The answers by check, as verify_endpoint.py prints them (C(status), C(body), C(elapsed)).
    type: dict
    required: true
  host:
    description: The host the answers come from.
    type: str
    required: true
  target:
    description: The host's P(metalserve.sglang.verify_target#filter).
    type: dict
    required: true
  timeout:
    description: Seconds each request was given (a slower answer is a failure).
    type: float
    required: true
"""

EXAMPLES = r"""
- name: Judge the answers that playbooks/files/verify_endpoint.py printed
  ansible.builtin.set_fact:
    verify_rows: "{{ answers.stdout | from_json | metalserve.sglang.verify_rows(inventory_hostname, target, 60) }}"
  vars:
    target: "{{ site_plan.plans[inventory_hostname] | metalserve.sglang.verify_target }}"
"""

RETURN = r"""
_value:
  description: 'One row per check: C(host), C(instance), C(check), C(ok), C(latency_ms), C(problem).'
  type: list
  elements: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify as verify_checks  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402


def verify_rows(results: dict[str, Any], host: str, target: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    return verify_checks.rows(str(host), to_plain(target), to_plain(results), float(timeout))


class FilterModule:
    """The filter metalserve.sglang.verify_rows."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"verify_rows": verify_rows}
