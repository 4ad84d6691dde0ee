# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lookup metalserve.sglang.node: a thin plugin over plugins/plugin_utils/node.py (data/node.yml)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: node
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: A folder, program, unit name or file path of a node, from its one home (data/node.yml)
description:
  - The collection names each path, program and unit a node has in one place, its C(data/node.yml) (the plan reads the
    same file). Roles and playbooks read a value here instead of writing it again.
  - A name is dotted, C(programs.docker), C(folders.units), C(units.node_exporter), C(files.health_script); a value
    that names a folder comes back with the folder filled in.
  - Runs on the controller; reads nothing of the hosts.
options:
  _terms:
    description: Dotted names of C(data/node.yml).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Which image a container runs
  ansible.builtin.command:
    argv: ["{{ lookup('metalserve.sglang.node', 'programs.docker') }}", inspect, --format, "{{ '{{' }}.Image{{ '}}' }}",
           sglang-glm-5.3]
  changed_when: false
"""

RETURN = r"""
_raw:
  description: One value per name (a string, or a list or mapping where data/node.yml holds one).
  type: list
  elements: raw
"""

from typing import Any  # noqa: E402

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node  # noqa: E402


class LookupModule(LookupBase):
    """The lookup metalserve.sglang.node."""

    def run(self, terms: list[Any], variables: Any = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        try:
            return [node.get(str(term)) for term in terms]
        except KeyError as exc:
            raise AnsibleLookupError(str(exc.args[0])) from None
