"""The environment tables (data/sglang/env-<release>.yml) against each release's own readers.

For each SGLang release the slow tests install (tests/slow/sglang_parser_venv.sh), its package's source is read where
the parser venv holds it: the table must be what tools/sglang_env_table.py writes from it (nothing edited by hand, no
release left behind), every name of its Envs registry must be in the table, and the two boolean readers must read each
word as the table says: environ.py's EnvBool.parse (the module is stdlib only, loaded as it is) and utils/common.py's
get_bool_env_var (run alone: the function's own source, with the names it uses). The site checker judges sglang_env
values with these tables (checks/grammar.py), so what it accepts and refuses is what SGLang does.

Needs SGLANG_PARSER_PYTHON (0.5.23) and SGLANG_PARSER_PYTHON_<release> (the others), as `make slow` sets them; or,
without the venvs, METALSERVE_SGLANG_SRC_<release> naming an unpacked wheel's sglang/ folder.
"""
from __future__ import annotations

import ast
import importlib.util
import logging
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

pytestmark = pytest.mark.slow
RELEASES = ["0.5.23", "0.5.18", "0.5.13.post1"]
WORDS = ["true", "True", "1", "yes", "Yes", "y", "on", "false", "0", "no", "n", "off", "enabled", "", "2"]


def _key(release: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "_", release).upper()


def package(release: str) -> Path | None:
    """The release's sglang/ folder: from its parser venv, else METALSERVE_SGLANG_SRC_<release>."""
    given = os.environ.get(f"METALSERVE_SGLANG_SRC_{_key(release)}")
    if given:
        return Path(given)
    python = os.environ.get("SGLANG_PARSER_PYTHON" if release == "0.5.23" else f"SGLANG_PARSER_PYTHON_{_key(release)}")
    if not python:
        return None
    proc = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('sglang').submodule_search_locations[0])"],
                          capture_output=True, text=True, check=True, timeout=120)
    return Path(proc.stdout.strip())


def tool() -> Any:
    spec = importlib.util.spec_from_file_location("sglang_env_table", ROOT / "tools" / "sglang_env_table.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


#: what an environ.py imports of SGLang itself at its end, for side effects only (0.5.13.post1 and later:
#: sglang.srt.debug_utils.cuda_coredump sets CUDA core-dump variables when SGLANG_CUDA_COREDUMP=1): empty stand-ins, so
#: the registry and its readers load without the rest of SGLang
SIDE_EFFECT_IMPORTS = ("sglang", "sglang.srt", "sglang.srt.debug_utils", "sglang.srt.debug_utils.cuda_coredump")


def environ_module(source: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"sglang_environ_{abs(hash(str(source)))}", source / "srt" / "environ.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    saved = {name: sys.modules.get(name) for name in SIDE_EFFECT_IMPORTS}
    for name in SIDE_EFFECT_IMPORTS:
        sys.modules.setdefault(name, types.ModuleType(name))
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module


def legacy_reader(source: Path) -> Callable[[str], bool]:
    """get_bool_env_var exactly as the release writes it, compiled alone."""
    path = source / "srt" / "utils" / "common.py"
    text = (path if path.is_file() else source / "srt" / "utils.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_bool_env_var"]
    namespace: dict[str, Any] = {"os": os, "logger": logging.getLogger("sglang-test"), "_warned_bool_env_var_keys": set()}
    exec(compile(ast.Module(body=found, type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102  # pylint: disable=exec-used
    reader = namespace["get_bool_env_var"]

    def read(word: str) -> bool:
        os.environ["METALSERVE_TEST_BOOL"] = word
        try:
            return bool(reader("METALSERVE_TEST_BOOL"))
        finally:
            del os.environ["METALSERVE_TEST_BOOL"]
    return read


@pytest.fixture(params=RELEASES)
def release(request: pytest.FixtureRequest) -> tuple[str, Path]:
    source = package(request.param)
    if source is None:
        pytest.skip(f"no SGLang {request.param} source: run through `make slow`")
    return request.param, source


def test_the_table_is_what_the_tool_writes(release: tuple[str, Path]) -> None:
    name, source = release
    module = tool()
    written = "\n".join(module.lines_of(name, module.table(source))) + "\n"
    assert written == (ROOT / "data" / "sglang" / f"env-{name}.yml").read_text(encoding="utf-8"), \
        f"data/sglang/env-{name}.yml is stale: python tools/sglang_env_table.py {name} {source}"


def test_every_registered_name_is_in_the_table(release: tuple[str, Path]) -> None:
    name, source = release
    table = yaml.safe_load((ROOT / "data" / "sglang" / f"env-{name}.yml").read_text())
    envs = environ_module(source).Envs
    registered = {k for k in vars(envs) if k.startswith(("SGLANG_", "SGL_"))}
    assert registered and registered <= set(table["names"])
    typed = {k for k in registered if type(vars(envs)[k]).__name__ in ("EnvBool", "EnvBoolWithAlias")}
    assert typed == set(table["booleans"])


def test_the_boolean_readers_read_as_the_table_says(release: tuple[str, Path]) -> None:
    name, source = release
    readers = yaml.safe_load((ROOT / "data" / "sglang" / f"env-{name}.yml").read_text())["readers"]
    env_bool = environ_module(source).EnvBool(False)
    legacy = legacy_reader(source)
    for word in WORDS:
        try:
            real: bool | None = env_bool.parse(word)
        except ValueError:
            real = None
        table = True if word.lower() in readers["EnvBool"]["true"] else \
            False if word.lower() in readers["EnvBool"]["false"] else None
        assert real == table, (name, "EnvBool", word)
        assert legacy(word) == (word.lower() in readers["get_bool_env_var"]["true"]), (name, "get_bool_env_var", word)


def test_the_checker_accepts_what_envbool_reads_and_refuses_what_get_bool_env_var_misreads(
        release: tuple[str, Path]) -> None:
    """For each boolean variable of the release, the checker's verdict on 'no' and 'yes' follows the real readers:
    refused exactly when some reader of the variable reads the word otherwise than it says."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammar  # noqa: PLC0415

    name, source = release
    table = yaml.safe_load((ROOT / "data" / "sglang" / f"env-{name}.yml").read_text())
    env_bool = environ_module(source).EnvBool(False)
    legacy = legacy_reader(source)
    for variable in sorted(set(table["booleans"]) | set(table["legacy_booleans"]))[:400]:
        for word, meant in (("no", False), ("yes", True), ("1", True)):
            reads = []
            if variable in table["booleans"]:
                try:
                    reads.append(env_bool.parse(word))
                except ValueError:
                    reads.append(None)
            if variable in table["legacy_booleans"]:
                reads.append(legacy(word))
            wrong = any(r != meant for r in reads)
            assert bool(grammar.boolean_readings(variable, word, name)) == wrong, (name, variable, word, reads)
