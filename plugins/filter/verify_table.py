# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.verify_table: a thin plugin over plugins/plugin_utils/checks/verify.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: verify_table
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The Markdown summary table of playbooks/verify.yml
description:
  - 'The Markdown summary of every host''s rows from P(metalserve.sglang.verify_rows#filter): one line per host
    and instance, a column per check.'
options:
  _input:
    description: Every host's rows (P(metalserve.sglang.verify_rows#filter)), flattened into one list.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: The site's table
  ansible.builtin.debug:
    msg: "{{ all_rows | metalserve.sglang.verify_table }}"
  run_once: true
  vars:
    all_rows: "{{ ansible_play_hosts_all | map('extract', hostvars) | selectattr('verify_rows', 'defined') | map(attribute='verify_rows') | flatten }}"
"""

RETURN = r"""
_value:
  description: A Markdown table.
  type: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify as verify_checks  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: E402


def verify_table(rows: list[dict[str, Any]]) -> str:
    return verify_checks.table(to_plain(rows))


class FilterModule:
    """The filter metalserve.sglang.verify_table."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"verify_table": verify_table}
