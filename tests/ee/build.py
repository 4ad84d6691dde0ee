"""Build the execution environment of execution-environment.yml for real, with ansible-builder 3 and this machine's
Docker, where no registry can be reached. (make ee; tests/integration/test_lab_slices_ee.py)

  python tests/ee/build.py [--tag metalserve-ee/sglang:test]

What stands in, and nothing else (the rest of execution-environment.yml is used as it is, checked by stand_ins()):
  - images.base_image: quay.io/fedora/fedora:41 -> a Debian 12 image made with debootstrap (tests/ee/base.sh), with
    Debian's own Python; options.package_manager_path -> its dnf-grammar apt-get (tests/ee/ee-apt), so bindep.txt's
    [platform:dpkg] entries are installed; options.skip_pip_install, as Debian's system Python has pip from its
    package (python3-pip) and refuses `python3 -m ensurepip`;
  - the galaxy requirements that come from Galaxy (community.docker, ansible.posix, community.general, and
    community.docker's own dependency community.library_inventory_filtering_v1) -> tarballs of the same
    collections as the `ansible` package from PyPI bundles them (requirements/test.txt pins it), each a galaxy
    requirement of type file; the versions must satisfy the definition's constraints.
The collection itself goes in as the definition says: .build/dist's tarball, a galaxy requirement of type file.
Cached like the lab: the base image (keyed by its recipe), docker's layer cache (ansible-core and the builder's tools
are installed once; a new collection tarball rebuilds from the galaxy stage on), the dependency tarballs
($METALSERVE_CACHE/ee/collections, keyed by version)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("METALSERVE_CACHE", Path.home() / ".cache" / "metalserve-sglang")) / "ee"
BIN = Path(sys.executable).parent
BASE_IMAGE = os.environ.get("EE_BASE_IMAGE", "metalserve-ee/debian-python:12")
TAG = "metalserve-ee/sglang:test"
PKGMGR = "/usr/local/bin/ee-apt"


def bundled() -> Path:
    """The collections the `ansible` package bundles: its ansible_collections folder, beside ansible-core's."""
    import ansible  # noqa: PLC0415

    return Path(ansible.__file__).resolve().parents[1] / "ansible_collections"


def manifest(path: Path) -> dict[str, Any]:
    return json.loads((path / "MANIFEST.json").read_text())["collection_info"]


def tarball(name: str, out: Path) -> tuple[Path, dict[str, Any]]:
    """A galaxy tarball of a bundled collection, made by `ansible-galaxy collection build` from its files as the
    `ansible` package installs them (which leaves out the tests and CI files its FILES.json still lists) and a
    galaxy.yml written from its MANIFEST.json's collection_info."""
    namespace, coll = name.split(".")
    src = bundled() / namespace / coll
    info = manifest(src)
    dest = out / f"{namespace}-{coll}-{info['version']}.tar.gz"
    if not dest.exists():
        out.mkdir(parents=True, exist_ok=True)
        tree = out / f".{namespace}.{coll}"
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "MANIFEST.json", "FILES.json"))
        galaxy = {k: v for k, v in info.items() if v not in (None, "", [], {})}
        if galaxy.get("license"):
            galaxy.pop("license_file", None)
        (tree / "galaxy.yml").write_text(yaml.safe_dump(galaxy))
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
        run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(out), str(tree)], env=env)
        shutil.rmtree(tree)
    return dest, info


def dependency_tarballs(names: list[str], out: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Tarballs of `names` and of the collections they depend on, from the `ansible` package."""
    made: dict[str, tuple[Path, dict[str, Any]]] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in made:
            made[name] = tarball(name, out)
            todo += list(made[name][1].get("dependencies") or {})
    return made


def stand_ins(definition: dict[str, Any], made: dict[str, tuple[Path, dict[str, Any]]], out: Path) -> dict[str, Any]:
    """execution-environment.yml with the stand-ins above and nothing else changed; file paths made absolute."""
    derived = json.loads(json.dumps(definition))
    derived["images"]["base_image"]["name"] = BASE_IMAGE
    derived.setdefault("options", {}).update(package_manager_path=PKGMGR, skip_pip_install=True)
    collections = []
    for entry in derived["dependencies"]["galaxy"]["collections"]:
        if entry.get("type") == "file":
            collections.append(entry)
            continue
        path, info = made[entry["name"]]
        assert info["version"] in SpecifierSet(entry.get("version", "").replace("*", "") or ">=0"), (entry, info)
        collections.append({"name": f"collections/{path.name}", "type": "file"})
    collections += [{"name": f"collections/{path.name}", "type": "file"} for name, (path, _i) in sorted(made.items())
                    if name not in {e["name"] for e in definition["dependencies"]["galaxy"]["collections"]}]
    derived["dependencies"]["galaxy"]["collections"] = collections
    if isinstance(derived["dependencies"].get("system"), str):
        derived["dependencies"]["system"] = str(ROOT / derived["dependencies"]["system"])
    derived["additional_build_files"] = [{**f, "src": str(ROOT / f["src"])} for f in derived["additional_build_files"]]
    derived["additional_build_files"].append({"src": str(out), "dest": "collections"})
    return derived


def run(args: list[str], **kw: Any) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, text=True, capture_output=True, check=False, **kw)
    if proc.returncode:
        raise SystemExit(f"{' '.join(args[:4])} ... failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}")
    return proc


def build(tag: str = TAG) -> dict[str, Any]:
    """Build the image; {'tag', 'seconds': {step: s}, 'definition': the derived definition, 'log': builder's output}."""
    seconds: dict[str, float] = {}
    started = time.monotonic()
    run(["bash", str(ROOT / "tests" / "ee" / "base.sh")])
    seconds["base image"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(ROOT / ".build" / "dist")],
        cwd=ROOT, env=env)
    definition = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    names = [e["name"] for e in definition["dependencies"]["galaxy"]["collections"] if e.get("type") != "file"]
    made = dependency_tarballs(names, CACHE / "collections")
    work = ROOT / ".build" / "ee"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    derived = stand_ins(definition, made, CACHE / "collections")
    (work / "execution-environment.yml").write_text(
        "# execution-environment.yml with tests/ee/build.py's stand-ins (see there)\n" + yaml.safe_dump(derived, sort_keys=False))
    seconds["tarballs"] = round(time.monotonic() - started, 1)
    started = time.monotonic()
    proc = run([str(BIN / "ansible-builder"), "build", "-f", str(work / "execution-environment.yml"), "--context",
                str(work / "context"), "-t", tag, "--container-runtime", "docker", "-v", "3"], cwd=work)
    seconds["ansible-builder build"] = round(time.monotonic() - started, 1)
    (work / "build.log").write_text(proc.stdout + proc.stderr)
    return {"tag": tag, "seconds": seconds, "definition": derived, "log": proc.stdout + proc.stderr}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", default=TAG)
    result = build(ap.parse_args().tag)
    print(f"[ee] built {result['tag']}: " + ", ".join(f"{k} {v} s" for k, v in result["seconds"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
