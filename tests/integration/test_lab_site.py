"""site.yml on the lab (tests/lab/lab.py, the code behind `make lab`, in its `full` shape: a PD pair with
sglang_dist_interface behind a real sglang-router, a uv server of another SGLang release, a docker-mode server
whose image comes through a registry mirror, and a docker-mode router), over SSH as an unprivileged user with
sudo, with an HF token, an API key and a registry password set:

- converge at -vvv, then a second converge changes nothing, then --check --diff changes nothing;
- what rendered/ shows is byte for byte what each node got: render.yml over the same inventory and the
  facts site.yml cached, compared with the unit, environment file (secrets masked) and docker command on
  each node;
- the secrets audit: each secret appears nowhere outside its own file (0600 environment file, 0640
  --config file): not in Ansible's -vvv or --diff output, rendered/, unit files, `systemctl show`, any
  process's command line, the journal, or `docker inspect` of the nodes;
- destroy leaves no container, network or inventory behind.
The lab and its three runs are the `site` fixture (conftest.py, lab_site.py), which test_lab_slices.py shares.
The docker-mode server and router are written and enabled, not started (their image is a stand-in; the
docker-mode router runs for real in molecule/sglang_router_docker).
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "lab"))
import lab  # noqa: E402

from ansible_collections.metalserve.sglang.tests.integration import lab_site  # noqa: E402

SECRETS = lab_site.SECRETS


def recap(out: str) -> dict[str, str]:
    """The lab hosts' recap lines (site.yml's first play, the inventory check, runs on the controller's localhost)."""
    return {h: line for h, line in re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M) if h != "localhost"}


def changed_tasks(out: str) -> list[str]:
    """'TASK name: host' for every task that reported a change (for the failure message)."""
    found, task = [], ""
    for line in out.splitlines():
        if line.startswith("TASK ["):
            task = line[6:].split("]", 1)[0]
        elif line.startswith("changed: ["):
            found.append(f"{task}: {line[10:].split(']', 1)[0]}")
    return found


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False).stdout


def test_converges_then_changes_nothing(site: dict) -> None:
    first, second, check = (site["runs"][k] for k in ("first", "second", "check"))
    assert first.returncode == 0, first.stdout[-3000:]
    assert second.returncode == 0 and check.returncode == 0
    assert len(recap(second.stdout)) == 6
    for name, proc in (("second", second), ("check", check)):
        for host, line in recap(proc.stdout).items():
            assert "changed=0" in line and "failed=0" in line, f"{name} {host}: {line}; {changed_tasks(proc.stdout)}"


def test_router_serves_and_workers_are_enabled(site: dict) -> None:
    router = next(h for h in site["hosts"] if h.endswith("router"))
    health = docker("exec", router, "python3", "-c",
                    "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/health').status)")
    assert health.strip() == "200"
    for node in (h for h in site["hosts"] if "node" in h):
        units = docker("exec", node, "systemctl", "list-unit-files", "sglang-*", "--no-legend")
        assert re.search(r"sglang-glm-5\.3(-prefill|-decode)?\.service\s+enabled", units), units


def node_file(host: str, path: str) -> str:
    return subprocess.run(["docker", "exec", host, "cat", path], capture_output=True, text=True, check=True).stdout


