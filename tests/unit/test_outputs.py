"""plugin_utils/outputs.output_path: the one folder the playbooks write under, taken from the working directory."""
from __future__ import annotations

import os

from ansible_collections.metalserve.sglang.plugins.plugin_utils.outputs import output_path


def test_unset_or_empty_is_rendered_in_the_working_directory() -> None:
    assert output_path(None, cwd="/runner/project") == "/runner/project/rendered"
    assert output_path("", "benchmark", cwd="/runner/project") == "/runner/project/rendered/benchmark"


def test_relative_absolute_and_home() -> None:
    assert output_path("out/x", "upgrade", cwd="/runner/project") == "/runner/project/out/x/upgrade"
    assert output_path("/srv/state", "upgrade", cwd="/runner/project") == "/srv/state/upgrade"
    assert output_path("~/r", cwd="/x") == os.path.join(os.path.expanduser("~"), "r")
    assert output_path("plans/../plans/site.json", cwd="/p") == "/p/plans/site.json"


def test_the_processes_working_directory_when_none_is_given(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", "/somewhere/else")
    assert output_path(None) == str(tmp_path / "rendered")
