# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.env_file: a thin plugin over plugins/plugin_utils/site/units.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: env_file
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: A server's environment file with its secrets filled in
description:
  - Returns the text of the EnvironmentFile (also read by C(docker --env-file)) of a server plan made by
    the M(metalserve.sglang.plan) action, with the secret values given in O(secrets).
  - The plan's own copy (what C(playbooks/render.yml) shows) holds placeholders instead of secrets; the
    two texts differ only there.
  - Refuses names that are not environment variable names, and values with newlines or a leading quote.
positional: _input, secrets
options:
  _input:
    description: A server plan (one host's entry of the plan action's RV(metalserve.sglang.plan#module:plans)).
    type: dict
    required: true
  secrets:
    description: "Secret environment values by name, for example C({'HF_TOKEN': token}); empty values are left out."
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write the environment file of this host's server (the token never shows in the log)
  ansible.builtin.copy:
    dest: "{{ plan.files.env.path }}"
    content: "{{ plan | metalserve.sglang.env_file({'HF_TOKEN': hf_token}) }}"
    mode: "0600"
  no_log: true
  vars:
    plan: "{{ metalserve_site.plans[inventory_hostname] }}"
"""

RETURN = r"""
_value:
  description: The file's text, one C(KEY=value) line per variable, sorted, secrets last.
  type: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import units  # noqa: E402


def env_file(plan: dict[str, Any], secrets: dict[str, Any] | None = None) -> str:
    return units.env_file(plan, {str(k): str(v) for k, v in (secrets or {}).items() if v not in (None, "")})


class FilterModule:
    """The filter metalserve.sglang.env_file."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"env_file": wrap(env_file)}
