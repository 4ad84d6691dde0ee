# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter metalserve.sglang.openpgp_key_check: a thin plugin over plugins/plugin_utils/drivers/openpgp.py,
where its logic and unit tests are."""
from __future__ import annotations

DOCUMENTATION = r"""
name: openpgp_key_check
version_added: 0.2.0
author: metalserve.sglang contributors (@metalserve)
short_description: Whether a downloaded repository key is the one its vendor publishes
description:
  - Used by the nvidia_driver and rocm_driver roles after they download a repository's signing key and before apt
    trusts it; the logic is in plugins/plugin_utils/drivers/openpgp.py.
  - Reads the OpenPGP packets of the file (ASCII-armored or binary) and computes the V4 fingerprint of every key and
    subkey in it (RFC 4880 section 12.2), the figure C(gpg --show-keys) prints, without needing gpg on the node.
positional: _input, fingerprint, host, variable, source
options:
  _input:
    description: The key file, base64-encoded (the C(content) that M(ansible.builtin.slurp) returns).
    type: str
    required: true
  fingerprint:
    description: The fingerprint expected, 40 hex digits; spaces and case are ignored.
    type: str
    required: true
  host:
    description: The host, named in the message.
    type: str
    default: this host
  variable:
    description: The inventory variable that holds the fingerprint, named in the message.
    type: str
    default: the fingerprint
  source:
    description: Where the key came from, named in the message.
    type: str
    default: the key URL
"""

EXAMPLES = r"""
- name: Read the key just downloaded
  ansible.builtin.slurp:
    src: /etc/apt/keyrings/cuda-archive-keyring.asc.download
  register: key

- name: It is NVIDIA's
  ansible.builtin.assert:
    that: _check.ok
    fail_msg: "{{ _check.msg }}"
  vars:
    _check: >-
      {{ key.content | metalserve.sglang.openpgp_key_check('EB693B3035CD5710E231E123A4B469963BF863CC',
         inventory_hostname, 'nvidia_driver_repo_key_fingerprint', 'https://developer.download.nvidia.com/...') }}
"""

RETURN = r"""
_value:
  description: C(ok), the primary keys' C(fingerprints) found, and C(msg) (empty when ok) naming the host, what was found and
    what was expected.
  type: dict
"""

from typing import Any, Callable  # noqa: E402

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import openpgp  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap  # noqa: E402


def openpgp_key_check(content: str, fingerprint: str, host: str = "this host", variable: str = "the fingerprint",
                      source: str = "the key URL", path: str = "") -> dict[str, Any]:
    return openpgp.check(content, fingerprint, host, variable, source, path)


class FilterModule:
    """The filter metalserve.sglang.openpgp_key_check."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"openpgp_key_check": wrap(openpgp_key_check)}
