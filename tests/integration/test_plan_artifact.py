"""site.yml's planning play and the plan artifact, for real (ansible-playbook, three local hosts, nothing changed on
them: `--tags plan` and `--tags never` run only the planning plays):

- a run over the whole inventory makes the artifact (rendered/plan.json, or sglang_plan_artifact), and a second
  run leaves the file as it was;
- a --limit run without sglang_plan_artifact plans the whole site (it sees every host) and writes nothing;
- with sglang_plan_artifact, a --limit run applies it; one whose hosts' inputs changed since is refused before any
  change, naming the host and the variable (never a host whose inputs did not change);
- the remedy it names works: a run over the whole inventory makes it again;
- with sglang_plan_artifact set, an inventory subset applies it, and refuses a missing one;
- --tags plan with --limit is refused.
The AWX/AAP job slices against the lab, through ansible-runner, are in test_lab_slices.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
HOSTS = {"h1": {}, "h2": {}, "r1": {}}


def inventory(path: Path, changed: dict | None = None, hosts: tuple[str, ...] = ("h1", "h2", "r1")) -> Path:
    servers = {h: (changed or {}).get(h) for h in ("h1", "h2") if h in hosts}
    doc = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                            "sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"},
                   "children": {"servers": {"hosts": servers},
                                "routers": {"hosts": {"r1": None} if "r1" in hosts else {},
                                            "vars": {"sglang_role": "router",
                                                     "sglang_router_workers_group": "servers"}}}}}
    path.write_text(yaml.safe_dump(doc))
    return path


def site(inv: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_CACHE_PLUGIN": "memory"}
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv), "playbooks/site.yml", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=300)


def said(proc: subprocess.CompletedProcess) -> str:
    """The output as one line of words (the yaml callback folds long messages and doubles single quotes)."""
    return " ".join((proc.stdout + proc.stderr).replace("''", "'").split())


def recap(out: str) -> dict[str, str]:
    return {h: line for h, line in re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M) if h != "localhost"}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("artifact")
    inv = inventory(tmp / "hosts.yml")
    render_dir = tmp / "rendered"
    first = site(inv, "--tags", "plan", "-e", f"sglang_render_dir={render_dir}")
    assert first.returncode == 0, first.stdout[-3000:]
    path = render_dir / "plan.json"
    stamp = path.stat().st_mtime_ns
    second = site(inv, "--tags", "plan", "-e", f"sglang_render_dir={render_dir}")
    return {"tmp": tmp, "inv": inv, "render_dir": render_dir, "path": path, "first": first, "second": second,
            "stamp": stamp}


def test_a_whole_run_makes_it_once(made: dict) -> None:
    data = json.loads(made["path"].read_text())
    assert sorted(data["hosts"]) == ["h1", "h2", "r1"] and sorted(data["plans"]) == ["h1", "h2", "r1"]
    assert data["groups"]["servers"] == ["h1", "h2"] and data["hosts"]["h1"]["groups"] == ["servers"]
    assert "default_ipv4" in data["hosts"]["h1"]["facts"]  # the facts the planning play gathered are inputs
    assert made["second"].returncode == 0
    assert made["path"].stat().st_mtime_ns == made["stamp"]  # the same plan: the file is left as it was
    assert all("changed=0" in line for line in recap(made["second"].stdout).values()), made["second"].stdout[-2000:]


def test_limit_with_the_declared_artifact_applies_it(made: dict) -> None:
    proc = site(made["inv"], "--tags", "never", "--limit", "h2", "-e", f"sglang_plan_artifact={made['path']}", "-v")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert f"applied the plan artifact {made['path']} to 1 host(s) (--limit with sglang_plan_artifact: the run covers " \
           "1 of the inventory's 3 host(s))" in said(proc)


def test_limit_refuses_changed_inputs_then_a_whole_run_makes_it_again(made: dict, tmp_path: Path) -> None:
    render_dir = tmp_path / "rendered"
    render_dir.mkdir()
    (render_dir / "plan.json").write_text(made["path"].read_text())
    inv = inventory(tmp_path / "hosts.yml", changed={"h2": {"sglang_rack": "row-7"}})
    artifact = f"sglang_plan_artifact={render_dir / 'plan.json'}"
    proc = site(inv, "--tags", "never", "--limit", "h1,h2", "-e", artifact)
    assert proc.returncode != 0
    out = said(proc)
    assert "refused before anything changed: this run covers part of the site (--limit" in out
    named = out.split("does not match what the run sees:", 1)[1].split("A plan made from")[0]
    assert named.strip() == "- h2: sglang_rack set now (unset when the artifact was made)"
    assert "--tags plan" in out
    assert not re.search(r"^TASK \[.*(preflight|install|Install)", proc.stdout, re.M)  # nothing after the plan ran
    # the remedy: a run over the whole inventory plans the site again and writes the artifact; then --limit applies
    whole = site(inv, "--tags", "plan", "-e", artifact)
    assert whole.returncode == 0, whole.stdout[-3000:]
    again = site(inv, "--tags", "never", "--limit", "h1,h2", "-e", artifact)
    assert again.returncode == 0, again.stdout[-3000:]


def test_limit_without_the_declared_artifact_plans_the_whole_site(made: dict, tmp_path: Path) -> None:
    """The inventory is the site: a --limit run sees every host and plans them all (the site checker included), as a
    whole run does; it writes no artifact, which only a run over every host makes."""
    proc = site(made["inv"], "--tags", "never", "--limit", "r1", "-e", f"sglang_render_dir={tmp_path}", "-v")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "planned 3 host(s)" in said(proc)
    assert not (tmp_path / "plan.json").exists()


def test_declared_artifact_applies_to_an_inventory_subset_and_refuses_a_missing_one(made: dict, tmp_path: Path) -> None:
    part = inventory(tmp_path / "part.yml", hosts=("h2", "r1"))  # what a job slice's inventory holds
    ok = site(part, "--tags", "never", "-e", f"sglang_plan_artifact={made['path']}", "-v")
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert "sglang_plan_artifact is set: the inventory's 2 host(s) apply the site's plan from it" in said(ok)
    gone = site(part, "--tags", "never", "-e", f"sglang_plan_artifact={tmp_path / 'none.json'}")
    assert gone.returncode != 0
    assert f"there is none at {tmp_path / 'none.json'}" in said(gone)


def test_tags_plan_with_limit_is_refused(made: dict) -> None:
    proc = site(made["inv"], "--tags", "plan", "--limit", "h1", "-e", f"sglang_render_dir={made['render_dir']}")
    assert proc.returncode != 0
    assert "--tags plan makes the site's plan artifact from every host of the inventory" in said(proc)
