# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.rocm_release: a thin plugin over plugins/plugin_utils/drivers/rocm.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: rocm_release
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: The ROCm release a node gets, checked against the compatibility table
description:
  - Used by the rocm_driver role; logic in plugins/plugin_utils/drivers/rocm.py, data in data/amd/releases.yml (AMD's GPU x OS table per release).
positional: _input, distribution, version, requested
options:
  _input:
    description: The GPU platform entry (metalserve.sglang.gpu_platform).
    type: dict
    required: true
  distribution:
    description: The node's distribution (ansible_facts.distribution; Ubuntu, Debian, RedHat, Rocky).
    type: str
    required: true
  version:
    description: The distribution's version (ansible_facts.distribution_version); its major number is what data/amd/releases.yml lists.
    type: str
    required: true
  requested:
    description: 'Requested release (empty: the GPU''s default).'
    type: str
"""

EXAMPLES = r"""
- name: The ROCm release of an MI355X node on Ubuntu 24.04
  ansible.builtin.debug:
    msg: "{{ 'mi355x' | metalserve.sglang.gpu_platform | metalserve.sglang.rocm_release('Ubuntu', '24.04') }}"
"""

RETURN = r"""
_value:
  description: The release; fails with the releases that work on this OS and GPU.
  type: raw
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def rocm_release(platform: dict[str, Any], distribution: str, version: str, requested: str = "") -> str:
    return rp.choose(platform.get("id", "?"), platform, distribution, version, requested)


class FilterModule:
    """The filter metalserve.sglang.rocm_release."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"rocm_release": wrap(rocm_release)}
