# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files the controller writes (rendered/, the plan artifact, the upgrade's state): whole or not at all."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write(path: Path, data: bytes, mode: int, folders: set[Path] | None = None) -> None:
    """Write `data` to `path` with `mode` through a temporary file in the same folder and a rename, so a reader
    never sees half a file and an interrupted run leaves the old one. `folders`: folders known to exist (a caller
    writing thousands of files passes one set; each folder is then made or checked once)."""
    parent = path.parent
    if folders is None or parent not in folders:
        parent.mkdir(parents=True, exist_ok=True)
        if folders is not None:
            folders.add(parent)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str, mode: int) -> bool:
    """write() of a text, unless the file already holds it; whether it wrote."""
    data = text.encode("utf-8")
    if path.is_file() and path.read_bytes() == data and (path.stat().st_mode & 0o7777) == mode:
        return False
    write(path, data, mode)
    return True
