# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.probe_files: a thin plugin over plugins/plugin_utils/site/runtime.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: probe_files
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: A plan's files as M(metalserve.sglang.node_state) compares them
description:
  - "The site plan holds the files a node gets as C({name: {path, content, mode, owner, group}}). This returns them
    as node_state C(files) entries, with the SHA-256 of the content instead of the content, so a role probes them
    all in one module run. Files whose content is not known yet (C(None)) are left out."
positional: _input
options:
  _input:
    description: The files of a plan, by name.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Read which of the plan's files differ on the node
  metalserve.sglang.node_state:
    files: "{{ metalserve_site.plans[inventory_hostname].monitoring.files | metalserve.sglang.probe_files }}"
  register: probe
"""

RETURN = r"""
_value:
  description: "One C({name, path, sha256, mode, owner, group}) per file."
  type: list
  elements: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime  # noqa: E402


def probe_files(files: dict[str, Any]) -> list[dict[str, Any]]:
    return runtime.probe_files(files)


class FilterModule:
    """The filter metalserve.sglang.probe_files."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"probe_files": wrap(probe_files)}
