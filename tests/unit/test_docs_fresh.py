"""The generated README blocks match the data."""
from __future__ import annotations

import subprocess
import sys

from helpers import ROOT


def test_readme_generated_blocks_are_fresh() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_docs.py"), "--check"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_every_variable_and_cell_is_in_the_readme() -> None:
    import yaml
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    variables = yaml.safe_load((ROOT / "data" / "variables.yml").read_text(encoding="utf-8"))
    for section in variables.values():
        for name in section:
            assert f"| `{name}` |" in readme, name
    assert readme.count("(verified)") + readme.count("(**unverified**)") == 48
