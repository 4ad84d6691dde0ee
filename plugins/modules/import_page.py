#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation for the metalserve.sglang.import_page action plugin (it runs on the controller)."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: import_page
version_added: 0.3.0
author: metalserve.sglang contributors (@metalserve)
short_description: Import one revision of an SGLang cookbook page as model data
description:
  - Reads one revision of an SGLang cookbook page (C(<page>.jsx) and, where there is one, C(<page>-benchmarks.jsx)
    of C(docs/src/snippets/configs/) in sgl-project/sglang) and writes, per variant of the page, a model folder
    C(<dest>/<id>/) with C(model.yml) (only when the folder has none; an existing one only gets the revision added to
    C(cookbook_revisions)) and C(cookbook/<revision>/cells.yml) and C(benchmarks.yml). The folder is what
    C(data/models/) holds and what C(sglang_recipes) reads (an absolute path in it).
  - Every cell of the page is imported or reported with why it is left out, as a warning and in RV(models) (a GPU the
    collection does not know, with how to describe it; a value the page leaves to the operator; a command the
    release's parser refuses). Imported cells are read by the flag table of the release their image names (or the
    pinned one) exactly as that release's parser reads them.
  - The page comes from a file (O(page) as a path), a checkout of SGLang's documentation (O(docs) with O(page) as
    C(<org>/<page>) or C(<page>); the commit is git's), or a folder holding both files and a C(source.yml) note
    (O(folder)).
  - Check mode reports what would be written and writes nothing.
options:
  page:
    description: The page file (C(.../<page>.jsx)), or with O(docs) the page's name (C(zai-org/glm-5.3), C(glm-5.3)).
    type: str
  docs:
    description: A checkout of sgl-project/sglang (or of its C(docs/)); the page is found under C(docs/src/snippets/configs/).
    type: path
  folder:
    description: A folder holding the page's two files and a C(source.yml) (repository, path, files, commits, revision).
    type: path
  dest:
    description:
      - Where the model folders go (C(data/models) of a checkout of the collection, or a site's own folder).
      - A folder inside an inventory directory given with C(-i) gets a warning, as Ansible reads every YAML file
        under an inventory directory as inventory; keep it beside the inventory directory.
    type: path
    required: true
  variant:
    description: One variant of the page; unset, every variant (each its own model, C(<page>-<variant>)).
    type: str
  model_id:
    description: The model's id (with O(variant) or a page of one variant); default C(<page>) or C(<page>-<variant>).
    type: str
  commit:
    description: The upstream commit of the page file (a checkout's is read from git).
    type: str
  benchmarks_commit:
    description:
      - The upstream commit of C(<page>-benchmarks.jsx) where it was read at another commit than the page; default
        the page's commit (a checkout's is read from git).
    type: str
  org:
    description:
      - For a page file given alone, its folder under C(docs/src/snippets/configs/) in sgl-project/sglang (e.g.
        C(MiniMaxAI) for C(minimax-m3.jsx)); the imported files' source links are built on it. Read from the file's
        path when the file sits in such a folder; refused when neither says.
    type: str
  revision:
    description: The revision folder's name; default the first 8 characters of the commit.
    type: str
  architecture:
    description:
      - The checkpoint's architecture (its C(config.json) C(architectures)), written to C(model.yml); SGLang resolves
        C(auto) parsers from it where the release decides by architecture (C(data/sglang/parsers-*.yml)).
    type: str
  gpu_platforms:
    description: The site's C(sglang_gpu_platforms); cells on the GPUs it describes are imported too.
    type: dict
    default: {}
extends_documentation_fragment:
  - metalserve.sglang.attributes.controller
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
"""

EXAMPLES = r"""
- name: Import a page from a checkout of SGLang into the site's own folder
  metalserve.sglang.import_page:
    docs: /src/sglang
    page: MiniMaxAI/minimax-m3
    dest: "{{ inventory_dir | dirname }}/{{ inventory_dir | basename }}-models"
    gpu_platforms: "{{ sglang_gpu_platforms | default({}) }}"

- name: Import a page file downloaded at a known commit
  metalserve.sglang.import_page:
    page: /tmp/granite-4.2.jsx
    org: ibm-granite
    commit: c17c5b35865514f10d39417f3d866c6fbce68add
    variant: 8b
    dest: "{{ inventory_dir | dirname }}/{{ inventory_dir | basename }}-models"
"""

RETURN = r"""
models:
  description: One report per model written, with C(model), C(variant), C(revision), C(cells) (imported),
    C(published) (rows of numbers), C(left_out) (C(cell), C(gpu), C(reason) each), C(parsers) (the page's),
    C(parsers_resolved) (C(auto) resolved by the pinned release's parser table where it can be), C(unresolved) (why
    not, per parser) and C(files) (written).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

ARGUMENT_SPEC = {"page": {"type": "str"}, "docs": {"type": "path"}, "folder": {"type": "path"},
                 "dest": {"type": "path", "required": True}, "variant": {"type": "str"}, "model_id": {"type": "str"},
                 "commit": {"type": "str"}, "revision": {"type": "str"}, "architecture": {"type": "str"},
                 "benchmarks_commit": {"type": "str"}, "org": {"type": "str"},
                 "gpu_platforms": {"type": "dict", "default": {}}}


def main() -> None:
    AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True).fail_json(
        msg="metalserve.sglang.import_page runs as an action plugin on the controller")


if __name__ == "__main__":
    main()