def test_nodes_got_exactly_what_render_shows(site: dict, tmp_path: Path) -> None:
    """render.yml over the same inventory, with the facts site.yml cached: every node's files are the preview's."""
    render = lab.run_ansible(["ansible-playbook", "-i", str(site["inv"]), "playbooks/render.yml", "-e",
                              f"sglang_render_dir={tmp_path}"], quiet=True)
    assert render.returncode == 0
    plan_md = (tmp_path / "PLAN.md").read_text()
    assert "None: every value in rendered/ is what the nodes get." in plan_md  # every fact was known
    compared = 0
    for host in site["hosts"]:
        rendered = tmp_path / host
        units = sorted(rendered.glob("files/etc/systemd/system/sglang-*.service"))
        assert len(units) == 1, (host, sorted(p.relative_to(rendered).as_posix() for p in rendered.rglob("*")))
        unit = units[0]
        # every file of the stages the lab runs (lab.SKIP leaves out the hardware stages and monitoring: the serving
        # files, the install's marker, the weights'), as rendered/<host>/<stage>.yml lists them: byte for byte, mode
        # and owner
        for stage in ("serve", "install", "weights"):
            view_path = rendered / f"{stage}.yml"
            if not view_path.exists():
                continue
            view = yaml.safe_load(view_path.read_text())
            for entry in view.get("files") or []:
                if entry["content"] == "decided on the node":
                    continue
                text = (rendered / entry["content"]).read_text()
                on_node = node_file(host, entry["path"])
                for name, value in SECRETS.items():
                    on_node = on_node.replace(value, f"<secret: {name}>")
                assert on_node == text, f"{host}: {entry['path']} differs from rendered/{host}/{entry['content']}"
                mode, owner = docker("exec", host, "stat", "-c", "%a %U", entry["path"]).split()
                assert (mode.zfill(4), owner) == (entry["mode"], entry.get("owner", "root")), (host, entry["path"])
                compared += 1
        if (rendered / "docker-run.sh").exists():
            import shlex
            argv = shlex.split((rendered / "docker-run.sh").read_text().split("exec ", 1)[1].replace("\\\n", " "))
            exec_start = unit.read_text().split("ExecStart=", 1)[1].split("\nExecStop", 1)[0].replace("\\\n", " ")
            assert shlex.split(exec_start) == argv, host
    # the features this lab exists for, as the nodes have them
    by_name = {h.rsplit("-", 1)[1]: h for h in site["hosts"]}
    mirror = node_file(by_name["node4"], "/etc/systemd/system/sglang-glm-5.3.service")
    assert "127.0.0.1:5000/lmsysorg/sglang:latest" in mirror                       # the registry mirror
    assert "/opt/sglang/venvs/0.5.13.post1/bin/sglang" in node_file(by_name["node3"], "/etc/systemd/system/sglang-glm-5.3.service")
    router2 = node_file(by_name["router2"], "/etc/systemd/system/sglang-router-singles.service")
    assert "/usr/bin/docker run" in router2 and "127.0.0.1:5000/lmsysorg/sglang:latest" in router2
    ip = docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", by_name["node1"]).strip()
    env1 = node_file(by_name["node1"], "/etc/sglang/glm-5.3-prefill.env")
    assert "NCCL_SOCKET_IFNAME=eth0" in env1 and ip                                # sglang_dist_interface
    print(f"\npreview is deploy: {compared} files on {len(site['hosts'])} nodes identical to rendered/")


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
        docker_mode = node.endswith("node4")
        env = docker("exec", node, "sh", "-c", "stat -c '%a %U' /etc/sglang/glm-5.3*.env; cat /etc/sglang/glm-5.3*.env")
        assert env.startswith("600 root"), env
        if docker_mode:  # the container gets the token as a mounted file, never in its environment
            token = docker("exec", node, "sh", "-c", "stat -c '%a %U' /etc/sglang/*.hf_token; cat /etc/sglang/*.hf_token")
            assert token.startswith("600 root") and SECRETS["sglang_hf_token"] in token
            assert "HF_TOKEN_PATH=/run/secrets/hf_token" in env and SECRETS["sglang_hf_token"] not in env
        else:
            assert f"HF_TOKEN={SECRETS['sglang_hf_token']}" in env
        cfg = docker("exec", node, "sh", "-c", "stat -c '%a %U %G' /etc/sglang/*.secrets.yaml; cat /etc/sglang/*.secrets.yaml")
        assert cfg.startswith("640 root " + ("root" if docker_mode else "sglang")) and SECRETS["sglang_api_key"] in cfg
    print(f"\nsecrets audit: {len(SECRETS)} secrets x {len(places)} places, 0 leaks")


# --- the mixed shape: three models, four replicas on one node, a router per model (issue 28) -------------------------

MIXED = "mixed"


