"""The README's and the user docs' bash examples run as written against the installed collection tarball: a clean
HOME (ansible-galaxy installs into ~/.ansible/collections), a folder of one's own as the working directory, no
ANSIBLE_* settings of the repository. What needs no host runs for real (install, the example inventory out of the
installed collection, render, size); a command that needs nodes runs with --syntax-check, which proves the playbook
resolves by its name and the command line parses (placeholders: <version> is galaxy.yml's, <site> the example
inventory, an optional [--check] left out). A block that is not for an installed collection is listed in SKIP with
why; any other block must run, so a new example is tested the day it is written."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
VERSION = str(yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"])
#: the user pages that ship in the tarball and hold commands (docs/development.md is for a checkout)
PAGES = ("README.md", "docs/awx.md", "docs/upgrade.md")
#: (page, first command of the block): why it is not run here
SKIP = {
    ("README.md", "make demo"): "from a checkout: CI runs make test itself, and make demo is render.yml of "
                                "inventories/example (tests/integration/test_render_example.py)",
    ("README.md", "export ANTHROPIC_BASE_URL=http://<server head>:30000"):
        "a Claude Code client's settings for a serving site",
    ("docs/awx.md", "ansible-galaxy collection build --output-path .build/dist"):
        "from a checkout, with a registry to push to: tests/ee/build.py (make ee) runs the build with the stand-ins "
        "it names, tests/integration/test_lab_slices_ee.py runs jobs in the image",
}
#: commands that need no node run for real; the others get --syntax-check
RUN = ("ansible-galaxy collection install", "cp ", "ansible-playbook metalserve.sglang.render",
       "ansible-playbook metalserve.sglang.size")


def commands(text: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comment lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def blocks() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        for text in re.findall(r"```bash\n(.*?)```", (ROOT / page).read_text(), re.S):
            cmds = commands(re.sub(r"^ {0,4}", "", text, flags=re.M))
            first = " ".join(shlex.split(cmds[0], comments=True))
            found.append((page, first, cmds))
    return [(p, c) for p, first, c in found if (p, first) not in SKIP]


def argv(command: str, home: Path) -> list[str]:
    words = [w for w in shlex.split(command.replace("<version>", VERSION).replace("<site>", "example"), comments=True)
             if w != "[--check]"]
    words = [str(home) + w[1:] if w.startswith("~/") else w for w in words]
    if words[0] == "ansible-playbook" and not command.startswith(RUN[2:]):
        words.append("--syntax-check")
    return [str(BIN / words[0]) if (BIN / words[0]).exists() else words[0], *words[1:]]


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A user's folder with the downloaded tarball, a clean HOME, and the environment without the repository's."""
    work = tmp_path_factory.mktemp("user")
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(work)],
                   cwd=ROOT, check=True, capture_output=True, env=env)
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", ANSIBLE_NOCOLOR="1")
    return {"work": work, "home": home, "env": env, "ran": []}


def test_every_block_is_run_or_says_why_not() -> None:
    found = {(p, " ".join(shlex.split(commands(re.sub(r"^ {0,4}", "", t, flags=re.M))[0], comments=True)))
             for p in PAGES for t in re.findall(r"```bash\n(.*?)```", (ROOT / p).read_text(), re.S)}
    assert set(SKIP) <= found, set(SKIP) - found   # a skip names a block that still exists
    assert len(blocks()) >= 4


@pytest.mark.parametrize("page,cmds", blocks(), ids=lambda v: v if isinstance(v, str) else v[0][:50])
def test_the_block_runs_as_written(user: dict, page: str, cmds: list[str]) -> None:
    for command in cmds:
        args = argv(command, user["home"])
        proc = subprocess.run(args, cwd=user["work"], env=user["env"], capture_output=True, text=True, check=False,
                              timeout=600)
        assert proc.returncode == 0, f"{page}: {command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        user["ran"].append(command)
    if any("metalserve.sglang.render" in c for c in cmds):
        assert (user["work"] / "rendered" / "PLAN.md").is_file()
        assert (user["home"] / ".ansible" / "collections" / "ansible_collections" / "metalserve" / "sglang").is_dir()
    if any("metalserve.sglang.size" in c for c in cmds):
        assert (user["work"] / "rendered" / "SIZING.md").is_file()
