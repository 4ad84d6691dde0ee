"""Where the playbooks write on the controller when they run as AWX/AAP runs a job: ansible-runner with the job's copy
of the project as its working directory, started from another folder (ansible-runner passes that folder on as $PWD),
and once with $PWD unset. Every output (rendered/, the plan artifact, acceptance, VERIFY.md, benchmark, SIZING.md, the
upgrade's folder) must land under the project's rendered/, and nothing in the folder the runner was started from.

render.yml and size.yml run for real (they need no host). The playbooks that need nodes (accept, verify, benchmark,
upgrade, site) are read as Ansible reads them: each play's `vars`, `vars_files` and the role defaults that hold an
output path are templated by Ansible inside the same ansible-runner job, so the expressions are judged by the
templating that will resolve them, in the conditions of a job."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
#: every variable of a playbook or role that names something the playbooks write on the controller
OUTPUT_VARS = {"benchmark_dir", "verify_report", "upgrade_dir", "size_benchmark_dir", "node_acceptance_report_dir"}
#: the plan actions' `artifact` (site.yml, accept.yml, render.yml), render_plan's and size_report's `dest`
TASK_ARGS = (("metalserve.sglang.plan", "artifact"), ("metalserve.sglang.render_plan", "dest"),
             ("metalserve.sglang.render_plan", "artifact"),
             ("metalserve.sglang.size_report", "dest"))


def project_of(tmp: Path) -> tuple[Path, Path]:
    """A job's private data dir with an empty project (what AWX copies in), and a folder to start the runner from."""
    private, elsewhere = tmp / "private", tmp / "elsewhere"
    (private / "project").mkdir(parents=True)
    elsewhere.mkdir()
    (private / "project" / "ansible.cfg").write_text("[defaults]\nstdout_callback = default\n")
    return private, elsewhere


def run_job(private: Path, elsewhere: Path, playbook: str, extravars: dict[str, Any] | None = None,
            pwd: bool = True, inventory: Path | None = None) -> Any:
    """One ansible-runner job in private/project, the runner started from `elsewhere` (with PWD naming it, as a
    shell sets it, or with PWD unset)."""
    import ansible_runner  # noqa: PLC0415 - a test dependency (requirements/test.txt)

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PWD"}
    if pwd:
        env["PWD"] = str(elsewhere)
    env.update({"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"),
                "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"})
    saved, cwd = dict(os.environ), os.getcwd()
    os.chdir(elsewhere)
    os.environ.clear()
    os.environ.update(env)
    try:
        return ansible_runner.run(private_data_dir=str(private), playbook=playbook, quiet=True, ident=playbook,
                                  extravars=extravars or {}, inventory=str(inventory) if inventory else None)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)


def job(tmp: Path, playbook: str, extravars: dict[str, Any] | None = None, pwd: bool = True,
        inventory: Path | None = None) -> tuple[Any, Path, Path]:
    private, elsewhere = project_of(tmp)
    return run_job(private, elsewhere, playbook, extravars, pwd, inventory), private / "project", elsewhere


def output(runner: Any) -> str:
    return runner.stdout.read()


@pytest.mark.parametrize("pwd", [True, False], ids=["PWD-elsewhere", "PWD-unset"])
def test_render_writes_under_the_project(tmp_path: Path, pwd: bool) -> None:
    runner, project, elsewhere = job(tmp_path, "metalserve.sglang.render", pwd=pwd,
                                     inventory=ROOT / "inventories" / "example")
    assert runner.rc == 0, output(runner)[-3000:]
    assert (project / "rendered" / "PLAN.md").is_file() and (project / "rendered" / "plan.json").is_file()
    assert not list(elsewhere.iterdir()), list(elsewhere.iterdir())


def test_a_relative_plan_artifact_is_the_projects(tmp_path: Path) -> None:
    runner, project, elsewhere = job(tmp_path, "metalserve.sglang.render", {"sglang_plan_artifact": "plans/site.json"},
                                     inventory=ROOT / "inventories" / "example")
    assert runner.rc == 0, output(runner)[-3000:]
    assert (project / "plans" / "site.json").is_file() and not (project / "rendered" / "plan.json").exists()
    assert not list(elsewhere.iterdir())


