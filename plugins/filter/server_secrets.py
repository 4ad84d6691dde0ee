# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.server_secrets: a thin plugin over plugins/plugin_utils/site/probe.py, where its logic
and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: server_secrets
version_added: 0.4.0
author: metalserve.sglang contributors (@metalserve)
short_description: The text of a server's secrets file (SGLang's --config YAML with its api-key)
description:
  - Returns the file C(metalserve.sglang.sglang_server) writes (0640) and SGLang reads with C(--config), holding the
    API key; M(metalserve.sglang.node_probe) compares its digest with the node's file.
positional: _input
options:
  _input:
    description: The API key.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Write the secrets file
  ansible.builtin.copy:
    dest: /etc/sglang/glm-5.3.secrets.yaml
    content: "{{ sglang_server_api_key | metalserve.sglang.server_secrets }}"
    mode: "0640"
  no_log: true
"""

RETURN = r"""
_value:
  description: "The YAML text, C(api-key: <key>)."
  type: str
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import probe  # noqa: E402


def server_secrets(api_key: Any) -> str:
    return probe.server_secrets_text(api_key)


class FilterModule:
    """The filter metalserve.sglang.server_secrets."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"server_secrets": wrap(server_secrets)}
