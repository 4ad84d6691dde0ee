"""A release carries its changelog: galaxy.yml's version is released in changelogs/changelog.yaml (antsibull-changelog's
file, which the tarball ships) and in CHANGELOG.rst, no fragment of a released version lingers, and the execution
environment definition names the tarball of that version. `make release VERSION=x.y.z` does all of it."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent
VERSION = str(yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"])
CHANGES = yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text())
FRAGMENTS = sorted(p.name for p in (ROOT / "changelogs" / "fragments").glob("*.y*ml"))


def test_galaxy_version_is_released() -> None:
    releases = CHANGES.get("releases") or {}
    assert VERSION in releases, (
        f"galaxy.yml says {VERSION} and changelogs/changelog.yaml has no release {VERSION} (it has "
        f"{', '.join(map(str, releases))}): the tarball would ship a changelog without its own version. "
        f"Run `make release VERSION={VERSION}` (antsibull-changelog release).")
    assert releases[VERSION].get("release_date") and releases[VERSION].get("changes"), releases[VERSION]


def test_no_fragment_of_a_released_version_lingers() -> None:
    released = {f: v for v, rel in (CHANGES.get("releases") or {}).items() for f in rel.get("fragments") or []}
    lingering = {f: released[f] for f in FRAGMENTS if f in released}
    assert not lingering, (f"changelogs/fragments still holds fragments released in {lingering}: "
                           "antsibull-changelog release removes them (keep_fragments: false)")


def test_changelog_rst_has_every_release() -> None:
    text = (ROOT / "CHANGELOG.rst").read_text()
    headings = re.findall(r"^v(\S+)\n=+$", text, re.M)
    assert sorted(headings) == sorted(map(str, CHANGES["releases"])), headings


def test_changelog_rst_is_what_antsibull_changelog_generates(tmp_path: Path) -> None:
    """CHANGELOG.rst as antsibull-changelog writes it from changelog.yaml (nobody edits it by hand)."""
    copy = tmp_path / "c"
    for name in ("galaxy.yml", "CHANGELOG.rst"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((ROOT / name).read_bytes())
    (copy / "changelogs").mkdir()
    for name in ("config.yaml", "changelog.yaml", ".plugin-cache.yaml"):
        if (ROOT / "changelogs" / name).exists():
            (copy / "changelogs" / name).write_bytes((ROOT / "changelogs" / name).read_bytes())
    (copy / "changelogs" / "fragments").mkdir()
    proc = subprocess.run([str(BIN / "antsibull-changelog"), "generate"], cwd=copy, capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (copy / "CHANGELOG.rst").read_text() == (ROOT / "CHANGELOG.rst").read_text()


def test_the_execution_environment_installs_this_version() -> None:
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    files = [c["name"] for c in ee["dependencies"]["galaxy"]["collections"] if c.get("type") == "file"]
    assert files == [f"collections/metalserve-sglang-{VERSION}.tar.gz"], files


def test_the_execution_environment_pins_what_make_test_runs() -> None:
    """execution-environment.yml's Python pins are requirements/test.txt's; requirements/plugins.txt (what anyone's
    EE reads through meta/execution-environment.yml) pins nothing exactly, so it resolves beside other collections."""
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    tested = {line.split("==")[0].lower(): line.split("#")[0].strip()
              for line in (ROOT / "requirements" / "test.txt").read_text().splitlines() if "==" in line}
    assert all(tested[pin.split("==")[0].lower()] == pin for pin in ee["dependencies"]["python"]), ee["dependencies"]
    plugins = [line.strip() for line in (ROOT / "requirements" / "plugins.txt").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    assert plugins and not [line for line in plugins if "==" in line], plugins
