# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write data/sglang/env-<release>.yml: the environment variables SGLang <release> types in sglang/srt/environ.py
(EnvBool, EnvInt, EnvFloat), read from the installed package's own source, so the site checker judges sglang_env
values as that release reads them.

Usage: python tools/sglang_env_table.py <release> <path of sglang/srt/environ.py of that release>
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

KINDS = {"EnvBool": "booleans", "EnvInt": "integers", "EnvFloat": "floats"}
LINE = re.compile(r"^\s+((?:SGLANG|SGL)_[A-Z0-9_]+)\s*=\s*(EnvBool|EnvInt|EnvFloat)\(", re.M)


def table(source: str) -> dict[str, list[str]]:
    out: dict[str, set[str]] = {kind: set() for kind in KINDS.values()}
    for name, kind in LINE.findall(source):
        out[KINDS[kind]].add(name)
    return {kind: sorted(names) for kind, names in out.items()}


def main() -> None:
    release, path = sys.argv[1], Path(sys.argv[2])
    found = table(path.read_text(encoding="utf-8"))
    root = Path(__file__).resolve().parents[1]
    lines = ["---", f"# SGLang {release}'s typed environment variables, from its sglang/srt/environ.py (EnvBool: true/false",
             "# or 1/0; EnvInt; EnvFloat), written by tools/sglang_env_table.py from the release's wheel.",
             f"release: \"{release}\""]
    for kind, names in found.items():
        lines.append(f"{kind}:")
        lines += [f"  - {name}" for name in names]
    (root / "data" / "sglang" / f"env-{release}.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"SGLang {release}: " + ", ".join(f"{len(v)} {k}" for k, v in found.items()))


if __name__ == "__main__":
    main()
