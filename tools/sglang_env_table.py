# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write data/sglang/env-<release>.yml: the environment variables SGLang <release> reads and how each reader reads
its value, from the release's own source, so the site checker judges sglang_env names and values as that release
does.

What it reads (the package folder of the release's wheel, e.g. site-packages/sglang):
- sglang/srt/environ.py: every field of its Envs registry (EnvBool, EnvInt, EnvFloat, EnvStr, EnvTuple, EnvJSON and
  their *WithAlias forms, whose deprecated_name is an older name still read), and the words EnvBool.parse takes;
- sglang/srt/utils/common.py: the words the older get_bool_env_var takes as true and as false;
- every .py file: the names passed to get_bool_env_var / get_int_env_var, and every "SGLANG_..." / "SGL_..." string
  literal (os.environ.get, os.getenv, os.environ[...], tables of names).

Usage: python tools/sglang_env_table.py <release> <path of the release's sglang package folder>
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

KINDS = {"EnvBool": "booleans", "EnvBoolWithAlias": "booleans", "EnvInt": "integers", "EnvIntWithAlias": "integers",
         "EnvFloat": "floats"}
FIELD = re.compile(r"^\s+((?:SGLANG|SGL)_[A-Z0-9_]+)\s*(?::\s*[A-Za-z]+\s*)?=\s*(Env[A-Za-z]+)\(", re.M)
ALIAS = re.compile(r"^\s+((?:SGLANG|SGL)_[A-Z0-9_]+)\s*=\s*Env[A-Za-z]+WithAlias\((.*?)\)\s*$", re.M | re.S)
DEPRECATED = re.compile(r"deprecated_name\s*=\s*\"([A-Z0-9_]+)\"")
LEGACY = re.compile(r"\bget_(bool|int)_env_var\(\s*\"([A-Za-z0-9_]+)\"")
LITERAL = re.compile(r"[\"']((?:SGLANG|SGL)_[A-Z0-9_]*[A-Z0-9])[\"']")
#: the names of environ.py's own docstring example (_DeprecatedEnvFallback), read by no one
DOCSTRING_EXAMPLE = frozenset({"SGLANG_OLD_NAME", "SGLANG_NEW_NAME"})


def _words(text: str) -> list[str]:
    return re.findall(r"\"([^\"]*)\"", text)


def env_bool_words(environ: str) -> dict[str, list[str]]:
    """The words EnvBool.parse reads as true and as false (after lower())."""
    body = environ.split("class EnvBool(", 1)[1].split("\nclass ", 1)[0]
    found = re.findall(r"if value in ([\[(][^\])]*[\])]):\s*\n\s*return (True|False)", body)
    return {str(result).lower(): _words(words) for words, result in found}


def legacy_bool_words(common: str) -> dict[str, list[str]]:
    """The words get_bool_env_var reads as true (truthy_values) and names as false (falsy_values); anything else is
    read as false, with a warning."""
    body = common.split("def get_bool_env_var(", 1)[1].split("\ndef ", 1)[0]
    truthy = re.search(r"truthy_values\s*=\s*\(([^)]*)\)", body)
    falsy = re.search(r"falsy_values\s*=\s*\(([^)]*)\)", body)
    return {"true": _words(truthy.group(1)) if truthy else [], "false": _words(falsy.group(1)) if falsy else []}


def table(package: Path) -> dict[str, object]:
    environ = (package / "srt" / "environ.py").read_text(encoding="utf-8")
    common_path = package / "srt" / "utils" / "common.py"
    common = common_path.read_text(encoding="utf-8") if common_path.is_file() else \
        (package / "srt" / "utils.py").read_text(encoding="utf-8")
    typed: dict[str, set[str]] = {"booleans": set(), "integers": set(), "floats": set(), "others": set()}
    for name, kind in FIELD.findall(environ):
        if name not in DOCSTRING_EXAMPLE:
            typed[KINDS.get(kind, "others")].add(name)
    deprecated = {}
    for name, args in ALIAS.findall(environ):
        old = DEPRECATED.search(args)
        if old and old.group(1) not in DOCSTRING_EXAMPLE:
            deprecated[old.group(1)] = name
    legacy: dict[str, set[str]] = {"bool": set(), "int": set()}
    literals: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for kind, name in LEGACY.findall(text):
            legacy[kind].add(name)
        literals.update(LITERAL.findall(text))
    fields = set().union(*typed.values())
    prefixed = {n for n in legacy["bool"] | legacy["int"] if n.startswith(("SGLANG_", "SGL_"))}
    return {
        "readers": {"EnvBool": env_bool_words(environ), "get_bool_env_var": legacy_bool_words(common)},
        **{kind: sorted(names) for kind, names in typed.items() if kind != "others"},
        "legacy_booleans": sorted(legacy["bool"]), "legacy_integers": sorted(legacy["int"]),
        "deprecated": dict(sorted(deprecated.items())),
        "names": sorted((fields | literals | set(deprecated) | prefixed) - DOCSTRING_EXAMPLE),
    }


def lines_of(release: str, found: dict[str, object]) -> list[str]:
    readers = found["readers"]
    out = ["---",
           f"# SGLang {release}'s environment variables, written by tools/sglang_env_table.py from the release's wheel",
           "# (sglang/srt/environ.py's Envs registry, sglang/srt/utils/common.py's get_bool_env_var and get_int_env_var,",
           "# and every SGLANG_/SGL_ name the package's source spells). Do not edit by hand: regenerate.",
           f"release: \"{release}\"",
           "# the words each boolean reader takes (after lower()): EnvBool reads any other word as invalid and keeps the",
           "# variable's default, with a warning; get_bool_env_var reads any word but its true ones as false",
           "readers:"]
    for reader, words in readers.items():  # type: ignore[union-attr]
        quoted = {side: ", ".join(f'"{w}"' for w in words[side]) for side in ("true", "false")}
        out.append(f"  {reader}: {{\"true\": [{quoted['true']}], \"false\": [{quoted['false']}]}}")
    for kind in ("booleans", "integers", "floats", "legacy_booleans", "legacy_integers"):
        names = found[kind]
        out.append(f"{kind}:" + ("" if names else " []"))
        out += [f"  - {name}" for name in names]  # type: ignore[union-attr]
    deprecated = found["deprecated"]
    out.append("# an older name the release still reads (with a DeprecationWarning) when the new one is unset")
    out.append("deprecated:" + ("" if deprecated else " {}"))
    out += [f"  {old}: {new}" for old, new in deprecated.items()]  # type: ignore[union-attr]
    out.append("# every SGLANG_/SGL_ name the release reads or spells")
    out.append("names:")
    out += [f"  - {name}" for name in found["names"]]  # type: ignore[union-attr]
    return out


def main() -> None:
    release, package = sys.argv[1], Path(sys.argv[2])
    found = table(package)
    root = Path(__file__).resolve().parents[1]
    target = root / "data" / "sglang" / f"env-{release}.yml"
    target.write_text("\n".join(lines_of(release, found)) + "\n", encoding="utf-8")
    print(f"SGLang {release}: " + ", ".join(f"{len(found[k])} {k}" for k in (  # type: ignore[arg-type]
        "booleans", "integers", "floats", "legacy_booleans", "names")))


if __name__ == "__main__":
    main()
