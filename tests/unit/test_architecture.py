"""The map and the shape of the code: docs/architecture.md names every module of plugins/plugin_utils; the folders of
plugin_utils import each other one way (the one exception is named on that page); no module imports one that imports
it back; no action plugin imports another; and the functions of plugins/ and tools/ stay short (none over 80 lines,
at most five over 60)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

UTILS = ROOT / "plugins" / "plugin_utils"
PACKAGE = "ansible_collections.metalserve.sglang.plugins."
#: the one import from checks/ into site/, explained in docs/architecture.md: the checker reads the files as render.yml
#: writes them
CHECKS_READS_SITE = {("checks/site.py", "site/render.py")}


def modules() -> list[str]:
    return sorted(p.relative_to(UTILS).as_posix() for p in UTILS.rglob("*.py") if p.name != "__init__.py")


def imports(path: Path) -> set[str]:
    """The collection's plugin modules a file imports (at any depth of it), as paths under plugins/."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            base = node.module[len(PACKAGE):].replace(".", "/")
            for alias in node.names:
                for candidate in (f"{base}/{alias.name}.py", f"{base}.py"):
                    if (ROOT / "plugins" / candidate).is_file():
                        out.add(candidate)
                        break
    return out


@functools.lru_cache(maxsize=1)
def graph() -> dict[str, set[str]]:
    """plugin_utils module -> the plugin_utils modules it imports."""
    return {m: {i.removeprefix("plugin_utils/") for i in imports(UTILS / m) if i.startswith("plugin_utils/")}
            for m in modules()}


def test_the_map_names_every_module() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [m for m in modules() if f"`{m}`" not in page]
    assert not missing, f"docs/architecture.md does not name {', '.join(missing)} (run make docs, and place it)"


def test_checks_reads_nothing_of_site_but_the_rendered_files() -> None:
    edges = {(m, i) for m, targets in graph().items() for i in targets
             if m.startswith("checks/") and i.startswith("site/")}
    assert edges == CHECKS_READS_SITE


def test_no_module_imports_one_that_imports_it_back() -> None:
    edges = graph()
    cycles = []
    for start in edges:
        seen, stack = set(), [(start, [start])]
        while stack:
            here, path = stack.pop()
            for there in edges.get(here, ()):
                if there == start:
                    cycles.append(" -> ".join(path + [start]))
                elif there not in seen:
                    seen.add(there)
                    stack.append((there, path + [there]))
    assert not cycles, "\n".join(sorted(cycles))


def test_no_action_imports_another() -> None:
    found = [f"{p.name}: {i}" for p in sorted((ROOT / "plugins" / "action").glob("*.py"))
             for i in imports(p) if i.startswith("action/")]
    assert not found, found


def function_lengths() -> dict[str, int]:
    out = {}
    for path in sorted([*(ROOT / "plugins").rglob("*.py"), *(ROOT / "tools").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = node.end_lineno - node.lineno + 1
    return out


def test_functions_are_short() -> None:
    lengths = function_lengths()
    assert not [f for f, n in lengths.items() if n > 80], "functions over 80 lines"
    over = sorted(f for f, n in lengths.items() if n > 60)
    assert len(over) <= 5, f"{len(over)} functions over 60 lines (at most five): {over}"
