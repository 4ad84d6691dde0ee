"""The execution environment of execution-environment.yml, built for real (ansible-builder 3 and this machine's
Docker, tests/ee/build.py), and AWX jobs run in it against the lab site test_lab_site.py converged.

STAND-INS (no registry is reachable here; tests/ee/build.py says exactly what): the base image is Debian 12 made with
debootstrap, with Debian's own Python, instead of quay.io/fedora/fedora:41 (bindep.txt's [platform:dpkg] entries, and
an apt-get taking dnf's arguments as the builder's package manager); community.docker, ansible.posix and
community.general come from tarballs of the `ansible` package's copies instead of Galaxy. The collection goes in as
the definition says, a galaxy requirement of type file.

What is checked:
- the image: the collections where uid 1000 with HOME=/runner (AWX's job user) reads them, the plugins' Python at the
  definition's pins, bindep's packages, and render.yml run by that user as it is written in the README;
- jobs as AWX runs them (tests/lab/awx.py run_in_ee: ansible-runner transmit, worker inside the EE as uid 1000,
  process), with the inventory script AWX writes, the job template's extra variables, a machine credential (the lab
  key through ssh-agent, the user by -u) and the two custom credential types of docs/awx.md applied as AWX applies
  injectors (the lab's secrets and known_hosts come only from them): render.yml writes rendered/ in the job's
  project, the same files as the controller renders; `site.yml --tags plan` makes the artifact at plans/lab.json in
  the project; a slice job of a fresh project copy holding that artifact converges its hosts from files removed to
  byte for byte what the unsliced run wrote (host keys checked against the injected known_hosts);
  `upgrade.yml --check` writes its folder on a mounted path (upgrade_dir), not in the project."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT
from ansible_collections.metalserve.sglang.tests.integration import lab_site
from ansible_collections.metalserve.sglang.tests.integration.test_lab_slices import FIND, node_files, recap

sys.path.insert(0, str(ROOT / "tests" / "lab"))
sys.path.insert(0, str(ROOT / "tests" / "ee"))
import awx  # noqa: E402
import build  # noqa: E402
import lab  # noqa: E402

#: the inventory's connection settings the EE jobs get from credentials instead (the key and known_hosts are host
#: paths of this machine), and the secrets, which come from the secrets credential
CONNECTION = ("ansible_ssh_private_key_file", "ansible_ssh_common_args", "ansible_user")


def doc_block(page: Path, marker: str, lang: str = "yaml") -> str:
    """The fenced block of `lang` whose first line holds `marker` (docs are tested as they are written)."""
    blocks = [b for b in re.findall(rf"```{lang}\n(.*?)```", page.read_text(), re.S) if marker in b.splitlines()[0]]
    assert len(blocks) == 1, (page, marker, len(blocks))
    return blocks[0]


def project(private: Path, artifact: Path | None = None) -> Path:
    """What AWX copies into a job: the site's project (playbooks importing the collection's, the README's ansible.cfg,
    and a committed plan artifact)."""
    proj = private / "project"
    proj.mkdir(parents=True)
    (proj / "ansible.cfg").write_text(doc_block(ROOT / "README.md", "[defaults]", "ini"))
    for name in ("site", "render", "upgrade"):
        (proj / f"{name}.yml").write_text(f"---\n- name: The collection's {name}.yml\n"
                                          f"  ansible.builtin.import_playbook: metalserve.sglang.{name}\n")
    if artifact:
        (proj / "plans").mkdir()
        shutil.copy(artifact, proj / "plans" / "lab.json")
    return proj


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    result = build.build()
    print("\n[ee] " + ", ".join(f"{k} {v} s" for k, v in result["seconds"].items()))
    return result


def in_image(image: dict[str, Any], script: str, *docker: str) -> str:
    proc = subprocess.run(["docker", "run", "--rm", "--user", "1000", *docker, image["tag"], "bash", "-c", script],
                          capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_the_image_serves_the_collection_to_the_job_user(image: dict[str, Any], tmp_path: Path) -> None:
    out = in_image(image, "echo HOME=$HOME UID=$(id -u); ansible-galaxy collection list --format json; "
                          "python3 -c 'import yaml, matplotlib; print(\"PY\", yaml.__version__, matplotlib.__version__)';"
                          " ssh -V 2>&1; rsync --version | head -1; ansible --version | head -1")
    assert "HOME=/runner UID=1000" in out
    listing = json.loads(out[out.index("{"):out.rindex("}") + 1])
    # ansible-core 2.19 lists its own internal collection (ansible._protomatter) under its package: not an install
    listing = {path: found for path, found in listing.items() if "/ansible/_internal/" not in path}
    assert list(listing) == ["/usr/share/ansible/collections/ansible_collections"], listing
    collections = listing["/usr/share/ansible/collections/ansible_collections"]
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    assert collections["metalserve.sglang"]["version"] == version
    assert {"community.docker", "ansible.posix", "community.general"} <= set(collections)
    pins = dict(p.split("==") for p in image["definition"]["dependencies"]["python"])
    assert f"PY {pins['PyYAML']} {pins['matplotlib']}" in out
    assert "OpenSSH_" in out and "rsync  version" in out and "[core 2.19.14]" in out
    # the README's quickstart as the job user: the example inventory out of the installed collection, render.yml
    out = in_image(image, "cd /tmp && cp -r /usr/share/ansible/collections/ansible_collections/metalserve/sglang/"
                          "inventories/example inventories-example && ansible-playbook metalserve.sglang.render "
                          "-i inventories-example >/dev/null && ls rendered/PLAN.md rendered/plan.json")
    assert "rendered/PLAN.md" in out


@pytest.fixture(scope="module")
def credentials() -> dict[str, dict[str, Any]]:
    """The two credential types of docs/awx.md, as an administrator pastes them into AWX."""
    page = ROOT / "docs" / "awx.md"
    return {"secrets": yaml.safe_load(doc_block(page, 'Credential type "metalserve.sglang secrets"')),
            "known_hosts": yaml.safe_load(doc_block(page, 'Credential type "SSH known hosts"'))}


def job(tmp: Path, name: str, site: dict, image: dict, credentials: dict, playbook: str, extravars: dict[str, Any],
        cmdline: list[str], data: dict[str, Any], artifact: Path | None = None, docker: tuple[str, ...] = ()) -> dict:
    """One AWX job in the EE: the project, the credentials injected, the machine credential, the lab's network."""
    private = tmp / name
    project(private, artifact)
    env, args = awx.inject(credentials["secrets"], {"hf_token": lab_site.SECRETS["sglang_hf_token"],
                                                    "api_key": lab_site.SECRETS["sglang_api_key"],
                                                    "registry_password": lab_site.SECRETS["sglang_install_registry_password"]},
                           private)
    known_env, known_args = awx.inject(credentials["known_hosts"],
                                       {"known_hosts": (lab.lab_dir(lab_site.NAME) / "known_hosts").read_text()}, private)
    env = {**env, **known_env, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    result = awx.run_in_ee(private, image["tag"], playbook, data, extravars, ["-u", lab.USER, *args, *known_args,
                                                                              *cmdline], env,
                           ssh_key=lab.SSH_KEY.read_text(), docker_args=("--network", f"metalserve-{lab_site.NAME}-net",
                                                                         *docker))
    print(f"\n[ee] {name}: {result['seconds']} s")
    return result


@pytest.fixture(scope="module")
def inventory(site: dict) -> dict[str, Any]:
    """The lab's inventory as AWX holds it: no host paths of this machine, no secrets (credentials bring them)."""
    exported = awx.export(site["inv"])
    for name in CONNECTION + tuple(lab_site.SECRETS):
        exported.get("all", {}).get("vars", {}).pop(name, None)
    assert not [h for h, v in exported["_meta"]["hostvars"].items() if set(v) & set(CONNECTION + tuple(lab_site.SECRETS))]
    return exported


def test_render_in_the_ee_writes_the_projects_rendered(site: dict, image: dict, credentials: dict, inventory: dict,
                                                       tmp_path: Path) -> None:
    data = awx.script_data(inventory)
    result = job(tmp_path, "render", site, image, credentials, "render.yml", {}, [], data)
    assert result["rc"] == 0, result["stdout"][-4000:] + result["stderr"]
    ee_rendered = result["worker"] / "project" / "rendered"
    assert (ee_rendered / "PLAN.md").is_file() and (ee_rendered / "plan.json").is_file()
    assert ee_rendered.stat().st_uid == 1000
    # the same inventory and credentials rendered on the controller (no fact cache on either side), from a folder
    # named as ansible-runner names the job's (PLAN.md names the inventory's folder)
    here = tmp_path / "controller"
    awx.write_script(data, here / "inventory" / "hosts")
    proc = lab.run_ansible(["ansible-playbook", "-i", str(here / "inventory" / "hosts"), "playbooks/render.yml", "-e",
                            f"sglang_render_dir={here / 'rendered'}", "-e", json.dumps(lab_site.SECRETS)],
                           quiet=True, extra_env={"ANSIBLE_CACHE_PLUGIN": "memory"})
    assert proc.returncode == 0
    files = sorted(str(p.relative_to(ee_rendered)) for p in ee_rendered.rglob("*") if p.is_file())
    assert files == sorted(str(p.relative_to(here / "rendered")) for p in (here / "rendered").rglob("*") if p.is_file())
    different = [f for f in files if (ee_rendered / f).read_bytes() != (here / "rendered" / f).read_bytes()]
    assert not different, different


@pytest.fixture(scope="module")
def plan_job(site: dict, image: dict, credentials: dict, inventory: dict, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("ee-plan")
    result = job(tmp, "plan", site, image, credentials, "site.yml", {"sglang_plan_artifact": "plans/lab.json"},
                 ["--tags", "plan"], awx.script_data(inventory))
    result["artifact"] = result["worker"] / "project" / "plans" / "lab.json"
    return result


def test_the_plan_job_writes_the_artifact_in_its_project(plan_job: dict) -> None:
    assert plan_job["rc"] == 0, plan_job["stdout"][-4000:] + plan_job["stderr"]
    assert plan_job["artifact"].is_file()
    assert all("unreachable=0" in line and "failed=0" in line for line in recap(plan_job["stdout"]).values())


def test_a_slice_converges_from_the_ee(site: dict, image: dict, credentials: dict, inventory: dict,
                                       plan_job: dict, tmp_path: Path) -> None:
    assert plan_job["rc"] == 0
    data = awx.script_data(inventory, 1, 3)
    hosts = sorted(data["_meta"]["hostvars"])
    before = {h: node_files(h) for h in hosts}
    for host in hosts:   # what site.yml wrote on the slice's nodes: the job must write it again
        subprocess.run(["docker", "exec", host, "sh", "-c", f"rm -f $({FIND}) && systemctl daemon-reload"],
                       check=True, capture_output=True)
    result = job(tmp_path, "slice1", site, image, credentials, "site.yml",
                 {"sglang_plan_artifact": "plans/lab.json"}, ["--skip-tags", lab.SKIP], data,
                 artifact=plan_job["artifact"])
    after = {h: node_files(h) for h in hosts}
    assert result["rc"] == 0, result["stdout"][-4000:] + result["stderr"]
    assert sorted(recap(result["stdout"])) == hosts
    for host in hosts:
        assert before[host] and after[host] == before[host], host
    print(f"\n[ee] slice 1 of 3 ({', '.join(hosts)}): {sum(len(v) for v in after.values())} files written from the EE, "
          "identical to the unsliced run's")


def test_upgrade_state_lives_on_a_mounted_path(site: dict, image: dict, credentials: dict, inventory: dict,
                                               tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.chown(shared, 1000, 0)
    result = job(tmp_path, "upgrade", site, image, credentials, "upgrade.yml",
                 {"upgrade_dir": "/srv/metalserve/lab/upgrade"}, ["--check"], awx.script_data(inventory),
                 docker=("-v", f"{shared}:/srv/metalserve"))
    assert result["rc"] == 0, result["stdout"][-4000:] + result["stderr"]
    assert (shared / "lab" / "upgrade" / "CHANGE.md").is_file()
    assert not (result["worker"] / "project" / "rendered" / "upgrade").exists()
