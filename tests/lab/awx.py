"""Run a playbook the way AWX/AAP runs a job: ansible-runner over a private data directory whose inventory is the
script AWX writes, for the whole inventory or for one job slice.

What AWX gives a job (ansible/awx, awx/main/tasks/jobs.py build_inventory and awx/main/models/inventory.py
get_script_data): an executable inventory script that prints the inventory as JSON; for a slice (job_slice_number
of job_slice_count) its hosts are the inventory's hosts ordered by name, every job_slice_count-th from offset
job_slice_number - 1; every group is kept (empty ones too) with its variables and children, its hosts cut to the
slice's; each host gets remote_tower_enabled/remote_tower_id (and remote_host_*). Extra variables are the job
template's, the same for every slice; awx_* meta variables name the job, never the slice. The job runs in the
project's checkout (ansible-runner's cwd for playbooks), with a fact cache of its own under the job's artifacts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent


def export(inventory: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The inventory as AWX stores it after an import: group variables on groups, host variables on hosts."""
    out = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(inventory), "--list", "--export"],
                         capture_output=True, text=True, check=True, env={**os.environ, **(env or {})})
    return json.loads(out.stdout)


def script_data(exported: dict[str, Any], slice_number: int = 1, slice_count: int = 1) -> dict[str, Any]:
    """What AWX's inventory script prints for one slice of the inventory (slice_count 1: the whole of it)."""
    groups = {g: v for g, v in exported.items() if g not in ("_meta", "all")}
    names = sorted(set(exported["_meta"]["hostvars"]) | {h for v in groups.values() for h in v.get("hosts", [])})
    ids = {h: i + 1 for i, h in enumerate(names)}
    hosts = names[slice_number - 1::slice_count] if slice_count > 1 else names
    grouped = {h for g, v in groups.items() if g != "ungrouped" for h in v.get("hosts", [])}
    data: dict[str, Any] = {"all": {"vars": exported.get("all", {}).get("vars", {}),
                                    "hosts": [h for h in hosts if h not in grouped]}}
    names_of_groups = []
    for group, value in groups.items():
        if group == "ungrouped":
            continue
        info: dict[str, Any] = {}
        members = [h for h in value.get("hosts", []) if h in hosts]
        if members:
            info["hosts"] = members
        if value.get("children"):
            info["children"] = list(value["children"])
        if value.get("vars"):
            info["vars"] = value["vars"]
        if info:
            data[group] = info
        names_of_groups.append(group)
    data["all"]["children"] = names_of_groups
    data["_meta"] = {"hostvars": {h: {**exported["_meta"]["hostvars"].get(h, {}),
                                      "remote_tower_enabled": "true", "remote_tower_id": ids[h],
                                      "remote_host_enabled": "true", "remote_host_id": ids[h]} for h in hosts}}
    return data


def write_script(data: dict[str, Any], path: Path) -> Path:
    """The inventory file AWX writes for a job: a Python script printing the JSON (mode 0700)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(data))
    path.chmod(0o700)
    return path


def run_job(private: Path, project: Path, playbook: str, data: dict[str, Any], extravars: dict[str, Any],
            cmdline: str = "", env: dict[str, str] | None = None) -> dict[str, Any]:
    """One job through ansible-runner (what AWX's execution environment runs): {rc, status, stdout, hosts}."""
    import ansible_runner  # noqa: PLC0415 - a test dependency (requirements/test.txt)

    inventory = write_script(data, private / "inventory" / "hosts")
    envvars = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_FORCE_COLOR": "0", **(env or {})}
    started = time.monotonic()
    runner = ansible_runner.run(private_data_dir=str(private), project_dir=str(project), playbook=playbook,
                                inventory=str(inventory), extravars=extravars, cmdline=cmdline or None,
                                envvars=envvars, quiet=True, ident="job")
    stdout = runner.stdout.read()
    return {"rc": runner.rc, "status": runner.status, "stdout": stdout, "seconds": round(time.monotonic() - started),
            "hosts": sorted(data["_meta"]["hostvars"])}
