# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.python_launcher: a thin plugin over plugins/plugin_utils/container.py, the one writer of
the docker CLI, where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: python_launcher
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: The argv that runs the Python of a node's SGLang install (its venv, or its image)
description:
  - A client that must run with the SGLang the node serves with (C(sglang.bench_serving) in benchmark.yml and
    upgrade.yml, upgrade.yml's measuring router, sglang_server's parse check) starts with this argv and adds its script
    or C(-m module) and arguments.
  - For a uv install it is the venv's python. For a docker install it is C(docker run --rm) with the options asked
    for, then the image and C(python3) (or C(--entrypoint python3) before the image, when O(entrypoint) is set).
positional: _input
options:
  _input:
    description: How SGLang is installed on the node, the plan's C(install) (C(method), C(python), C(image)).
    type: dict
    required: true
  mounts:
    description: Docker only, one C(-v) each, as C(SOURCE:TARGET) or C(SOURCE:TARGET:ro).
    type: list
    elements: str
    default: []
  env:
    description: Docker only, names of environment variables passed into the container (C(-e NAME); the value comes
      from the client's own environment, so it never shows in the argv).
    type: list
    elements: str
    default: []
  host_network:
    description: Docker only, C(--network=host).
    type: bool
    default: false
  entrypoint:
    description: Docker only, run C(python3) as the container's entrypoint instead of as the image's command.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: bench_serving with the node's SGLang
  ansible.builtin.command:
    argv: >-
      {{ plan.install | metalserve.sglang.python_launcher(mounts=['/var/tmp/bench:/var/tmp/bench'], env=['OPENAI_API_KEY'],
                                                          host_network=true)
         + ['-m', 'sglang.bench_serving', '--base-url', 'http://127.0.0.1:30000'] }}
  changed_when: true
"""

RETURN = r"""
_value:
  description: The argv up to the interpreter, C([<venv python>]) or C([docker, run, --rm, ..., <image>, python3]).
  type: list
  elements: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils import container  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def python_launcher(install: dict[str, Any], mounts: list[str] | None = None, env: list[str] | None = None,
                    host_network: bool = False, entrypoint: bool = False) -> list[str]:
    return container.launcher(install, mounts, env, bool(host_network), bool(entrypoint))


class FilterModule:
    """The filter metalserve.sglang.python_launcher."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"python_launcher": wrap(python_launcher)}
