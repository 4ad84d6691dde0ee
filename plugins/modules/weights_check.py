#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module metalserve.sglang.weights_check: is a checkpoint directory complete? Read-only."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: weights_check
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Check that a checkpoint directory holds every shard, at the right size (and checksum)
description:
  - Reads C(model.safetensors.index.json) in O(path) and checks C(config.json), the index and every shard its
    weight_map names. Sizes (and sha256 when O(verify_checksums)) come from a manifest - the Hugging Face Hub's file
    metadata (O(hub)), a source directory (O(source_path)), or O(manifest) - else presence and non-zero size only.
  - Returns complete, missing, wrong_size, bad_checksum, present and expected bytes, and a percentage (progress of a
    running transfer). Changes nothing; check mode is the same as a normal run.
options:
  path:
    description: The checkpoint directory on the node.
    type: path
    required: true
  manifest:
    description: "Expected files, as C({name: {size, sha256}})."
    type: dict
  source_path:
    description: A complete checkpoint directory (shared mount) whose file sizes make the manifest.
    type: path
  hub:
    description:
      - Read the manifest from a Hugging Face Hub API (C(endpoint), C(repo), C(revision), C(token_file)); C(endpoint)
        and C(repo) are required (the model_weights role passes the plan's).
      - The token is read from C(token_file) on the node, never passed as an argument.
    type: dict
  verify_checksums:
    description: Also compare sha256 digests (reads every shard; slow for 1.5 TB).
    type: bool
    default: false
  fail_incomplete:
    description: Fail when the directory is not complete.
    type: bool
    default: false
extends_documentation_fragment:
  - metalserve.sglang.attributes.node
  - ansible.builtin.action_common_attributes
"""

EXAMPLES = r"""
- name: Is GLM-5.3 staged?
  metalserve.sglang.weights_check:
    path: /var/lib/sglang/models/zai-org/GLM-5.3
    hub: {endpoint: "https://huggingface.co", repo: zai-org/GLM-5.3, revision: main}
  register: staged
"""

RETURN = r"""
complete:
  description: Every expected file is present with its expected size (and checksum when verified).
  returned: always
  type: bool
missing:
  description: Expected files that are absent.
  returned: always
  type: list
  elements: str
wrong_size:
  description: Files present with another size than expected.
  returned: always
  type: list
  elements: str
bad_checksum:
  description: Files whose sha256 differs from the manifest.
  returned: always
  type: list
  elements: str
percent:
  description: Bytes present of bytes expected, in percent (null without sizes).
  returned: always
  type: int
manifest:
  description: The manifest used (file to size and sha256).
  returned: always
  type: dict
free_bytes:
  description: Free bytes on the filesystem holding the path (or its nearest existing parent).
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.metalserve.sglang.plugins.module_utils import weights_manifest


def main():
    module = AnsibleModule(argument_spec={
        "path": {"type": "path", "required": True},
        "manifest": {"type": "dict"},
        "source_path": {"type": "path"},
        "hub": {"type": "dict"},
        "verify_checksums": {"type": "bool", "default": False},
        "fail_incomplete": {"type": "bool", "default": False},
    }, mutually_exclusive=[["manifest", "source_path", "hub"]], supports_check_mode=True)
    params = module.params

    def fetch(url, headers):
        return fetch_url(module, url, headers=headers, timeout=60)

    try:
        result = weights_manifest.staged(params["path"], params["source_path"], params["hub"], fetch,
                                         params["verify_checksums"], params["manifest"])
    except weights_manifest.HubError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg=f"could not read the manifest: {exc}")
    if params["fail_incomplete"] and not result["complete"]:
        module.fail_json(msg=f"{params['path']} is incomplete: {result['summary']}", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
