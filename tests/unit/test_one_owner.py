"""One owner per fact: role YAML never repeats a constant that the plan (plugins/plugin_utils) or data/ owns.

The facts are read off the outputs, not listed by hand: every path, unit, package, URL or image a planned site
holds (the docker and the uv site of test_option_effects: servers, multi-node, PD, GB300 with IMEX, MI355X, a
router and a monitoring host), and every such value in data/. A role's tasks, vars, handlers and templates must
take them from the plan (metalserve_site) instead of writing them again; its defaults must not copy a value
data/ owns (the role default would be a second owner the moment data/ moves). Task names are prose and are not
read; neither are comments.
"""
from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any, Iterator

import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

from ansible_collections.metalserve.sglang.tests.unit import test_option_effects as sites

ROOT = Path(__file__).resolve().parents[2]
#: a fact worth owning: a path, unit, package, URL or image (no spaces; a dot or a slash; long enough to be one)
FACT = re.compile(r"^[^\s]{10,}$")


def leaves(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for value in doc.values():
            yield from leaves(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from leaves(value)
    elif isinstance(doc, str) and FACT.match(doc) and re.search(r"[/.]", doc):
        yield doc


@functools.lru_cache(maxsize=1)
def data_facts() -> frozenset[str]:
    out: set[str] = set()
    for path in sorted((ROOT / "data").rglob("*.yml")):
        if not path.name.startswith("flags-"):  # SGLang's flag tables: names, not facts a role could repeat
            out.update(leaves(yaml.safe_load(path.read_text())))
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def plan_facts() -> frozenset[str]:
    out: set[str] = set(data_facts())
    for method in ("docker", "uv"):
        site = plan_site(sites.hostvars(method), copy.deepcopy(sites.GROUPS))
        assert not site["errors"], site["errors"]
        for plan in site["plans"].values():
            out.update(leaves({k: v for k, v in plan.items() if k != "inputs"}))
        out.update(leaves(site["monitoring"]))
    return frozenset(out)


def code_lines(path: Path) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split(" #", 1)[0]
        if code.strip().startswith("#") or re.match(r"^\s*- name: ", code):
            continue
        yield number, code


def repeats(path: Path, facts: frozenset[str], root: Path = ROOT) -> list[str]:
    found = []
    for number, code in code_lines(path):
        for fact in facts:
            if re.search(rf"(?<![\w/.-]){re.escape(fact)}(?![\w/.-])", code):
                found.append(f"{path.relative_to(root)}:{number}: {fact}")
    return found


def role_files(kinds: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in (ROOT / "roles").glob("*/*/*") if p.is_file() and p.parts[-2] in kinds
                  and p.suffix in (".yml", ".j2"))


def test_role_tasks_take_the_plans_facts_from_the_plan() -> None:
    found = [line for path in role_files(("tasks", "vars", "handlers", "templates")) for line in repeats(path, plan_facts())]
    assert not found, "role YAML repeats a fact the plan owns (read it from metalserve_site):\n" + "\n".join(found)


def test_role_defaults_do_not_copy_what_data_owns() -> None:
    found = [line for path in role_files(("defaults",)) for line in repeats(path, data_facts())]
    assert not found, "a role default copies a value data/ owns (leave it empty and let the plan fill it):\n" + \
        "\n".join(found)


def test_the_check_finds_a_repeated_fact(tmp_path: Path) -> None:
    """The check itself: a task that writes one of the plan's paths literally is found, the same task reading it from
    the plan is not, and a task name mentioning it is prose."""
    fact = sorted(f for f in plan_facts() if f.startswith("/etc/"))[0]
    task = tmp_path / "main.yml"
    task.write_text(f"---\n- name: Write {fact}\n  ansible.builtin.copy:\n    dest: {fact}\n    content: x\n")
    assert repeats(task, plan_facts(), tmp_path) == [f"main.yml:4: {fact}"]
    task.write_text("---\n- name: Write it\n  ansible.builtin.copy:\n    dest: \"{{ _x.files.y.path }}\"\n")
    assert repeats(task, plan_facts(), tmp_path) == []
