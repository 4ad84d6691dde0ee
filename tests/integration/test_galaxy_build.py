"""The release path users take: build the collection with ansible-galaxy, install the tarball into a clean
collections path (no Galaxy: --no-deps, the `ansible` package bundles the dependencies), run
metalserve.sglang.render by FQCN against the example inventory, and check the execution-environment file
with ansible-builder (`create` writes the build context without pulling any image)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

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


def test_build_install_and_render_by_fqcn(tmp_path: Path) -> None:
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(DIST)], ROOT)
    tarball = DIST / f"metalserve-sglang-{version}.tar.gz"
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
    assert top == {"MANIFEST.json", "FILES.json", "README.md", "LICENSE", "bindep.txt", "changelogs", "data", "docs",
                   "inventories", "meta", "playbooks", "plugins", "requirements", "roles"}, top
    other_requirements = [n for n in names if n.startswith("requirements/") and n != "requirements/plugins.txt"]
    assert "requirements/plugins.txt" in names and not other_requirements, other_requirements
    assert not [n for n in names if n.startswith("changelogs/fragments") or "__pycache__" in n or n.endswith(".pyc")]
    # ansible-builder reads meta/execution-environment.yml from the installed collection: what it names must ship
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(next(m for m in tar.getmembers() if m.name.removeprefix("./") == "meta/execution-environment.yml"))
        ee = yaml.safe_load(member.read())
    assert sorted(ee["dependencies"].values()) == ["bindep.txt", "requirements/plugins.txt"]
    assert all(path in names for path in ee["dependencies"].values())
    (tmp_path / "ansible.cfg").write_text("[defaults]\nstdout_callback = default\n")
    collections = tmp_path / "collections"
    run([str(BIN / "ansible-galaxy"), "collection", "install", "--no-deps", "-p", str(collections), str(tarball)],
        tmp_path, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"))
    installed = collections / "ansible_collections" / "metalserve" / "sglang"
    assert (installed / "MANIFEST.json").exists()
    out = run([str(BIN / "ansible-playbook"), "metalserve.sglang.render", "-i", str(ROOT / "inventories" / "example"),
               "-e", f"sglang_render_dir={tmp_path / 'rendered'}"], tmp_path,
              ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(collections))
    plan = (tmp_path / "rendered" / "PLAN.md").read_text()
    assert "glm-5.3" in plan and "failed=0" in out.stdout
    # the same inventory rendered from the checkout gives the same commands
    for host_dir in (tmp_path / "rendered").iterdir():
        if host_dir.is_dir() and (host_dir / "serve.args").exists():
            assert (host_dir / "serve.args").read_text().startswith("--model-path")


def test_execution_environment_definition_builds_a_context(tmp_path: Path) -> None:
    if not list(DIST.glob("metalserve-sglang-*.tar.gz")):
        run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(DIST)], ROOT)
    run([str(BIN / "ansible-builder"), "create", "-f", str(ROOT / "execution-environment.yml"), "--context",
         str(tmp_path / "context")], ROOT)
    context = tmp_path / "context"
    containerfile = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    assert "quay.io/fedora/fedora:41" in containerfile
    assert "ansible-galaxy collection install --no-deps /build/collections/metalserve-sglang-" in containerfile
    reqs = (tmp_path / "context" / "_build" / "requirements.txt").read_text()
    assert "PyYAML==6.0.4" in reqs
