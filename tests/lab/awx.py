"""Run a playbook the way AWX/AAP runs a job: ansible-runner over a private data directory whose inventory is the
script AWX writes, for the whole inventory or for one job slice.

What AWX gives a job (ansible/awx, awx/main/tasks/jobs.py build_inventory and awx/main/models/inventory.py
get_script_data): an executable inventory script that prints the inventory as JSON; for a slice (job_slice_number
of job_slice_count) its hosts are the inventory's hosts ordered by name, every job_slice_count-th from offset
job_slice_number - 1; every group is kept (empty ones too) with its variables and children, its hosts cut to the
slice's; each host gets remote_tower_enabled/remote_tower_id (and remote_host_*). Extra variables are the job
template's, the same for every slice; awx_* meta variables name the job, never the slice. The job runs in the
project's checkout (ansible-runner's cwd for playbooks), with a fact cache of its own under the job's artifacts.

In an execution environment (run_in_ee) the job goes the way AWX sends it through receptor: `ansible-runner transmit`
on the controller streams the private data directory and the job's arguments, `ansible-runner worker
--private-data-dir=/runner` runs it inside the EE as the image's user (uid 1000, HOME=/runner), and `ansible-runner
process` reads the events back. Credentials are injected as AWX injects a credential type's injectors
(awx_plugins.interfaces' inject_credential: `file` templates into files under env/ named by tower.filename, `env`
into the job's environment, `extra_vars` into a file under env/ passed with -e @file); the machine credential's key
goes to ansible-runner's ssh_key (an ssh-agent in the job) and its user to -u.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
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


#: environment names a credential type may not set (awx_plugins.interfaces, ENV_BLOCKLIST)
ENV_BLOCKLIST = frozenset(("VIRTUAL_ENV", "PATH", "PYTHONPATH", "JOB_ID", "INVENTORY_ID", "INVENTORY_SOURCE_ID",
                           "INVENTORY_UPDATE_ID", "AD_HOC_COMMAND_ID", "REST_API_URL", "REST_API_TOKEN",
                           "MAX_EVENT_RES", "CALLBACK_QUEUE", "CALLBACK_CONNECTION", "CACHE", "JOB_CALLBACK_DEBUG",
                           "INVENTORY_HOSTVARS", "AWX_HOST", "PROJECT_REVISION", "SUPERVISOR_CONFIG_PATH"))


def inject(cred_type: dict[str, Any], inputs: dict[str, Any], private: Path) -> tuple[dict[str, str], list[str]]:
    """A custom credential type's injectors applied to a credential's inputs, as AWX applies them to a job:
    ({environment variables}, [ansible-playbook arguments]). Files land under private/env/ (0600), named inside the
    EE by their /runner path."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: PLC0415
    import yaml  # noqa: PLC0415

    sandbox, env_dir = ImmutableSandboxedEnvironment(), private / "env"
    env_dir.mkdir(parents=True, exist_ok=True)
    namespace: dict[str, Any] = {k: v for k, v in inputs.items() if v or isinstance(v, bool)}
    single, files = None, {}
    for label, template in (cred_type["injectors"].get("file") or {}).items():
        handle, path = tempfile.mkstemp(dir=env_dir)
        with os.fdopen(handle, "w") as out:
            out.write(sandbox.from_string(template).render(**namespace))
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
        inside = "/runner/" + str(Path(path).relative_to(private))
        if "." in label:
            files[label.split(".")[1]] = inside
        else:
            single = inside
    namespace["tower"] = SimpleNamespace(filename=single or SimpleNamespace(**files))
    env = {name: sandbox.from_string(tmpl).render(**namespace)
           for name, tmpl in (cred_type["injectors"].get("env") or {}).items() if name not in ENV_BLOCKLIST}
    extra = {name: sandbox.from_string(tmpl).render(**namespace)
             for name, tmpl in (cred_type["injectors"].get("extra_vars") or {}).items()}
    args: list[str] = []
    if extra:
        handle, path = tempfile.mkstemp(dir=env_dir)
        with os.fdopen(handle, "w") as out:
            out.write(yaml.safe_dump(extra))
        os.chmod(path, stat.S_IRUSR)
        args = ["-e", "@/runner/" + str(Path(path).relative_to(private))]
    return env, args


def job_stdout(artifacts: Path) -> str:
    """The job's output as AWX shows it: the worker's stdout file when its artifacts came back, else the `stdout`
    of its events in their order."""
    if (artifacts / "stdout").is_file():
        return (artifacts / "stdout").read_text(errors="replace")
    events = sorted((artifacts / "job_events").glob("*.json"), key=lambda p: int(p.name.split("-", 1)[0]))
    lines = (json.loads(p.read_text()).get("stdout") or "" for p in events)
    return "\n".join(line for line in lines if line)


def run_in_ee(private: Path, image: str, playbook: str, data: dict[str, Any], extravars: dict[str, Any],
              cmdline: list[str], env: dict[str, str], ssh_key: str | None = None,
              docker_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """One job in the execution environment `image`, the way AWX runs it (transmit, worker in the EE, process).
    `private` holds the job's project (private/project) and the files credentials injected (private/env); the
    worker's private data dir is that folder mounted at /runner, owned by the image's user (uid 1000), so what the
    job writes in its project stays there to be read."""
    import ansible_runner  # noqa: PLC0415 - a test dependency (requirements/test.txt)

    write_script(data, private / "inventory" / "hosts")
    # real files, not BytesIO: ansible-runner's streaming reads the stream's name (utils/streaming.py)
    with open(private.parent / f"{private.name}.transmit", "w+b") as stream:
        ansible_runner.run(private_data_dir=str(private), playbook=playbook, extravars=extravars, envvars=env,
                           cmdline=" ".join(cmdline) or None, ssh_key=ssh_key, streamer="transmit", _output=stream,
                           ident="job")
        stream.seek(0)
        transmitted = stream.read()
    os.unlink(stream.name)  # it holds the job's key and credentials
    work = private.parent / f"{private.name}-worker"
    work.mkdir()
    os.chown(work, 1000, 0)
    started = time.monotonic()
    worker = subprocess.run(["docker", "run", "--rm", "-i", "--user", "1000", "-v", f"{work}:/runner", *docker_args,
                             image, "ansible-runner", "worker", "--private-data-dir=/runner"],
                            input=transmitted, capture_output=True, check=False)
    seconds = round(time.monotonic() - started)
    done = private.parent / f"{private.name}-processed"
    results = private.parent / f"{private.name}.worker-out"
    results.write_bytes(worker.stdout)
    with open(results, "rb") as incoming:
        runner = ansible_runner.run(private_data_dir=str(done), streamer="process", _input=incoming, quiet=True,
                                    ident="job")
    results.unlink()
    artifacts = done / "artifacts" / "job"
    stdout = job_stdout(artifacts)
    # the worker's artifacts come back whole (its rc file among them); the processor's own rc stays None
    rc_file = artifacts / "rc"
    rc = runner.rc if runner.rc is not None else (int(rc_file.read_text().strip()) if rc_file.is_file() else None)
    return {"rc": rc, "status": runner.status, "stdout": stdout, "seconds": seconds, "worker": work,
            "stderr": worker.stderr.decode(errors="replace")[-3000:], "hosts": sorted(data["_meta"]["hostvars"])}
