# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.output_path: a thin plugin over plugins/plugin_utils/outputs.py, where its logic
and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: output_path
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The controller path of one of the playbooks' outputs
description:
  - Every playbook writes its outputs on the controller under one folder, C(sglang_render_dir) (unset or empty
    C(rendered)). This filter makes that folder, or a path below it, absolute.
  - A relative path is taken from the working directory of C(ansible-playbook), which under AWX, AAP and
    C(ansible-runner) is the job's copy of the project (C(/runner/project) in an execution environment). It is
    never C($PWD), which C(ansible-runner) passes on from the shell it was started from, and never the
    playbook's folder, which is the installed collection.
  - C(~) is expanded; an absolute path is kept as it is.
positional: _input, parts
options:
  _input:
    description: The folder as the operator set it, usually C(sglang_render_dir | default('')); empty means C(rendered).
    type: str
    required: true
  parts:
    description: Names below the folder, joined in order (for example C(benchmark), or C(upgrade)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Where benchmark.yml's results go
  ansible.builtin.debug:
    msg: "{{ sglang_render_dir | default('') | metalserve.sglang.output_path('benchmark') }}"
"""

RETURN = r"""
_value:
  description: The absolute path on the controller.
  type: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils import outputs  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def output_path(value: Any, *parts: str) -> str:
    return outputs.output_path(value, *parts)


class FilterModule:
    """The filter metalserve.sglang.output_path."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"output_path": wrap(output_path)}
