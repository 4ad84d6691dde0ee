# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.gpu_platform: a thin plugin over plugins/plugin_utils/recipe/catalog.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_platform
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: What one node of a GPU id is (vendor, GPUs per node, NVSwitch, NVLink5, IMEX, ...)
description:
  - Reads the GPU platform table (data/gpus.yml) with the site's additions; the hardware roles decide from it
    what a node needs (Fabric Manager, nvlsm, IMEX, open modules, ROCm gfx target).
positional: _input, gpu_platforms
options:
  _input:
    description: A GPU id, e.g. C(h200).
    type: str
    required: true
  gpu_platforms:
    description: The site's C(sglang_gpu_platforms).
    type: dict
"""

EXAMPLES = r"""
- name: Does this node need Fabric Manager?
  ansible.builtin.debug:
    msg: "{{ ('h200' | metalserve.sglang.gpu_platform).nvswitch }}"

- name: A GPU id the site adds
  ansible.builtin.debug:
    msg: "{{ 'h100' | metalserve.sglang.gpu_platform(sglang_gpu_platforms) }}"
"""

RETURN = r"""
_value:
  description: The platform entry, plus C(id).
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import catalog  # noqa: E402


def gpu_platform(gpu: str, gpu_platforms: dict[str, Any] | None = None) -> dict[str, Any]:
    """The platform table entry of a GPU id (data/gpus.yml plus sglang_gpu_platforms)."""
    return dict(catalog.gpu_platform(catalog.load_catalog(gpu_platforms=gpu_platforms).gpus, gpu), id=gpu)


class FilterModule:
    """The filter metalserve.sglang.gpu_platform."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"gpu_platform": wrap(gpu_platform)}
