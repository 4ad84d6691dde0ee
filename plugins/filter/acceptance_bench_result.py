# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.acceptance_bench_result: a thin plugin over plugins/plugin_utils/checks/acceptance.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: acceptance_bench_result
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The node_acceptance measurement probe's JSON from its command result, or why it never ran
description:
  - Takes the registered result of the command that ran the measurement probe (C(accept_bench.py), all-reduce and GPU
    memory, or the cross-node all-reduce) and returns the JSON it printed.
  - A probe that did not start (no output, a container that could not run) becomes a result with C(ok=false) and an
    error naming the return code and the last lines of its error output, which M(metalserve.sglang.acceptance) reports
    for the host.
options:
  _input:
    description: The registered result of the probe's command (C(stdout), C(rc), C(stderr), C(msg)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Keep what the probe said
  ansible.builtin.set_fact:
    bench: "{{ bench_out | metalserve.sglang.acceptance_bench_result }}"
"""

RETURN = r"""
_value:
  description: The probe's JSON, or C({ok=false, errors=[the probe did not start (rc=N) ...]}).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def acceptance_bench_result(out: dict[str, Any]) -> dict[str, Any]:
    return acceptance.bench_result(out)


class FilterModule:
    """The filter metalserve.sglang.acceptance_bench_result."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"acceptance_bench_result": wrap(acceptance_bench_result)}
