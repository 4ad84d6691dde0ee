# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.acceptance_replay: a thin plugin over plugins/plugin_utils/checks/acceptance.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: acceptance_replay
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: A node_acceptance result from recorded probe outputs, read on the controller
description:
  - Builds the result the node_acceptance probes would have given from their outputs recorded on an earlier run, so
    that M(metalserve.sglang.acceptance) can judge them again without probing the node (C(node_acceptance_replay)).
  - The files are read on the controller.
options:
  _input:
    description:
      - Paths of the recorded JSON files, C(node), C(bench), C(fabric) and C(fabric_facts) (any may be left out), and
        the reasons C(bench_skipped) and C(fabric_skipped) a measurement did not run.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Judge recorded outputs again
  ansible.builtin.set_fact:
    node_acceptance_result: "{{ {'node': 'runs/h200-a01/node.json', 'bench': 'runs/h200-a01/bench.json'}
                                | metalserve.sglang.acceptance_replay }}"
"""

RETURN = r"""
_value:
  description: C(replayed=true) with the parsed C(node), C(bench), C(fabric) and C(fabric_facts) and the skip reasons
    given.
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def acceptance_replay(paths: dict[str, Any]) -> dict[str, Any]:
    return acceptance.replay(paths)


class FilterModule:
    """The filter metalserve.sglang.acceptance_replay."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"acceptance_replay": wrap(acceptance_replay)}
