"""The filters and docs through Ansible itself: FQCN resolution, AnsibleFilterError, ansible-doc, build."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
ENV = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
       "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_LOCALHOST_WARNING": "0",
       "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"}


def adhoc(expression: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "ansible"), "localhost", "-m", "ansible.builtin.debug", "-a",
                           f"msg={{{{ {expression} }}}}", "-o"], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, check=False, timeout=120)


def test_filters_resolve_by_fqcn() -> None:
    proc = adhoc("{'gpu': 'h200', 'quant': 'bf16', 'strategy': 'balanced', 'nodes': 2} | metalserve.sglang.serve_args(1, '10.9.9.9') | join(' ')")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--tp-size 16 --nnodes 2 --node-rank 1 --dist-init-addr 10.9.9.9:20000" in proc.stdout
    proc = adhoc("{'prefill': ['http://p:30000'], 'decode': ['http://d:30100']} | metalserve.sglang.router_args "
                 "| join(' ')")
    assert "--pd-disaggregation --prefill http://p:30000 --decode http://d:30100" in proc.stdout


def test_engine_errors_surface_as_filter_errors() -> None:
    proc = adhoc("{'gpu': 'mi355x', 'strategy': 'balanced', 'speculative': 'mtp-516'} | metalserve.sglang.recipe")
    assert proc.returncode != 0
    assert "sglang_speculative: mtp-516 is not available on mi355x (amd)" in proc.stdout + proc.stderr


MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
FILTERS = sorted(p.stem for p in (ROOT / "plugins" / "filter").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("kind,name", [("filter", f) for f in FILTERS] + [("module", m) for m in MODULES])
def test_ansible_doc(kind: str, name: str) -> None:
    proc = subprocess.run([str(BIN / "ansible-doc"), "-t", kind, "--json", f"metalserve.sglang.{name}"],
                          capture_output=True, text=True, env=ENV, cwd=ROOT, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)[f"metalserve.sglang.{name}"]["doc"]
    released = set(yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text())["releases"])
    # a plugin new since the last release names the next one (its minor, as changelogs/fragments' minor_changes make it)
    major, minor = max(tuple(int(x) for x in v.split(".")[:2]) for v in released)
    upcoming = {yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"], f"{major}.{minor + 1}.0"}
    assert doc["short_description"] and doc["version_added"] in released | upcoming


def test_collection_builds(tmp_path: Path) -> None:
    proc = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path), str(ROOT)],
                          capture_output=True, text=True, env=ENV, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    tarball = tmp_path / f"metalserve-sglang-{version}.tar.gz"
    import tarfile
    names = tarfile.open(tarball).getnames()
    assert "data/models/glm-5.3/cookbook/8e04be51/cells.yml" in names and "plugins/plugin_utils/recipe/engine.py" in names
    assert not [n for n in names if n.startswith((".build", ".venv", "rendered", ".cache"))]