@pytest.mark.parametrize("pwd", [True, False], ids=["PWD-elsewhere", "PWD-unset"])
def test_size_writes_under_the_project(tmp_path: Path, pwd: bool) -> None:
    runner, project, elsewhere = job(tmp_path, "metalserve.sglang.size", {"size_gpu": "h200", "size_quant": "fp8",
                                                                          "size_requests_per_s": 4}, pwd=pwd)
    assert runner.rc == 0, output(runner)[-3000:]
    assert (project / "rendered" / "SIZING.md").is_file()
    assert not list(elsewhere.iterdir())


def output_expressions() -> dict[str, str]:
    """{'<playbook or role>: <variable or task argument>': the Jinja expression the collection gives it}."""
    found: dict[str, str] = {}
    for book in sorted((ROOT / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(book.read_text()) or []:
            variables = dict(play.get("vars") or {})
            for name in play.get("vars_files") or []:
                variables.update(yaml.safe_load((book.parent / name).read_text()))
            for name, value in variables.items():
                if name in OUTPUT_VARS:
                    found[f"{book.name}: {name}"] = value
            for task in play.get("tasks") or []:
                for action, arg in TASK_ARGS:
                    if action in task and arg in (task[action] or {}):
                        found[f"{book.name}: {action} {arg}"] = task[action][arg]
    for defaults in sorted((ROOT / "roles").glob("*/defaults/main.yml")):
        for name, value in (yaml.safe_load(defaults.read_text()) or {}).items():
            if name in OUTPUT_VARS:
                found[f"role {defaults.parents[1].name}: {name}"] = value
    return found


def templated(tmp: Path, found: dict[str, Any], extravars: dict[str, Any]) -> tuple[dict[str, str], Path]:
    """Each expression of `found` as Ansible templates it in a job (project copy, runner started elsewhere)."""
    # `omit` (an argument left out) shown as the word
    shown = {key: "{{ " + value.strip().removeprefix("{{").removesuffix("}}").strip().replace(" omit", " 'omitted'")
                  + " }}" for key, value in found.items()}
    play = [{"name": "Template each output path as the playbooks do", "hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": "Show them", "ansible.builtin.debug": {"msg": "OUTPUTS={{ _outputs | to_json }}"},
                        "vars": {"_outputs": shown}}]}]
    private, elsewhere = project_of(tmp)
    (private / "project" / "show.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    runner = run_job(private, elsewhere, "show.yml", extravars)
    text = output(runner)
    assert runner.rc == 0, text[-3000:]
    assert not list(elsewhere.iterdir())
    return json.loads(json.loads('"' + re.search(r'"msg": "OUTPUTS=(.*)"', text).group(1) + '"')), private / "project"


def test_every_playbooks_outputs_land_under_the_project(tmp_path: Path) -> None:
    found = output_expressions()
    # the places the playbooks write on the controller today; a new one must be named here (and land right)
    assert {key.split(": ")[0] for key in found} >= {"site.yml", "accept.yml", "render.yml", "size.yml", "verify.yml",
                                                     "benchmark.yml", "upgrade.yml", "role node_acceptance"}, found
    values, project = templated(tmp_path / "default", found, {})
    wrong = {key: value for key, value in values.items()
             if not value.startswith(str(project / "rendered") + "/") and value not in ("omitted", str(project / "rendered"))}
    assert not wrong and len(values) == len(found), wrong
    # a relative sglang_plan_artifact (AWX: plans/<site>.json committed with the project) is the project's file
    values, project = templated(tmp_path / "artifact", found, {"sglang_plan_artifact": "plans/site.json"})
    artifacts = {key: value for key, value in values.items() if key.endswith(" artifact")}
    assert len(artifacts) == 3 and set(artifacts.values()) == {str(project / "plans" / "site.json")}, artifacts
    # one folder moves them all
    values, project = templated(tmp_path / "moved", found, {"sglang_render_dir": "out/here"})
    assert all(v.startswith(str(project / "out" / "here")) for v in values.values() if v != "omitted"), values


def test_nothing_reads_the_shells_working_directory() -> None:
    """No playbook, task file or role reads $PWD (ansible-runner passes on the shell's, or none): a new output (the
    importer's import_dest was one) takes its folder from output_path like the others."""
    readers = [f"{path.relative_to(ROOT)}:{number}" for path in sorted(ROOT.glob("playbooks/**/*.yml"))
               + sorted(ROOT.glob("roles/*/*/*.yml"))
               for number, line in enumerate(path.read_text().splitlines(), 1)
               if re.search(r"lookup\(\s*'(ansible\.builtin\.)?env'\s*,\s*'PWD'", line)]
    assert readers == [], readers
