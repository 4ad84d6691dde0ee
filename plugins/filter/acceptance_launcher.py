# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.acceptance_launcher: a thin plugin over plugins/plugin_utils/checks/acceptance.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: acceptance_launcher
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The argv that runs a node_acceptance probe with the node's installed SGLang
description:
  - The measurement probes use the Python of the SGLang the node serves with, so that they measure with the same
    torch, NCCL or RCCL.
  - For a uv install that is the venv's python. For a docker install it is C(python3) in the serving image, run the way
    the serving unit runs it (the GPUs, host network and IPC, the HCAs when the node has RDMA) with the serving
    environment passed in and the probes' folder mounted read-only.
positional: _input, probes, env
options:
  _input:
    description: How SGLang is installed, C({method, vendor, python, image, rdma}) (C(method) is C(uv) or C(docker)).
    type: dict
    required: true
  probes:
    description: The folder on the node that holds the probes.
    type: str
    required: true
  env:
    description: The serving environment (the server plan's C(env)), passed into the container.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Measure with SGLang's own Python
  ansible.builtin.command:
    argv: "{{ (how | metalserve.sglang.acceptance_launcher(probes_dir, plan.env)) + [probes_dir ~ '/accept_bench.py'] }}"
  changed_when: false
"""

RETURN = r"""
_value:
  description: The argv up to the probe's path, C([<venv python>]) or C([/usr/bin/docker, run, ..., --entrypoint, python3,
    <image>]).
  type: list
  elements: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.units import docker_forms  # noqa: E402


def acceptance_launcher(how: dict[str, Any], probes: str, env: dict[str, str] | None = None) -> list[str]:
    return acceptance.launcher(str(how.get("method") or "uv"), str(how.get("vendor") or "nvidia"),
                               str(how.get("python") or ""), str(how.get("image") or ""), probes,
                               {str(k): str(v) for k, v in (env or {}).items()}, bool(how.get("rdma")), docker_forms())


class FilterModule:
    """The filter metalserve.sglang.acceptance_launcher."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"acceptance_launcher": wrap(acceptance_launcher)}
