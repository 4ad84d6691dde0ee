"""node_state reads a node's files, folders, links, accounts and commands against what a role wants (pure
reads, on this machine's real filesystem and accounts)."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from ansible_collections.metalserve.sglang.plugins.modules import node_state as ns


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run(argv: list[str]) -> tuple[int, str, str]:
    """What the module's run_command(handle_exceptions=False) gives: (rc, stdout, stderr), OSError when the program
    cannot start."""
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    return out.returncode, out.stdout, out.stderr


def test_files_by_hash_mode_and_absence(tmp_path: Path) -> None:
    unit = tmp_path / "a.service"
    unit.write_text("[Unit]\n")
    os.chmod(unit, 0o644)
    me = ns._owner(unit.stat())
    same = {"name": "unit", "path": str(unit), "sha256": sha("[Unit]\n"), "mode": "0644", "owner": me[0], "group": me[1]}
    state, differ = ns.probe({"files": [
        same,
        {**same, "name": "content", "sha256": sha("[Unit]\nX=1\n")},
        {**same, "name": "mode", "mode": "0600"},
        {"name": "missing", "path": str(tmp_path / "nope"), "sha256": sha("x")},
        {"name": "gone", "path": str(tmp_path / "nope"), "absent": True},
        {"name": "still_there", "path": str(unit), "absent": "true"},
    ]}, None, run)
    assert differ == ["content", "mode", "missing", "still_there"]
    assert state["unit"]["sha256"] == sha("[Unit]\n") and state["unit"]["mode"] == "0644"
    assert state["missing"] == {"exists": False}


def test_folders_links_accounts_and_commands(tmp_path: Path) -> None:
    (tmp_path / "venvs" / "0.5.23").mkdir(parents=True)
    (tmp_path / "current").symlink_to(tmp_path / "venvs" / "0.5.23")
    state, differ = ns.probe({
        "directories": [{"name": "root", "path": str(tmp_path)}, {"name": "nodir", "path": str(tmp_path / "x")}],
        "links": [{"name": "current", "path": str(tmp_path / "current"), "src": str(tmp_path / "venvs" / "0.5.23")},
                  {"name": "stale", "path": str(tmp_path / "current"), "src": str(tmp_path / "venvs" / "0.5.13")}],
        "groups": [{"name": "g_root", "group": "root"}, {"name": "g_none", "group": "metalserve-no-such-group"}],
        "users": [{"name": "u_root", "user": "root"}, {"name": "u_none", "user": "metalserve-no-such-user"}],
        "commands": [{"name": "echo", "argv": ["echo", "uv 0.13.9"]}, {"name": "none", "argv": ["/nonexistent/uv"]}],
    }, None, run)
    assert differ == ["nodir", "stale", "g_none", "u_none"]
    assert state["echo"] == {"rc": 0, "stdout": "uv 0.13.9"} and state["none"]["rc"] == 127


def test_units_without_systemctl_differ() -> None:
    state, differ = ns.probe({"units": [{"name": "service", "unit": "x.service", "enabled": True}]}, None, run)
    assert differ == ["service"] and state["service"] == {"known": False}


def test_units_read_from_systemctl(tmp_path: Path) -> None:
    fake = tmp_path / "systemctl"
    fake.write_text("#!/bin/sh\nprintf 'ActiveState=active\\nUnitFileState=enabled\\nLoadState=loaded\\n'\n")
    fake.chmod(0o755)
    state, differ = ns.probe({"units": [{"name": "up", "unit": "a.service", "enabled": True, "active": True},
                                        {"name": "want_stopped", "unit": "a.service", "active": "false"}]}, str(fake), run)
    assert state["up"] == {"active": "active", "enabled": "enabled", "loaded": "loaded", "job": False}
    assert differ == ["want_stopped"]


def test_a_queued_job_is_reported(tmp_path: Path) -> None:
    """systemctl show prints a unit's pending job as its id (Job=4711) and no Job line without one (systemctl-show.c);
    health.yml waits on it, since a restart queued with no_block leaves the old server answering /health until its stop
    is done."""
    fake = tmp_path / "systemctl"
    fake.write_text("#!/bin/sh\nprintf 'ActiveState=active\\nUnitFileState=enabled\\nLoadState=loaded\\nJob=4711\\n'\n")
    fake.chmod(0o755)
    state, _differ = ns.probe({"units": [{"name": "s", "unit": "a.service"}]}, str(fake), run)
    assert state["s"]["job"] is True


def test_module_runs_commands_through_run_command(tmp_path: Path) -> None:
    """The module itself, as Ansible runs it (arguments in a JSON file): argv goes to run_command as given (no ~ or
    $VAR expansion), a program that cannot start reads as rc 127, nothing fails."""
    import json
    import sys

    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"commands": [
        {"name": "literal", "argv": ["echo", "$HOME", "~"]},
        {"name": "none", "argv": ["/nonexistent/uv", "--version"]}],
        "files": [{"name": "unit", "path": str(tmp_path / "missing.service"), "sha256": sha("x"), "mode": "0644"}]}}))
    # the collection's module_utils on the path, as AnsiballZ bundles them
    collections = str(Path(ns.__file__).parents[5])
    out = subprocess.run([sys.executable, ns.__file__, str(args)], capture_output=True, text=True, check=False,
                         env={**os.environ, "HOME": "/home/nobody-here", "PYTHONPATH": collections})
    result = json.loads(out.stdout)
    assert out.returncode == 0 and not result.get("failed"), out.stdout + out.stderr
    commands = {k: result["state"][k] for k in ("literal", "none")}
    assert commands == {"literal": {"rc": 0, "stdout": "$HOME ~"}, "none": {"rc": 127, "stdout": ""}}
    # the names come back as given: nothing of the request is masked in the answer (a no_log option would mask them)
    assert result["differ"] == ["unit"] and result["state"]["unit"] == {"exists": False}


def test_listings_select_what_ansible_find_selects(tmp_path: Path) -> None:
    """The files a listing returns are those ansible.builtin.find (use_regex, file_type file) returns for the same
    folder and pattern: its own filter (pfilter) and its regular-file test decide the expectation."""
    from ansible.modules import find  # pylint: disable=import-outside-toplevel

    units = tmp_path / "system"
    units.mkdir()
    for name in ("sglang-glm-5.3.service", "sglang-glm-5.3-r0.service", "sglang-glm-5.3-r1.service",
                 "sglang-glm-5.30.service", "xsglang-glm-5.3.service", "sglang-glm-5.3-r2.service.bak", ".hidden"):
        (units / name).write_text("[Unit]\n")
    (units / "sglang-glm-5.3-r3.service").symlink_to(units / "sglang-glm-5.3.service")   # a link: not a file
    (units / "sglang-glm-5.3-r4.service").mkdir()                                          # a folder: not a file
    pattern = r"^sglang-glm-5\.3(-r[0-9]+)?\.service$"
    expected = sorted(n for n in os.listdir(units) if find.pfilter(n, [pattern], None, True)
                      and os.path.isfile(units / n) and not os.path.islink(units / n))
    # find's own hidden-name rule (hidden=false): what `.*` selects beside the dot-name
    every = sorted(n for n in os.listdir(units) if find.pfilter(n, [".*"], None, True) and not n.startswith(".")
                   and os.path.isfile(units / n) and not os.path.islink(units / n))
    state, differ = ns.probe({"listings": [{"name": "units", "path": str(units), "pattern": pattern},
                                           {"name": "all", "path": str(units), "pattern": ".*"},
                                           {"name": "none", "path": str(tmp_path / "nope"), "pattern": pattern}]},
                             None, run)
    assert differ == [] and state["units"] == {"exists": True, "files": expected}
    assert state["all"]["files"] == every and ".hidden" not in every
    assert expected == ["sglang-glm-5.3-r0.service", "sglang-glm-5.3-r1.service", "sglang-glm-5.3.service"]
    assert state["none"] == {"exists": False, "files": []}


def test_a_listing_it_cannot_make_fails(tmp_path: Path) -> None:
    import pytest  # pylint: disable=import-outside-toplevel

    with pytest.raises(ns.ListingError, match=r"listing units: cannot list .* with '\(': "):
        ns.probe({"listings": [{"name": "units", "path": str(tmp_path), "pattern": "("}]}, None, run)
    (tmp_path / "file").write_text("")
    with pytest.raises(ns.ListingError, match="Not a directory"):
        ns.probe({"listings": [{"name": "units", "path": str(tmp_path / "file"), "pattern": ".*"}]}, None, run)
