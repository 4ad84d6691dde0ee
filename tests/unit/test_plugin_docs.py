"""What ansible-doc shows of every module's attributes (the module's own DOCUMENTATION merged with the doc fragments
it lists, plugins/doc_fragments/attributes.py among them) says what the plugin does.

The expected values come from the code, not from the documentation: whether an action plugin exists, whether it
needs a connection (a controller-only action operates on any platform), its check mode, async and host-loop flags,
whether it reads the task's diff flag, the module's supports_check_mode and whether it returns ansible_facts. The
documentation side is read back through ansible-doc itself, so a fragment listed in an order that loses its values
(the first fragment to set a key keeps it) shows up here.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
PACKAGE = "ansible_collections.metalserve.sglang.plugins"


def ansible_doc(plugin_type: str, names: list[str]) -> dict[str, Any]:
    """ansible-doc --json for the named plugins of the collection, as a user runs it."""
    out = subprocess.run([str(Path(sys.executable).with_name("ansible-doc")), "-t", plugin_type, "--json",
                          *[f"metalserve.sglang.{n}" for n in names]],
                         capture_output=True, text=True, check=True, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def module_docs() -> dict[str, Any]:
    return ansible_doc("module", MODULES)


class Captured(Exception):
    """Raised by the stand-in AnsibleModule once it has the module's arguments."""


def module_arguments(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The keyword arguments the module's main() hands AnsibleModule (what validate-modules reads the same way)."""
    module = importlib.import_module(f"{PACKAGE}.modules.{name}")
    seen: dict[str, Any] = {}

    def stand_in(**kwargs: Any) -> None:
        seen.update(kwargs)
        raise Captured

    monkeypatch.setattr(module, "AnsibleModule", stand_in)
    with pytest.raises(Captured):
        module.main()
    return seen


def expected_attributes(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, str]]:
    module_source = (ROOT / "plugins" / "modules" / f"{name}.py").read_text(encoding="utf-8")
    action_file = ROOT / "plugins" / "action" / f"{name}.py"
    support = {True: "full", False: "none"}
    if action_file.exists():
        action = importlib.import_module(f"{PACKAGE}.action.{name}").ActionModule
        source = action_file.read_text(encoding="utf-8")
        controller_only = action._requires_connection is False
        check, diff = bool(action._supports_check_mode), "self._task.diff" in source
        flow = {"action": {"support": "full"}, "async": {"support": support[bool(action._supports_async)]},
                "bypass_host_loop": {"support": support[bool(action.BYPASS_HOST_LOOP)]}}
    else:
        controller_only, flow = False, {}
        check = bool(module_arguments(name, monkeypatch).get("supports_check_mode"))
        diff = "module._diff" in module_source
    expected = {"platform": {"support": "full", "platforms": "all" if controller_only else "posix"},
                "check_mode": {"support": support[check]}, "diff_mode": {"support": support[diff]}, **flow}
    if "ansible_facts=" in module_source:
        expected["facts"] = {"support": "full"}
    return expected


@pytest.mark.parametrize("name", MODULES)
def test_the_documented_attributes_are_what_the_plugin_does(name: str, module_docs: dict[str, Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    shown = module_docs[f"metalserve.sglang.{name}"]["doc"]["attributes"]
    documented = {key: {k: v for k, v in value.items() if k != "description"} for key, value in shown.items()}
    assert documented == expected_attributes(name, monkeypatch)
    assert all(value.get("description") for value in shown.values()), "every attribute keeps Ansible's description"


def test_the_shared_attribute_blocks_live_in_the_fragment_only() -> None:
    """A module states an attribute itself only where no fragment of the collection has its value."""
    for name in MODULES:
        text = (ROOT / "plugins" / "modules" / f"{name}.py").read_text(encoding="utf-8")
        for key in ("platform", "action", "async", "bypass_host_loop"):
            assert f"\n  {key}:" not in text.split("extends_documentation_fragment:", 1)[1].split('"""', 1)[0], \
                f"{name} documents {key} itself: use plugins/doc_fragments/attributes.py"


def test_galaxy_lists_every_filter_once_with_its_description() -> None:
    """galaxy-importer lists a collection's content as the union of the files ansible-doc names as each plugin's
    documentation and every .py file under plugins/<type>/ (galaxy_importer/loaders/collection.py _load_contents,
    finder.py ContentFinder._find_plugins), one entry per file, named after the file. A .py file holding several
    filters documented in .yml files beside it therefore shows once per .yml and once more, bare, for itself."""
    listed = subprocess.run([str(Path(sys.executable).with_name("ansible-doc")), "-t", "filter", "--list", "--json",
                             "metalserve.sglang"], capture_output=True, text=True, check=True)
    names = sorted(name.split(".")[-1] for name in json.loads(listed.stdout))
    docs = ansible_doc("filter", names)
    # relative to the collection's root, as the importer sees it in the unpacked tarball
    documented = {doc["doc"]["filename"].split("/ansible_collections/metalserve/sglang/", 1)[1] for doc in docs.values()}
    python = {p.relative_to(ROOT).as_posix() for p in (ROOT / "plugins" / "filter").rglob("*.py") if p.name != "__init__.py"}
    entries = documented | python
    assert sorted(entries) == [f"plugins/filter/{name}.py" for name in names]
    assert all(doc["doc"].get("short_description") for doc in docs.values())
