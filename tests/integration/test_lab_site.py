"""site.yml on the lab (tests/lab/lab.py: two GPU-less nodes as a PD pair and a real router, the code
behind `make lab` / `make lab-destroy`), with an HF token, an API key and a registry password set:

- converge at -vvv, then a second converge changes nothing, then --check --diff changes nothing;
- the secrets audit: each secret appears nowhere outside its own file (0600 environment file, 0640
  --config file): not in Ansible's -vvv or --diff output, rendered/, unit files, `systemctl show`, any
  process's command line, the journal, or `docker inspect` of the nodes;
- destroy leaves no container, network or inventory behind.
Docker-mode servers are not in this lab (no SGLang image is reachable); that their token is a mounted
file rather than container environment is unit tested (test_serving_units.py).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "lab"))
import lab  # noqa: E402

NAME = "audit"
SECRETS = {"sglang_hf_token": "hf_AUDIT_token_5c1b2e9d", "sglang_api_key": "sk-AUDIT-key-77e1d0aa",
           "sglang_install_registry_password": "reg-AUDIT-pass-9f3a41"}


@pytest.fixture(scope="module")
def site() -> dict:
    lab.destroy(NAME)
    inv = lab.up(NAME, 2, "pd", SECRETS)
    runs = {}
    try:
        for key, extra in (("first", ["-vvv"]), ("second", []), ("check", ["--check", "--diff", "-v"])):
            proc = lab.converge(NAME, False, extra) if key != "check" else lab.run_ansible(
                ["ansible-playbook", "-i", str(inv), "playbooks/site.yml", "--skip-tags", lab.SKIP] + extra, quiet=True)
            runs[key] = proc
        yield {"inv": inv, "runs": runs, "hosts": lab.containers(NAME)}
    finally:
        lab.destroy(NAME)
        assert lab.containers(NAME) == []
        assert not lab.lab_dir(NAME).exists()


def recap(out: str) -> dict[str, str]:
    return dict(re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M))


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False).stdout


def test_converges_then_changes_nothing(site: dict) -> None:
    first, second, check = (site["runs"][k] for k in ("first", "second", "check"))
    assert first.returncode == 0, first.stdout[-3000:]
    assert second.returncode == 0 and check.returncode == 0
    assert len(recap(second.stdout)) == 3
    for name, proc in (("second", second), ("check", check)):
        for host, line in recap(proc.stdout).items():
            assert "changed=0" in line and "failed=0" in line, f"{name} {host}: {line}"


def test_router_serves_and_workers_are_enabled(site: dict) -> None:
    router = next(h for h in site["hosts"] if h.endswith("router"))
    health = docker("exec", router, "python3", "-c",
                    "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/health').status)")
    assert health.strip() == "200"
    for node in (h for h in site["hosts"] if "node" in h):
        units = docker("exec", node, "systemctl", "list-unit-files", "sglang-*", "--no-legend")
        assert re.search(r"sglang-glm-5\.3-(prefill|decode)\.service\s+enabled", units), units


def test_secrets_audit(site: dict, tmp_path: Path) -> None:
    render = lab.run_ansible(["ansible-playbook", "-i", str(site["inv"]), "playbooks/render.yml", "-e",
                              f"sglang_render_dir={tmp_path / 'rendered'}"], quiet=True)
    places: dict[str, str] = {
        "ansible -vvv (first converge)": site["runs"]["first"].stdout + site["runs"]["first"].stderr,
        "ansible --check --diff": site["runs"]["check"].stdout + site["runs"]["check"].stderr,
        "render.yml output": render.stdout,
        "rendered/": "\n".join(p.read_text(errors="replace") for p in (tmp_path / "rendered").rglob("*") if p.is_file()),
    }
    for host in site["hosts"]:
        places[f"{host}: unit files"] = docker("exec", host, "sh", "-c", "cat /etc/systemd/system/sglang-*.service")
        places[f"{host}: systemctl show"] = docker("exec", host, "sh", "-c", "systemctl show 'sglang-*' --all")
        places[f"{host}: ps"] = docker("exec", host, "ps", "-eo", "args")
        places[f"{host}: journal"] = docker("exec", host, "journalctl", "--no-pager", "-o", "cat")
        places[f"{host}: docker inspect"] = docker("inspect", host)
    assert all(places.values()), [k for k, v in places.items() if not v]
    leaks = [f"{name} in {where}" for where, text in places.items() for name, value in SECRETS.items() if value in text]
    assert leaks == []
    # where they must be, with the right modes
    for node in (h for h in site["hosts"] if "node" in h):
        env = docker("exec", node, "sh", "-c", "stat -c '%a %U' /etc/sglang/glm-5.3-*.env; cat /etc/sglang/glm-5.3-*.env")
        assert env.startswith("600 root") and f"HF_TOKEN={SECRETS['sglang_hf_token']}" in env
        cfg = docker("exec", node, "sh", "-c", "stat -c '%a %U %G' /etc/sglang/*.secrets.yaml; cat /etc/sglang/*.secrets.yaml")
        assert cfg.startswith("640 root sglang") and SECRETS["sglang_api_key"] in cfg
    print(f"\nsecrets audit: {len(SECRETS)} secrets x {len(places)} places, 0 leaks")