@pytest.fixture(scope="module")
def mixed_site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """lab.py's mixed shape: one converge, a second converge, one verify.yml (TEST DOUBLEs answer on every port)."""
    lab.destroy(MIXED)
    inv = lab.up(MIXED, 3, "mixed")
    report = tmp_path_factory.mktemp("verify") / "VERIFY.md"
    try:
        runs = {"first": lab.converge(MIXED, False, []), "second": lab.converge(MIXED, False, [])}
        runs["verify"] = lab.run_ansible(["ansible-playbook", "-i", str(inv), "playbooks/verify.yml",
                                          "-e", f"verify_report={report}"])
        yield {"inv": inv, "runs": runs, "report": report, "hosts": lab.containers(MIXED)}
    finally:
        lab.destroy(MIXED)
        assert lab.containers(MIXED) == []


def test_a_run_that_changes_nothing_reads_each_node_once(site: dict) -> None:
    """The second converge ran node_state once per host (site.yml's node probe), and no stage read the node again:
    counted by Ansible's callback from what each task ran on the hosts, not from the roles' own bookkeeping."""
    hosts = recap(site["runs"]["second"].stdout)
    actions = site["modules"].get("actions", {})
    assert actions.get("node_probe") == len(hosts), actions
    assert "node_state" not in actions and "weights_check" not in actions, actions


def test_mixed_site_converges_then_changes_nothing(mixed_site: dict) -> None:
    first, second = mixed_site["runs"]["first"], mixed_site["runs"]["second"]
    assert first.returncode == 0, first.stdout[-3000:]
    assert second.returncode == 0, second.stdout[-3000:]
    assert len(recap(second.stdout)) == 6
    for host, line in recap(second.stdout).items():
        assert "changed=0" in line and "failed=0" in line, f"{host}: {line}; {changed_tasks(second.stdout)}"


def test_mixed_site_runs_four_replicas_on_the_qwen_node(mixed_site: dict, tmp_path: Path) -> None:
    node = f"metalserve-{MIXED}-node3"
    units = docker("exec", node, "systemctl", "list-unit-files", "sglang-*", "--no-legend")
    assert sorted(re.findall(r"^(sglang-\S+)\s+enabled", units, re.M)) == [
        f"sglang-qwen3.8-27b-r{i}.service" for i in range(4)]
    for i in range(4):
        unit = node_file(node, f"/etc/systemd/system/sglang-qwen3.8-27b-r{i}.service")
        assert f"--nccl-port {30001 + 10 * i}" in unit and f"--port {30000 + 10 * i}" in unit
        env = node_file(node, f"/etc/sglang/qwen3.8-27b-r{i}.env")
        assert f"CUDA_VISIBLE_DEVICES={2 * i},{2 * i + 1}\n" in env and "CUDA_DEVICE_ORDER=PCI_BUS_ID\n" in env
    # what render.yml shows for the node (the facts site.yml cached) is what it got, file by file
    render = lab.run_ansible(["ansible-playbook", "-i", str(mixed_site["inv"]), "playbooks/render.yml", "-e",
                              f"sglang_render_dir={tmp_path}"], quiet=True)
    assert render.returncode == 0
    view = yaml.safe_load((tmp_path / node / "serve.yml").read_text())
    assert [r["unit"] for r in view["replicas"]] == [f"sglang-qwen3.8-27b-r{i}.service" for i in range(4)]
    for entry in view["files"]:
        assert node_file(node, entry["path"]) == (tmp_path / node / entry["content"]).read_text(), entry["path"]
    assert len(view["files"]) == 8


def test_mixed_site_verify_reaches_every_instance_of_every_model_and_each_router(mixed_site: dict) -> None:
    run = mixed_site["runs"]["verify"]
    assert run.returncode == 0, run.stdout[-4000:]
    rows = [line.split(" | ") for line in mixed_site["report"].read_text().splitlines() if line.startswith("| metalserve")]
    seen = {(r[0].lstrip("| ").split(f"metalserve-{MIXED}-", 1)[1], r[1]) for r in rows}
    assert seen == {("node1", "glm-5.3"), ("node2", "deepseek-v4-pro"), ("node3", "qwen3.8-27b-r0"),
                    ("node3", "qwen3.8-27b-r1"), ("node3", "qwen3.8-27b-r2"), ("node3", "qwen3.8-27b-r3"),
                    ("router-glm", "router"), ("router-dsv4", "router"), ("router-qwen", "router")}
    for row in rows:
        assert "FAIL" not in " ".join(row), row


