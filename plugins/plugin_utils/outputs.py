# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the playbooks write on the controller: every output (rendered/, the plan artifact, acceptance, benchmark,
verify, sizing and the upgrade's folder) is under one folder, sglang_render_dir, whose default is `rendered` in the
working directory of ansible-playbook. Under AWX, AAP and ansible-runner that is the job's copy of the project
(/runner/project in an execution environment): never $PWD (the shell's, which ansible-runner passes on unchanged
from wherever it was started, and which may be unset) and never the playbook's folder (the installed collection,
read-only in an execution environment)."""
from __future__ import annotations

import os
from typing import Optional

#: sglang_render_dir when it is unset or empty (data/variables.yml documents it)
DEFAULT = "rendered"


def output_path(value: Optional[str], *parts: str, cwd: Optional[str] = None) -> str:
    """The absolute path of an output: `value` as the operator set it (unset or empty: DEFAULT), `~` expanded,
    relative to the working directory `cwd` (the process's own when not given), then `parts` below it."""
    base = os.path.expanduser(str(value)) if value not in (None, "") else DEFAULT
    path = os.path.join(cwd if cwd is not None else os.getcwd(), base, *(str(p) for p in parts))
    return os.path.normpath(path)
