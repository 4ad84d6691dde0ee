"""Every role: argument_specs, defaults prefixed with the role name and equal to the specs, README table in sync."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

ROLES = sorted(p for p in (ROOT / "roles").iterdir() if p.is_dir())


def test_there_are_roles() -> None:
    assert ROLES


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_role_contract(role: Path) -> None:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    options = specs.get("options") or {}
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    assert all(name.startswith(role.name + "_") for name in options), "every variable carries the role prefix"
    assert set(defaults) <= set(options), f"defaults without a spec: {set(defaults) - set(options)}"
    for name, value in defaults.items():
        assert options[name].get("default") == value, f"{name}: default differs between defaults/ and the specs"
    for name, opt in options.items():
        assert opt.get("description"), f"{name} has no description"
        assert name in defaults or opt.get("required"), f"{name} is neither defaulted nor required"
    readme = (role / "README.md").read_text()
    table = readme.split("<!-- BEGIN generated:role-variables -->", 1)[1].split("<!-- END generated:role-variables -->")[0]
    assert re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.M) == list(options)


@pytest.mark.parametrize("role", [r for r in ROLES if (r / "meta" / "variables.yml").exists()], ids=lambda p: p.name)
def test_descriptions_file_has_only_known_keys(role: Path) -> None:
    """An unquoted flow-style description with a comma turns its tail into a key and silently cuts it short."""
    meta = yaml.safe_load((role / "meta" / "variables.yml").read_text())
    for name, info in meta["variables"].items():
        assert set(info) <= {"description", "type", "choices", "elements", "no_log", "converge_only", "read_on",
                             "range"}, \
            f"{name}: {sorted(info)}"


def included_task_files(role: Path) -> set[tuple[str, str]]:
    """(role, tasks_from) of every include_role/import_role in a role's task files, blocks included."""
    def walk(tasks: Any) -> Iterator[tuple[str, str]]:
        for task in tasks if isinstance(tasks, list) else []:
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))
            for module in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                if module in task:
                    args = task[module]
                    yield str(args["name"]).removeprefix("metalserve.sglang."), str(args.get("tasks_from", "main"))
    return {pair for path in sorted((role / "tasks").glob("*.yml")) for pair in walk(yaml.safe_load(path.read_text()))}


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_a_role_declares_the_task_files_of_other_roles_it_includes(role: Path) -> None:
    """meta/main.yml `dependencies` cannot name a tasks_from; meta/variables.yml `includes` does, and the README and the
    argument specs show it (`make docs`). The declaration is held to the tasks, both ways."""
    declared = yaml.safe_load((role / "meta" / "variables.yml").read_text()).get("includes")
    assert declared is not None, "meta/variables.yml has no `includes` (write `includes: []` when there are none)"
    assert {(i["role"], i["tasks_from"]) for i in declared} == included_task_files(role)
    assert all(i.get("why") for i in declared), "each include says why"
    assert all(f"metalserve.sglang.{i['role']} ({i['tasks_from']})" in (role / "README.md").read_text() for i in declared)


def outside_reads(text: str) -> list[str]:
    """Lines that reach out of the role: role_path ~ '/../other_role/...', roles/<other>/..."""
    return [f"{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
            if "../" in line.split(" #", 1)[0] or re.search(r"(?<![\w.])roles/", line.split(" #", 1)[0])]


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_a_role_reads_only_its_own_folder(role: Path) -> None:
    """No path out of the role in what the role runs (its tasks, vars, defaults, handlers, templates)."""
    found = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(role.rglob("*")) if path.is_file()
             and path.parent.name in ("tasks", "vars", "defaults", "handlers", "templates")
             for line in outside_reads(path.read_text())]
    assert not found, "\n".join(found)
    # the tree before issue 35: sglang_router read sglang_server's health helper from its folder
    before = ROOT / "tests" / "fixtures" / "one_owner" / "2a35766" / "roles" / "sglang_router" / "vars" / "main.yml.txt"
    assert any("/../sglang_server/files/wait_healthy.py" in line for line in outside_reads(before.read_text()))


def test_the_include_scan_finds_what_the_tasks_include(tmp_path: Path) -> None:
    tasks = tmp_path / "r" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text("---\n- name: A\n  block:\n    - name: B\n      ansible.builtin.include_role:\n"
                                    "        name: metalserve.sglang.nftables\n- name: C\n"
                                    "  ansible.builtin.include_role:\n    name: metalserve.sglang.preflight\n"
                                    "    tasks_from: plan\n")
    assert included_task_files(tmp_path / "r") == {("nftables", "main"), ("preflight", "plan")}
