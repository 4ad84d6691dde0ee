"""data/sglang/parsers-<release>.yml is what the release's own code says (tools/sglang_parser_table.py).

The table needs the release's serving modules, which the parser venvs of `make slow` leave out (sglang --no-deps), so
this test runs where a full install is given: SGLANG_FULL_PYTHON_<release with _ for .>=<its python>, e.g.
`python3 -m venv /tmp/sg && /tmp/sg/bin/pip install sglang==0.5.23` (about 3 minutes and 9 GB here), then
SGLANG_FULL_PYTHON_0_5_23=/tmp/sg/bin/python make slow. Without it the test is skipped and says so.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

pytestmark = pytest.mark.slow
TABLES = yaml.safe_load((ROOT / "data" / "sglang" / "versions.yml").read_text())["parser_tables"]


@pytest.mark.parametrize("release", sorted(TABLES))
def test_the_committed_parser_table_is_the_releases_own(release: str) -> None:
    python = os.environ.get("SGLANG_FULL_PYTHON_" + re.sub(r"[^0-9A-Za-z]", "_", release).upper(), "")
    if not python:
        pytest.skip(f"no full install of SGLang {release} (SGLANG_FULL_PYTHON_{re.sub(r'[^0-9A-Za-z]', '_', release)})")
    proc = subprocess.run([python, str(ROOT / "tools" / "sglang_parser_table.py")], capture_output=True, text=True,
                          check=True, timeout=600)
    committed = yaml.safe_load((ROOT / "data" / "sglang" / TABLES[release]).read_text(encoding="utf-8"))
    assert yaml.safe_load(proc.stdout) == committed, \
        f"data/sglang/{TABLES[release]} is stale: regenerate it with tools/sglang_parser_table.py"
