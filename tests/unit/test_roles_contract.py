"""Every role: argument_specs, defaults prefixed with the role name and equal to the specs, README table in sync."""
from __future__ import annotations

import re
from pathlib import Path

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
        assert set(info) <= {"description", "type", "choices", "elements", "no_log", "converge_only"}, f"{name}: {sorted(info)}"
