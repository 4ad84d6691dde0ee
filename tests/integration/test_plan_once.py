"""A role used alone plans the site once per play (its plan include is run_once), decided from every host of the
play: hosts that already carry a plan from an earlier play must not stop the others from getting one.
Runs roles/rdma with rdma_manage false on three local hosts (nothing is changed; the plan runs on the controller)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

BIN = Path(sys.executable).parent


def test_a_play_where_some_hosts_have_a_plan_still_plans_the_others(tmp_path: Path) -> None:
    base = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "sglang_gpu": "h200",
            "sglang_quant": "fp8", "sglang_strategy": "high-throughput", "rdma_manage": False}
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"vars": base, "hosts": {"h1": None, "h2": None, "h3": None}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections"), "ANSIBLE_CACHE_PLUGIN": "memory"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv),
                           "tests/integration/playbooks/plan_once_per_play.yml"],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # the plan ran, once, although the first host already had one
    assert len(re.findall(r"^TASK \[metalserve\.sglang\.preflight : Plan the site once", out, re.M)) == 1, out[-3000:]
    recap = dict(re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M))
    assert set(recap) == {"h1", "h2", "h3"} and all("failed=0" in v and "changed=0" in v for v in recap.values()), recap