def test_mixed_site_fewer_replicas_retire_the_others(mixed_site: dict) -> None:
    """sglang_replicas lowered from 4 to 2 on the Qwen node: the next converge stops, disables and removes r2 and r3
    (units, environment files) before r0 and r1 change, and leaves every other unit of the node alone. r2 runs a TEST
    DOUBLE process (a runtime drop-in: the lab's servers are not started) so that its stop is seen. Last of the mixed
    tests: it changes the site."""
    node = f"metalserve-{MIXED}-node3"
    wants = "/etc/systemd/system/multi-user.target.wants"
    r2 = "sglang-qwen3.8-27b-r2.service"
    for i in (2, 3):
        assert docker("exec", node, "sh", "-c", f"test -L {wants}/sglang-qwen3.8-27b-r{i}.service "
                      f"&& test -f /etc/sglang/qwen3.8-27b-r{i}.env && echo yes").strip() == "yes"
        assert docker("exec", node, "systemctl", "is-enabled", f"sglang-qwen3.8-27b-r{i}.service").strip() == "enabled"
    docker("exec", node, "sh", "-c", f"mkdir -p /run/systemd/system/{r2}.d && printf '%s\\n' '# TEST DOUBLE process' "
           f"'[Service]' 'ExecStartPre=' 'ExecStartPost=' 'ExecStart=' 'ExecStart=/bin/sleep 86407' "
           f"> /run/systemd/system/{r2}.d/test-double.conf && systemctl daemon-reload && systemctl start {r2}")
    assert docker("exec", node, "systemctl", "is-active", r2).strip() == "active"
    # r3's secret and token files, and a unit of another name that the retire rule must leave alone
    docker("exec", node, "sh", "-c", "touch /etc/sglang/qwen3.8-27b-r3.secrets.yaml /etc/sglang/qwen3.8-27b-r3.hf_token "
           "&& printf '[Service]\\nExecStart=/bin/true\\n' > /etc/systemd/system/sglang-qwen3.8-27b-old.service")
    inv = mixed_site["inv"]
    doc = yaml.safe_load(inv.read_text())
    doc["all"]["children"]["servers"]["children"]["qwen"]["vars"]["sglang_replicas"] = 2
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = lab.converge(MIXED, False, ["--limit", node])
    assert run.returncode == 0, run.stdout[-3000:]
    assert "TASK [metalserve.sglang.sglang_server : Stop and disable the retired units]" in run.stdout
    units = docker("exec", node, "systemctl", "list-unit-files", "sglang-*", "--no-legend")
    assert sorted(re.findall(r"^(sglang-\S+)\s+", units, re.M)) == ["sglang-qwen3.8-27b-old.service"] + [
        f"sglang-qwen3.8-27b-r{i}.service" for i in (0, 1)]
    assert docker("exec", node, "systemctl", "is-active", r2).strip() == "inactive"   # stopped (a running one stays
    assert docker("exec", node, "pgrep", "-f", "sleep 86407").strip() == ""            # active without its file)
    # retired before the first replica's changes are applied (that include's header prints whether it runs or not)
    assert run.stdout.index("Stop and disable the retired units") < run.stdout.index(
        "TASK [metalserve.sglang.sglang_server : Apply what differs")
    assert docker("exec", node, "sh", "-c", "ls /etc/sglang/qwen3.8-27b-r3.secrets.yaml /etc/sglang/qwen3.8-27b-r3.hf_token "
                  "2>&1").count("No such file") == 2
    for i in (2, 3):
        gone = docker("exec", node, "sh", "-c", f"ls {wants}/sglang-qwen3.8-27b-r{i}.service "
                      f"/etc/systemd/system/sglang-qwen3.8-27b-r{i}.service /etc/sglang/qwen3.8-27b-r{i}.env 2>&1")
        assert gone.count("No such file") == 3, gone      # disabled, and its unit and environment files removed
    for i in (0, 1):
        assert docker("exec", node, "systemctl", "is-enabled", f"sglang-qwen3.8-27b-r{i}.service").strip() == "enabled"
    assert docker("exec", node, "systemctl", "is-active", "metalserve-test-double-30000.service").strip() == "active"
