"""Every repository path README.md and docs/*.md name exists in the tree, every relative link resolves, and every
link to a heading finds it, so that the pages cannot keep naming files that moved or went (docs/architecture.md named
data files of an older layout).

A repository path is a word that starts with an entry at the top of the repository (data/, plugins/, roles/,
tests/, galaxy.yml, ...; not what .gitignore keeps out of the tree, such as rendered/) wherever it stands: in text,
code, tables or mermaid labels. Placeholders such as <revision> or <site> and * stand for any name and must match at
least one path. Relative Markdown links are resolved from the page's own folder.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IGNORED = {line.strip().strip("/") for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
           if line.strip() and not line.startswith("#") and "*" not in line}
TOP = sorted((p.name for p in ROOT.iterdir() if p.name != ".git" and p.name not in IGNORED), key=len, reverse=True)
# a top-level name, then its path: up to white space, quotes, brackets, braces, commas, pipes or a backslash (a
# mermaid label's \n)
PATH = re.compile(r"(?<![\w./~<-])((?:%s)(?:/[^\s`'\"()\[\]{},;|\\]*)?)" % "|".join(re.escape(t) for t in TOP))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def named_paths(text: str) -> set[str]:
    out = set()
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".:")
        if "/" in path or (ROOT / path).is_file():  # a bare word such as "docs" or "tests" is prose
            out.add(path.split("#", 1)[0])
    return out


def exists(path: Path) -> bool:
    pattern = re.sub(r"<[^>/]+>", "*", path.relative_to(ROOT).as_posix())
    if "*" not in pattern:
        return path.exists()
    return any(ROOT.glob(pattern.rstrip("/")))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines()
            if re.match(r"#{1,6} ", line)}


def test_the_pattern_finds_what_the_pages_name() -> None:
    text = 'see `data/gpus.yml`, cells["data/models/glm-5.3/cookbook/*/cells.yml\\n42 cells"] and rendered/PLAN.md.'
    assert named_paths(text) == {"data/gpus.yml", "data/models/glm-5.3/cookbook/*/cells.yml"}
    assert not exists(ROOT / "data/models/glm-5.3/cells.yml") and exists(ROOT / "data/models/<model>/cookbook/")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_repository_path_a_page_names_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = sorted(p for p in named_paths(text) if not exists(ROOT / p))
    assert not missing, f"{doc.relative_to(ROOT)} names paths that are not in the tree: {', '.join(missing)}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_heading_link_resolves(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        file, _hash, anchor = target.partition("#")
        page = (doc.parent / file).resolve() if file else doc
        if not page.exists():
            broken.append(target)
        elif anchor and page.suffix == ".md" and anchor not in anchors(page):
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: links that lead nowhere: {', '.join(broken)}"


def test_the_readme_names_nothing_the_collection_tarball_leaves_out() -> None:
    """README.md ships in the tarball (galaxy.yml readme) and is what Galaxy shows: what it names must be there. The
    development files galaxy.yml's build_ignore keeps out (tests, molecule, the Makefile, tools, bench) belong on
    docs/development.md. ansible.cfg is named as the file users write themselves."""
    import fnmatch

    import yaml

    ignore = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))["build_ignore"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    left_out = sorted(p for p in named_paths(readme) - {"ansible.cfg"}
                      if any(fnmatch.fnmatch(p, pat) or p == pat or p.startswith(f"{pat}/") for pat in ignore))
    assert not left_out, f"README.md names what the tarball does not hold: {', '.join(left_out)}"
    # a fresh clone's two commands, in the README's "From a checkout" section only (issue 37); the rest of the
    # targets belong on docs/development.md
    checkout = re.search(r"### From a checkout\n(.*?)\n### ", readme, re.S)
    assert checkout, "README.md has no 'From a checkout' section"
    outside = readme.replace(checkout.group(1), "")
    assert set(re.findall(r"make [a-z]+", checkout.group(1))) == {"make demo", "make test"}
    assert not re.findall(r"(?m)(?:^|`)make [a-z]", outside), "make targets belong on docs/development.md"


def test_the_readme_ansible_settings_are_the_repository_s() -> None:
    """The README shows users the settings the collection is tested with; ansible.cfg owns them."""
    import configparser

    block = re.search(r"```ini\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    assert block, "README.md has no ansible.cfg block"
    shown, ours = configparser.ConfigParser(), configparser.ConfigParser()
    shown.read_string(block.group(1))
    ours.read(ROOT / "ansible.cfg")
    assert shown.sections()
    for section in shown.sections():
        assert dict(shown[section]) == {k: v for k, v in ours[section].items() if k in shown[section]}, section
