"""Files the controller writes (plugin_utils/atomic.py) and the paused collector of the planning actions
(plugin_utils/gc_paused.py). Expectations come from the operating system (stat, the folder's listing) and from
Python's gc module, not from the code under test."""
from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils import atomic, gc_paused


def test_a_file_is_written_whole_with_its_mode_and_nothing_else_is_left(tmp_path: Path) -> None:
    folders: set[Path] = set()
    big = os.urandom(3 * 1024 * 1024)  # more than one write() may take at once on a pipe or a slow filesystem
    atomic.write(tmp_path / "a" / "b" / "unit.service", b"[Unit]\n", 0o644, folders)
    atomic.write(tmp_path / "a" / "b" / "env", big, 0o600, folders)
    atomic.write(tmp_path / "a" / "b" / "env", b"NEW=1\n", 0o640, folders)  # replaces, with the new mode
    assert (tmp_path / "a" / "b" / "unit.service").read_bytes() == b"[Unit]\n"
    assert os.stat(tmp_path / "a" / "b" / "unit.service").st_mode & 0o7777 == 0o644
    assert (tmp_path / "a" / "b" / "env").read_bytes() == b"NEW=1\n"
    assert os.stat(tmp_path / "a" / "b" / "env").st_mode & 0o7777 == 0o640
    assert sorted(os.listdir(tmp_path / "a" / "b")) == ["env", "unit.service"]  # no temporary file left
    atomic.write(tmp_path / "c" / "big", big, 0o755)  # without a folder set
    assert (tmp_path / "c" / "big").read_bytes() == big and os.stat(tmp_path / "c" / "big").st_mode & 0o7777 == 0o755


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic.write(target, "not bytes", 0o644)  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["plan.json"]


def test_the_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with gc_paused.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused.paused():
        raise RuntimeError("the plan failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused.paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()
