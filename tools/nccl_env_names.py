# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write data/env-nccl.yml: every environment variable NCCL reads, from NCCL's own source (github.com/NVIDIA/nccl)
at the release tags named, so the site checker can tell a misspelt NCCL_* name ("did you mean") from one NCCL reads.

What it reads, under src/ of each tag: NCCL_PARAM(Name, "SUFFIX", default) (the variable NCCL_SUFFIX, include/param.h),
DEFINE_NCCL_PARAM(..., NCCL_NAME, ...) (the newer parameter registry) and every "NCCL_..." string literal (ncclGetEnv,
getenv). The union over the tags is written.

Usage: python tools/nccl_env_names.py <git dir of an NVIDIA/nccl clone> <tag> [<tag> ...]
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PARAM = re.compile(r"\bNCCL_PARAM\(\s*\w+\s*,\s*\"([A-Z0-9_]+)\"")
DEFINED = re.compile(r"\bDEFINE_NCCL_PARAM\w*\(\s*\w+\s*,\s*[^,]+,\s*(NCCL_[A-Z0-9_]+)\s*,")
LITERAL = re.compile(r"\"(NCCL_[A-Z0-9_]*[A-Z0-9])\"")
#: names in the source that are not variables: header guards, initializer macros
NOT_VARIABLES = re.compile(r"_INITIALIZER$|^NCCL_USE_CMAKE$")


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True, text=True).stdout


def names_at(repo: str, tag: str) -> set[str]:
    out: set[str] = set()
    for path in git(repo, "ls-tree", "-r", "--name-only", tag, "src").split():
        if not path.endswith((".cc", ".h", ".cu", ".c", ".cpp", ".hpp")):
            continue
        text = git(repo, "show", f"{tag}:{path}")
        out.update("NCCL_" + s for s in PARAM.findall(text))
        out.update(DEFINED.findall(text))
        out.update(LITERAL.findall(text))
    return {n for n in out if not NOT_VARIABLES.search(n)}


def main() -> None:
    repo, tags = sys.argv[1], sys.argv[2:]
    names: set[str] = set()
    for tag in tags:
        names |= names_at(repo, tag)
    lines = ["---",
             "# Every environment variable NCCL reads, from NCCL's own source (https://github.com/NVIDIA/nccl, src/:",
             "# NCCL_PARAM, DEFINE_NCCL_PARAM and ncclGetEnv names), written by tools/nccl_env_names.py. Do not edit by hand.",
             "# RCCL (ROCm) reads the same NCCL_* names. The site checker refuses an NCCL_* name close to one of these",
             "# (\"did you mean\"); NVIDIA's reference: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
             f"tags: [{', '.join(tags)}]", "names:"]
    lines += [f"  - {name}" for name in sorted(names)]
    root = Path(__file__).resolve().parents[1]
    (root / "data" / "env-nccl.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(names)} NCCL variables from {', '.join(tags)}")


if __name__ == "__main__":
    main()
