"""The release path users take: build the collection with ansible-galaxy, install the tarball into a clean
collections path (no Galaxy: --no-deps, the `ansible` package bundles the dependencies), run
metalserve.sglang.render by FQCN against the example inventory; the tarball's changelog lists its own version, its
documents link only to what it ships; check the execution-environment file with ansible-builder (`create` writes the
build context without pulling any image; tests/integration/test_lab_slices_ee.py builds the image for real)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
DIST = ROOT / ".build" / "dist"


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    proc = subprocess.run(args, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, check=False,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def tarball() -> Path:
    """The collection tarball of this checkout, built once for the module."""
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(DIST)], ROOT)
    return DIST / f"metalserve-sglang-{version}.tar.gz"


def test_build_install_and_render_by_fqcn(tmp_path: Path, tarball: Path) -> None:
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    with tarfile.open(tarball) as tar:
        names = tar.getnames()
    names = [n[2:] if n.startswith("./") else n for n in names]
    for wanted in ("MANIFEST.json", "FILES.json", "README.md", "LICENSE", "playbooks/site.yml", "playbooks/render.yml",
                   "data/gpus.yml", "data/models/glm-5.3/cookbook/8e04be51/cells.yml", "plugins/plugin_utils/recipe/engine.py",
                   "roles/sglang_server/meta/argument_specs.yml", "meta/runtime.yml", "changelogs/changelog.yaml",
                   "docs/recipes.md", "inventories/example/hosts.yml"):
        assert wanted in names, wanted
    # what users run, and nothing of the development setup (galaxy.yml build_ignore): an allow-list of top-level
    # entries, so that a new development file has to be placed on one side or the other
    top = {n.split("/")[0] for n in names}
    assert top == {"MANIFEST.json", "FILES.json", "README.md", "LICENSE", "CHANGELOG.rst", "bindep.txt", "changelogs",
                   "data", "docs", "inventories", "meta", "playbooks", "plugins", "requirements", "roles"}, top
    other_requirements = [n for n in names if n.startswith("requirements/") and n != "requirements/plugins.txt"]
    assert "requirements/plugins.txt" in names and not other_requirements, other_requirements
    assert not [n for n in names if n.startswith("changelogs/fragments") or "__pycache__" in n or n.endswith(".pyc")]
    # ansible-builder reads meta/execution-environment.yml from the installed collection: what it names must ship
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(next(m for m in tar.getmembers() if m.name.removeprefix("./") == "meta/execution-environment.yml"))
        ee = yaml.safe_load(member.read())
    assert sorted(ee["dependencies"].values()) == ["bindep.txt", "requirements/plugins.txt"]
    assert all(path in names for path in ee["dependencies"].values())
    # the tarball's changelog is its own version's: changelog.yaml and CHANGELOG.rst list it
    with tarfile.open(tarball) as tar:
        text = {n: tar.extractfile(m).read().decode() for m in tar.getmembers()
                if (n := m.name.removeprefix("./")) in ("changelogs/changelog.yaml", "CHANGELOG.rst")}
    assert version in yaml.safe_load(text["changelogs/changelog.yaml"])["releases"]
    assert f"\nv{version}\n" in text["CHANGELOG.rst"]
    (tmp_path / "ansible.cfg").write_text("[defaults]\nstdout_callback = default\n")
    collections = tmp_path / "collections"
    got = run([str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
              tmp_path, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"))
    installed = collections / "ansible_collections" / "metalserve" / "sglang"
    assert (installed / "MANIFEST.json").exists(), got.stdout + got.stderr
    out = run([str(BIN / "ansible-playbook"), "metalserve.sglang.render", "-i", str(ROOT / "inventories" / "example"),
               "-e", f"sglang_render_dir={tmp_path / 'rendered'}"], tmp_path,
              ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(collections))
    plan = (tmp_path / "rendered" / "PLAN.md").read_text()
    assert "glm-5.3" in plan and "failed=0" in out.stdout
    # the same inventory rendered from the checkout gives the same commands
    for host_dir in (tmp_path / "rendered").iterdir():
        if host_dir.is_dir() and (host_dir / "serve.args").exists():
            assert (host_dir / "serve.args").read_text().startswith("--model-path")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def broken_links(docs: dict[str, str], names: set[str]) -> list[str]:
    """Relative links of the Markdown files `docs` ({name: text}) that name no file or folder of `names`, or an
    anchor no heading of the linked file makes."""
    anchors = {name: {slug(h) for h in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)}
               for name, text in docs.items()}
    dirs = {str(Path(n).parent) for n in names} | {p for n in names for p in map(str, Path(n).parents)}
    broken = []
    for name, text in docs.items():
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _hash, anchor = target.partition("#")
            resolved = os.path.normpath(str(Path(name).parent / path)) if path else name
            if resolved not in names and resolved not in dirs:
                broken.append(f"{name}: {target} (no {resolved} in the tarball)")
            elif anchor and resolved in anchors and anchor not in anchors[resolved]:
                broken.append(f"{name}: {target} (no heading makes #{anchor})")
    return broken


def test_the_tarballs_documents_link_only_to_what_it_ships(tarball: Path) -> None:
    with tarfile.open(tarball) as tar:
        names = {m.name.removeprefix("./") for m in tar.getmembers()}
        docs = {n.removeprefix("./"): tar.extractfile(n).read().decode() for n in tar.getnames() if n.endswith(".md")}
    assert "README.md" in docs and "docs/awx.md" in docs
    assert broken_links(docs, names) == []
    # the check finds what it is for: a link out of the tarball, a missing file, an anchor no heading makes
    made_up = {**docs, "docs/x.md": "[b](../bench/README.md) [m](missing.md) [a](../README.md#no-such) [ok](awx.md)"}
    assert len(broken_links(made_up, names)) == 3


def test_execution_environment_definition_builds_a_context(tmp_path: Path, tarball: Path) -> None:
    run([str(BIN / "ansible-builder"), "create", "-f", str(ROOT / "execution-environment.yml"), "--context",
         str(tmp_path / "context")], ROOT)
    context = tmp_path / "context"
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    assert "quay.io/fedora/fedora:41" in containerfile
    # the collection is a galaxy requirement of type file (installed in the galaxy stage, where /build exists, into
    # /usr/share/ansible/collections); the final stage names nothing under /build, which exists only there
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert {"name": f"collections/metalserve-sglang-{version}.tar.gz", "type": "file"} in galaxy["collections"]
    assert (context / "_build" / "collections" / f"metalserve-sglang-{version}.tar.gz").is_file()
    final = containerfile.split("FROM base AS final", 1)[1]
    assert not re.search(r"[ =\"]/build/", final), final
    reqs = (tmp_path / "context" / "_build" / "requirements.txt").read_text()
    assert "PyYAML==6.0.4" in reqs and "matplotlib==3.11.2" in reqs


def test_introspect_of_the_installed_collection_pins_nothing_exactly(tmp_path: Path, tarball: Path) -> None:
    """What ansible-builder asks of any EE that includes the collection (its introspect over the installed tarball,
    as it runs in the builder stage): ranges a resolver can meet beside other collections, and the system
    packages of both package families."""
    collections = tmp_path / "collections"
    run([str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
        tmp_path)
    out = yaml.safe_load(run([str(BIN / "ansible-builder"), "introspect", str(collections)], tmp_path).stdout
                         .split("---", 1)[1])
    python = [line.split("#")[0].strip() for line in out["python"]]
    assert python == ["matplotlib>=3.6"], python   # PyYAML: left out by builder (ansible-core brings it)
    system = [line.split("#")[0].strip() for line in out["system"]]
    assert "openssh-client [platform:dpkg]" in system and "openssh-clients [platform:rpm]" in system, system


def test_an_installed_collection_imports_a_page_and_sizes_it(tmp_path: Path, tarball: Path) -> None:
    """The importer ships (issue 38): from the installed tarball, metalserve.sglang.import_page reads a page file
    given alone (MiniMax-M3's two files, unedited, at the commit the search index lists) into a site's own folder,
    reports the cells it leaves out, and metalserve.sglang.size sizes the imported model from that folder."""
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nstdout_callback = default\n")
    collections = tmp_path / "collections"
    run([str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
        tmp_path, ANSIBLE_CONFIG=str(cfg))
    page = tmp_path / "download"
    page.mkdir()
    fixture = ROOT / "tests" / "fixtures" / "upstream" / "minimax-m3" / "fe8610c0"
    for name in ("minimax-m3.jsx", "minimax-m3-benchmarks.jsx"):
        (page / name).write_text((fixture / name).read_text(encoding="utf-8"), encoding="utf-8")
    env = {"ANSIBLE_CONFIG": str(cfg), "ANSIBLE_COLLECTIONS_PATH": str(collections)}
    out = run([str(BIN / "ansible-playbook"), "metalserve.sglang.import_page",
               "-e", f"import_page={page / 'minimax-m3.jsx'}", "-e", "import_commit=fe8610c035742b401c72f51dc7b661cc6bb07106",
               "-e", "import_org=MiniMaxAI",
               "-e", "import_architecture=MiniMaxM3SparseForCausalLM", "-e", f"import_dest={tmp_path / 'models'}"],
              tmp_path, **env)
    assert "minimax-m3 fe8610c0: 7 cells, 2 left out" in out.stdout
    assert "gb200/mxfp8/balanced/single left out: GPU gb200 is not in data/gpus.yml" in out.stdout + out.stderr
    folder = tmp_path / "models" / "minimax-m3"
    ours = yaml.safe_load((folder / "cookbook" / "fe8610c0" / "cells.yml").read_text())
    shipped = yaml.safe_load((ROOT / "tests" / "fixtures" / "cookbook-site" / "models" / "minimax-m3" / "cookbook" /
                              "fe8610c0" / "cells.yml").read_text())
    assert ours["cells"] == shipped["cells"] and ours["images"] == shipped["images"]
    assert yaml.safe_load((folder / "model.yml").read_text())["architecture"] == "MiniMaxM3SparseForCausalLM"
    sized = run([str(BIN / "ansible-playbook"), "metalserve.sglang.size", "-e", "size_model=minimax-m3",
                 "-e", "size_requests_per_s=5", "-e", f"sglang_render_dir={tmp_path / 'rendered'}",
                 "-e", '{"size_recipes": ["%s"]}' % (tmp_path / "models")], tmp_path, **env)
    sizing = (tmp_path / "rendered" / "SIZING.md").read_text()
    assert "failed=0" in sized.stdout and "| b300 | mxfp8 | balanced | published | 256 |" in sizing
    assert "published at ISL 1024 / OSL 1024" in sizing
