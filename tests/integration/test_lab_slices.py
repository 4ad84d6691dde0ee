"""site.yml as AWX/AAP runs a sliced job, against the lab: ansible-runner over the inventory script AWX writes
(tests/lab/awx.py), the job template's extra variables naming the plan artifact.

On the lab site test_lab_site.py converged (the `site` fixture, unsliced, ansible-playbook):
- an unsliced job with `--tags plan` makes the artifact (the whole site, with the facts the job gathers);
- the files site.yml wrote on every node are removed, and three slice jobs (each inventory a third of the hosts, as
  AWX cuts them: ordered by name, every third) converge the site again from the artifact: every node's files are
  the unsliced run's, byte for byte (SHA-256, mode, owner), and each job touched only its own hosts;
- a slice whose host's inputs changed since the artifact was made is refused before any change, naming the host and
  the variable; a slice without the artifact is refused, saying how to make it; the nodes are left as they were.
The jobs gather their own facts (AWX without fact storage): their facts must digest as the artifact's do."""
from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "lab"))
import awx  # noqa: E402
import lab  # noqa: E402

#: what site.yml writes on the lab's nodes (the serving units and their files, the firewall, the helper scripts);
#: the lab image's own units (metalserve-lab-*) are not site.yml's
FIND = "find /etc/systemd/system/sglang-*.service /etc/systemd/system/metalserve-*.service /etc/sglang /etc/metalserve " \
       "/usr/local/lib/metalserve -type f ! -name 'metalserve-lab-*' 2>/dev/null | sort"
ENV = {"ANSIBLE_HOST_KEY_CHECKING": "True"}  # as a real site: the lab's known_hosts (ansible-runner turns it off)


def node_files(host: str) -> dict[str, str]:
    """{path: 'sha256 mode owner:group'} of every file site.yml wrote on the node (contents never leave it)."""
    script = (f"for f in $({FIND}); do "
              "echo \"$f $(sha256sum < \"$f\" | cut -d' ' -f1) $(stat -c '%a %U:%G' \"$f\")\"; done")
    out = subprocess.run(["docker", "exec", host, "sh", "-c", script], capture_output=True, text=True, check=True).stdout
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines()}


def recap(out: str) -> dict[str, str]:
    return {h: line for h, line in re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M) if h != "localhost"}


def said(out: str) -> str:
    return " ".join(out.replace("''", "'").split())


@pytest.fixture(scope="module")
def jobs(site: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("awx")
    exported = awx.export(site["inv"])
    artifact = tmp / "plans" / "lab.json"   # a path every job mounts (or a file committed with the project)
    extravars = {"sglang_plan_artifact": str(artifact)}
    skip = f"--skip-tags {lab.SKIP}"
    before = {h: node_files(h) for h in site["hosts"]}
    plan = awx.run_job(tmp / "plan", ROOT, "playbooks/site.yml", awx.script_data(exported), extravars,
                       "--tags plan", ENV)
    assert plan["rc"] == 0, plan["stdout"][-4000:]
    for host in site["hosts"]:  # every file site.yml wrote: the slices must write them again
        subprocess.run(["docker", "exec", host, "sh", "-c", f"rm -f $({FIND}) && systemctl daemon-reload"],
                       check=True, capture_output=True)
        assert node_files(host) == {}, host
    started = time.monotonic()
    slices = [awx.run_job(tmp / f"slice{n}", ROOT, "playbooks/site.yml", awx.script_data(exported, n, 3), extravars,
                          skip, ENV) for n in (1, 2, 3)]
    print(f"\n[slices] plan job {plan['seconds']} s; three slice jobs, one after the other, "
          f"{time.monotonic() - started:.0f} s ({', '.join(str(job['seconds']) for job in slices)} s)")
    after = {h: node_files(h) for h in site["hosts"]}
    # a slice whose host changed since the artifact was made (its inventory gives the node another setting)
    changed = awx.script_data(exported, 3, 3)
    node3 = next(h for h in changed["_meta"]["hostvars"] if h.endswith("node3"))
    changed["_meta"]["hostvars"][node3]["sglang_server_restart_sec"] = 9
    stale = awx.run_job(tmp / "stale", ROOT, "playbooks/site.yml", changed, extravars, skip, ENV)
    missing = awx.run_job(tmp / "missing", ROOT, "playbooks/site.yml", awx.script_data(exported, 1, 3),
                          {"sglang_plan_artifact": str(tmp / "plans" / "none.json")}, skip, ENV)
    last = {h: node_files(h) for h in site["hosts"]}
    return {"artifact": artifact, "plan": plan, "slices": slices, "before": before, "after": after, "stale": stale,
            "missing": missing, "last": last, "node3": node3}


def test_three_slices_write_what_the_unsliced_run_wrote(site: dict, jobs: dict) -> None:
    assert jobs["artifact"].is_file()
    covered = []
    for job in jobs["slices"]:
        assert job["rc"] == 0, job["stdout"][-4000:]
        assert sorted(recap(job["stdout"])) == job["hosts"]   # a slice touches its own hosts only
        covered += job["hosts"]
    assert sorted(covered) == sorted(site["hosts"]) and len(jobs["slices"]) == 3
    assert all(len(job["hosts"]) == 2 for job in jobs["slices"])
    assert all(jobs["before"][h] for h in site["hosts"])          # every node had files to compare
    for host in site["hosts"]:
        assert jobs["after"][host] == jobs["before"][host], host
    files = sum(len(v) for v in jobs["before"].values())
    print(f"\n3 AWX slices from the plan artifact: {files} files on {len(site['hosts'])} nodes identical to the "
          "unsliced run's")


def test_a_stale_artifact_is_refused_before_any_change(jobs: dict) -> None:
    stale = jobs["stale"]
    assert stale["rc"] != 0
    text = said(stale["stdout"])
    assert "refused before anything changed: this run covers part of the site (sglang_plan_artifact is set" in text
    assert f"- {jobs['node3']}: sglang_server_restart_sec set now (unset when the artifact was made)" in text
    assert "--tags plan" in text
    assert all("changed=0" in line for line in recap(stale["stdout"]).values())


def test_a_missing_artifact_on_a_slice_is_refused(jobs: dict) -> None:
    missing = jobs["missing"]
    assert missing["rc"] != 0
    text = said(missing["stdout"])
    assert "this run covers part of the site (sglang_plan_artifact is set: the inventory's 2 host(s)" in text
    assert "there is none at" in text and "none.json" in text and "--tags plan" in text
    assert all("changed=0" in line for line in recap(missing["stdout"]).values())


def test_refused_jobs_left_the_nodes_as_they_were(site: dict, jobs: dict) -> None:
    for host in site["hosts"]:
        assert jobs["last"][host] == jobs["after"][host], host
