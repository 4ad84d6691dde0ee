# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files the controller writes (rendered/, the plan artifact, the upgrade's state): whole or not at all."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write(path: Path, data: bytes, mode: int) -> None:
    """Write `data` to `path` with `mode` through a temporary file in the same folder and a rename, so a reader
    never sees half a file and an interrupted run leaves the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_text(path: Path, text: str, mode: int) -> bool:
    """write() of a text, unless the file already holds it; whether it wrote."""
    data = text.encode("utf-8")
    if path.is_file() and path.read_bytes() == data and (path.stat().st_mode & 0o7777) == mode:
        return False
    write(path, data, mode)
    return True
