"""Converge cost and fleet scaling of site.yml on lab nodes (`make bench`).

For each N in --sizes (default 1, 4, 8, 16, 32): build a lab of N GPU-less servers plus one router (tests/lab/lab.py, plain shape),
then run site.yml (hardware-bound stages off) four times: the first converge, a second (no-op) converge,
a --check run, and the no-op again one host at a time (forks 1: "alone", see ALONE_ENV). Each run records wall
time, changed tasks (from the recap) and the 10 slowest tasks
(ansible.posix.profile_tasks). --profiles picks what is measured, for before/after figures:
  tuned         this checkout with its ansible.cfg;
  nopipelining  the same with pipelining off (what pipelining alone is worth);
  defaults      this checkout with Ansible's defaults (forks 5, no pipelining, implicit gathering, no fact cache);
  mitogen       this checkout with mitogen's linear strategy (pip install mitogen; its SSH connection);
  ref:<rev>     the collection as of git revision <rev> with that revision's ansible.cfg (a git worktree under
                .cache/bench-worktrees): the role-level optimizations since <rev>, measured in the same run.

Transport: like a real site, over SSH to each lab node as an unprivileged user with sudo (tests/lab/lab.py);
the docker profile (this checkout over `docker exec` as root) and ref:<rev> profiles (earlier revisions knew no
other transport) use the docker connection.
Per host, beside the wall times: node-side CPU seconds (each lab container's cgroup CPU time during the run),
controller CPU seconds (ansible-playbook and its children, divided by the hosts), and module executions
(bench/callback_plugins/module_count.py: task results that ran a module on the host, loop items each). Before each
no-op the nodes are left alone for IDLE_S seconds to measure their idle background; node CPU less that background
over the run's wall time is reported beside the raw figure.
--repeat 3: each no-op, --check and alone no-op three times, every figure the median of the three (changed: any run's).
--render 2048 --render-runs 5: render.yml five times at 2,048 servers, each a first render into a new folder and a
second into the same.
Absolute times on shared machines are noisy; the report states ratios measured within one run:
no-op(N) / no-op(1) and no-op / first converge.
Writes <out>/results.json, <out>/README.md (tables) and <out>/bench.png (time against N).
A profile can be limited to some sizes: defaults@1+8.
Fleet scaling: past N=8 (16 and 32 by default) the report adds the no-op's controller and node CPU per host, and
each over N=8's (1.0: the cost per host does not grow with the fleet), with each node's memory (how many the
machine holds).
Usage: bench.py [--sizes 1,4,8,16,32] [--profiles tuned,mitogen,ref:9c4144d,defaults@1] [--out bench]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "lab"))

import lab  # noqa: E402

DEFAULTS = {"ANSIBLE_FORKS": "5", "ANSIBLE_PIPELINING": "False", "ANSIBLE_GATHERING": "implicit",
            "ANSIBLE_CACHE_PLUGIN": "memory"}
PROFILE_ENV = {"tuned": {}, "docker": {}, "nopipelining": {"ANSIBLE_PIPELINING": "False"}, "defaults": DEFAULTS}
CALLBACKS = ROOT / "bench" / "callback_plugins"
RUNS = ("first", "noop", "check", "alone")
#: "alone": the no-op again with one host at a time. In the other runs up to `forks` nodes' modules and the
#: controller's forks share this machine's two cores, and a module's CPU time grows with how many run beside it
#: (caches; bench/fleet/results.json, N=32: 0.25 s per host one host at a time, 0.29 s at forks 20, on the same
#: lab). A node of a real fleet has its own cores, so this run's node CPU per host is what a node pays.
ALONE_ENV = {"ANSIBLE_FORKS": "1"}


def parse_recap(out: str) -> dict[str, dict[str, int]]:
    recap = {}
    for host, stats in re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M):
        recap[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", stats)}
    return recap


def parse_profile(out: str, limit: int = 10) -> list[dict[str, Any]]:
    """profile_tasks' summary: 'role : Task name ------ 12.34s' lines after the recap."""
    tail = out.split("PLAY RECAP", 1)[-1]
    rows = [{"task": name.strip(), "seconds": float(sec)}
            for name, sec in re.findall(r"^(.+?) -{2,} (\d+\.\d+)s$", tail, re.M)]
    return sorted(rows, key=lambda r: -r["seconds"])[:limit]


def machine_busy_s() -> float:
    """CPU seconds spent busy by all cores since boot (/proc/stat: everything but idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def controller_cpu_s() -> float:
    """CPU seconds of finished child processes: ansible-playbook with its forks and docker exec clients."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cgroup_cpu_ns(container: str) -> int | None:
    """CPU time a lab container (its systemd and everything under it) has used, from the host's cgroup files."""
    cid = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", container], capture_output=True, text=True,
                         check=False).stdout.strip()
    if not cid:
        return None
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text())
    for v2 in (Path(f"/sys/fs/cgroup/docker/{cid}/cpu.stat"), Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat")):
        if v2.exists():
            stats = dict(line.split() for line in v2.read_text().splitlines())
            return int(stats["usage_usec"]) * 1000
    return None


def memory_mib(container: str) -> float | None:
    """What a lab container holds in memory now (its cgroup's usage less the inactive page cache, as `docker stats`
    counts it), in MiB: what tells how many nodes the machine's memory holds."""
    cid = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", container], capture_output=True, text=True,
                         check=False).stdout.strip()
    if not cid:
        return None
    v1 = Path(f"/sys/fs/cgroup/memory/docker/{cid}")
    v2 = next((p for p in (Path(f"/sys/fs/cgroup/docker/{cid}"), Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope"))
               if (p / "memory.current").exists()), None)
    if (v1 / "memory.usage_in_bytes").exists():
        used, stat = int((v1 / "memory.usage_in_bytes").read_text()), v1 / "memory.stat"
        inactive_key = "total_inactive_file"
    elif v2 is not None:
        used, stat = int((v2 / "memory.current").read_text()), v2 / "memory.stat"
        inactive_key = "inactive_file"
    else:
        return None
    stats = dict(line.split() for line in stat.read_text().splitlines())
    return round((used - int(stats.get(inactive_key, 0))) / 2**20, 1)


def nodes_cpu_ns(name: str) -> dict[str, int | None]:
    return {host: cgroup_cpu_ns(host) for host in lab.containers(name)}


def transport(profile: str) -> str:
    return "docker" if profile == "docker" or profile.startswith("ref:") else "ssh"


def profile_root(profile: str) -> Path:
    """The checkout a profile runs: this one, or a worktree of ref:<rev> (made once, kept under .cache)."""
    if not profile.startswith("ref:"):
        return ROOT
    rev = profile[4:]
    tree = ROOT / ".cache" / "bench-worktrees" / re.sub(r"[^A-Za-z0-9_.-]", "_", rev)
    if not (tree / "galaxy.yml").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--force", "--detach", str(tree), rev], check=True,
                       capture_output=True)
    link = tree / ".build" / "collections" / "ansible_collections" / "metalserve" / "sglang"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(tree)
    return tree


def mitogen_env() -> dict[str, str]:
    try:
        import ansible_mitogen  # noqa: PLC0415
    except ImportError as exc:
        raise SystemExit("the mitogen profile needs mitogen in this venv (pip install mitogen)") from exc
    return {"ANSIBLE_STRATEGY_PLUGINS": str(Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"),
            "ANSIBLE_STRATEGY": "mitogen_linear"}


def profile_env(profile: str) -> dict[str, str]:
    if profile.startswith("ref:"):
        return {}
    if profile == "mitogen":
        return mitogen_env()
    if profile not in PROFILE_ENV:
        raise SystemExit(f"unknown profile {profile!r}: use {', '.join(PROFILE_ENV)}, mitogen or ref:<git revision>")
    return PROFILE_ENV[profile]


#: seconds each lab's nodes are left alone before its no-op, to measure their idle background CPU
IDLE_S = 15.0


def idle_rates(name: str, seconds: float = IDLE_S) -> dict[str, float]:
    """Each lab node's CPU seconds per wall second while nothing runs on it (systemd, journald, sshd, the router's own
    loop): the background a run's node CPU includes for as long as the run lasts."""
    before, t0 = nodes_cpu_ns(name), time.monotonic()
    time.sleep(seconds)
    after, wall = nodes_cpu_ns(name), time.monotonic() - t0
    return {h: (after[h] - before[h]) / 1e9 / wall for h in before
            if before[h] is not None and after.get(h) is not None}


def one_run(name: str, kind: str, env: dict[str, str], root: Path = ROOT,
            idle: dict[str, float] | None = None) -> dict[str, Any]:
    counts_file = lab.lab_dir(name) / f"modules-{kind}.json"
    extra_env = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks,module_count",
                 "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS), "BENCH_MODULE_COUNT": str(counts_file),
                 "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "40", **env}
    if kind == "alone":
        extra_env.update(ALONE_ENV)
    inv = lab.lab_dir(name) / "hosts.yml"
    args = ["ansible-playbook", "-i", str(inv), "playbooks/site.yml", "--skip-tags", lab.SKIP]
    if kind == "check":
        args.append("--check")
    nodes0 = nodes_cpu_ns(name)
    busy0, ctl0, t0 = machine_busy_s(), controller_cpu_s(), time.monotonic()
    proc = lab.run_ansible(args, quiet=True, extra_env=extra_env, root=root)
    wall = time.monotonic() - t0
    busy, ctl = machine_busy_s() - busy0, controller_cpu_s() - ctl0
    nodes1 = nodes_cpu_ns(name)
    node_s = [(nodes1[h] - nodes0[h]) / 1e9 for h in nodes0 if nodes0[h] is not None and nodes1.get(h) is not None]
    # the same less each node's idle background over the run's wall time (idle_rates, measured before the no-op)
    net_s = [(nodes1[h] - nodes0[h]) / 1e9 - idle[h] * wall for h in nodes0
             if idle and h in idle and nodes0[h] is not None and nodes1.get(h) is not None]
    # the lab's hosts only: site.yml's first play (the inventory has hosts) runs on the controller's localhost
    recap = {h: v for h, v in parse_recap(proc.stdout).items() if h != "localhost"}
    hosts = max(1, len(recap))
    counts = json.loads(counts_file.read_text()) if counts_file.exists() else {"hosts": {}, "actions": {}}
    modules = [counts["hosts"].get(h, 0) for h in recap]
    memory = [m for m in (memory_mib(h) for h in nodes1) if m is not None]
    return {"run": kind, "wall_s": round(wall, 1), "rc": proc.returncode,
            "node_memory_mib_mean": round(sum(memory) / len(memory), 1) if memory else None,
            "node_memory_mib_max": max(memory) if memory else None,
            # CPU seconds: the whole machine (controller + every lab node share its cores) and the controller alone
            "busy_cpu_s": round(busy, 1), "controller_cpu_s": round(ctl, 1), "cores": os.cpu_count(),
            "controller_cpu_s_per_host": round(ctl / hosts, 2),
            "node_cpu_s_per_host": round(sum(node_s) / len(node_s), 2) if node_s else None,
            "node_cpu_s_max": round(max(node_s), 2) if node_s else None,
            "node_cpu_s_per_host_net": round(sum(net_s) / len(net_s), 2) if net_s else None,
            "node_idle_cpu_per_s": round(sum(idle.values()) / len(idle), 4) if idle else None,
            "modules_per_host": round(sum(modules) / len(modules), 1) if modules else None,
            "modules_by_action": counts["actions"],
            "changed": sum(h.get("changed", 0) for h in recap.values()),
            "failed": sum(h.get("failed", 0) for h in recap.values()), "hosts": len(recap),
            # on a no-op or --check run, what reported a change (there should be nothing)
            "changed_tasks": changed_tasks(proc.stdout) if kind != "first" else [],
            "slowest": parse_profile(proc.stdout)}


def changed_tasks(stdout: str) -> list[str]:
    """'<task> (<host>)' for every result Ansible printed as changed, under the TASK header it belongs to."""
    out, task = [], ""
    for line in stdout.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line.split("[", 1)[1].rsplit("]", 1)[0]
        elif line.startswith("changed: ["):
            out.append(f"{task} ({line[10:].split(']', 1)[0]})")
    return out


def render_inventory(n: int, path: Path) -> Path:
    """A generated site of n H200 servers in racks of 16 (a TP16 BF16 pair and FP8 servers in every rack, one router in
    front of each rack's FP8 servers: a router pool serves one model)."""
    import yaml  # noqa: PLC0415

    racks, routers = {}, {}
    for r in range((n + 15) // 16):
        names = [f"gpu-{r:03d}-{i:02d}" for i in range(min(16, n - r * 16))]
        hosts = {h: {"ansible_host": f"10.{r // 250}.{r % 250}.{i + 10}"} for i, h in enumerate(names)}
        racks[f"rack_{r:03d}"] = {"hosts": hosts}
        racks[f"fp8_{r:03d}"] = {"hosts": {h: None for h in (names[2:] if len(names) > 2 else names)}}
        if len(names) >= 2:  # the first two of each rack form a BF16 TP16 instance
            racks[f"pair_{r:03d}"] = {"hosts": {h: None for h in names[:2]},
                                      "vars": {"sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
                                               "sglang_instance_group": f"pair_{r:03d}"}}
        if len(names) > 2:
            routers[f"router-{r:03d}"] = {"ansible_host": f"10.200.{r // 250}.{r % 250}",
                                          "sglang_router_workers_group": f"fp8_{r:03d}"}
    doc = {"all": {"vars": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput",
                            "sglang_model_path": "/nvme/glm"},
                   "children": {"gpus": {"children": racks},
                                "routers": {"hosts": routers, "vars": {"sglang_role": "router"}}}}}
    path.mkdir(parents=True, exist_ok=True)
    (path / "hosts.yml").write_text(yaml.safe_dump(doc))
    return path / "hosts.yml"


def measure_render(sizes: list[int], out: Path, runs: int = 1) -> list[dict[str, Any]]:
    """render.yml over generated sites of each size, `runs` times: a first render into a folder that did not exist
    (every file new), then a second into the same (nothing to write). Earlier folders are left in place: deleting
    tens of thousands of files just before slows the next creations on ext4 for minutes (docs/performance.md); they
    are removed once every render of the run is measured."""
    rows = []
    for n in sizes:
        inv = render_inventory(n, out / f"render-{n}")
        for i in range(runs):
            dest = out / f"render-{n}" / f"rendered-{time.strftime('%Y%m%d-%H%M%S')}-{i}"
            for kind in ("first", "again"):
                ctl0, t0 = controller_cpu_s(), time.monotonic()
                proc = lab.run_ansible(["ansible-playbook", "-i", str(inv), "playbooks/render.yml", "-e",
                                        f"sglang_render_dir={dest}"], quiet=True,
                                       extra_env={"ANSIBLE_CACHE_PLUGIN": "memory"})
                rows.append({"hosts": n, "run": kind, "round": i + 1, "wall_s": round(time.monotonic() - t0, 1),
                             "rc": proc.returncode, "controller_cpu_s": round(controller_cpu_s() - ctl0, 1)})
                print(f"[bench] render.yml {n} servers ({kind}, {i + 1} of {runs}): {rows[-1]['wall_s']} s", flush=True)
    for n in sizes:  # measured: the trees go (nothing is measured after them in this run)
        for tree in (out / f"render-{n}").glob("rendered-*"):
            shutil.rmtree(tree, ignore_errors=True)
    return rows


#: the figures a repeated no-op or --check reports as the median of its runs
MEDIAN_KEYS = ("wall_s", "busy_cpu_s", "controller_cpu_s", "controller_cpu_s_per_host", "node_cpu_s_per_host",
               "node_cpu_s_max", "node_cpu_s_per_host_net", "modules_per_host")


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of the same kind as one: each figure the median of the runs' (the noise between two identical runs
    is about 10% here), a change or failure in any run kept, and every run's own figures under `repeats`."""
    if len(runs) == 1:
        return runs[0]
    out = dict(runs[-1])
    for key in MEDIAN_KEYS:
        values = sorted(r[key] for r in runs if r.get(key) is not None)
        if values:
            mid = len(values) // 2
            out[key] = values[mid] if len(values) % 2 else round((values[mid - 1] + values[mid]) / 2, 2)
    out.update(changed=max(r["changed"] for r in runs), failed=max(r["failed"] for r in runs),
               rc=max((r["rc"] for r in runs), key=abs),
               changed_tasks=sorted({t for r in runs for t in r.get("changed_tasks") or []}),
               repeats=[{key: r.get(key) for key in MEDIAN_KEYS + ("changed",)} for r in runs])
    return out


def split_profile(spec: str, sizes: list[int]) -> tuple[str, list[int]]:
    """'defaults@1+8' -> ('defaults', [1, 8]): a profile measured at some of the sizes only."""
    name, _sep, only = spec.partition("@")
    return name, [int(n) for n in only.split("+")] if only else sizes


def measure(sizes: list[int], specs: list[str], partial: Path | None = None, repeat: int = 1) -> dict[str, Any]:
    """Every profile at its sizes; after each run the results so far go to `partial` (a run that fails later, say a
    lab of 32 nodes, keeps what was measured)."""
    profiles = [split_profile(spec, sizes) for spec in specs]
    results: dict[str, Any] = {"sizes": sizes, "profiles": [name for name, _settings in profiles], "runs": []}
    for index, (profile, profile_sizes) in enumerate(profiles):
        env, root = profile_env(profile), profile_root(profile)
        for n in profile_sizes:
            name = f"bench{n}p{index}"
            lab.destroy(name, roots=(root,))
            try:
                lab.up(name, n, "plain", transport=transport(profile))
                idle: dict[str, float] | None = None
                for kind in RUNS:
                    if kind == "noop":
                        idle = idle_rates(name)  # the "alone" no-op after it subtracts the same background
                    times = 1 if kind == "first" else repeat
                    run = median_run([one_run(name, kind, env, root, idle) for _time in range(times)])
                    run.update(profile=profile, nodes=n)
                    print(f"[bench] {profile} N={n} {kind}: {run['wall_s']} s, changed={run['changed']}, "
                          f"failed={run['failed']}", flush=True)
                    results["runs"].append(run)
                    if partial:
                        partial.parent.mkdir(parents=True, exist_ok=True)
                        partial.write_text(json.dumps(results, indent=1))
            finally:
                lab.destroy(name, roots=(root,))
    return results


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for profile in results["profiles"]:
        runs = {(r["nodes"], r["run"]): r for r in results["runs"] if r["profile"] == profile}
        base = runs.get((min(results["sizes"]), "noop"))
        out[profile] = {n: {"noop_vs_noop1": round(runs[(n, "noop")]["wall_s"] / base["wall_s"], 2) if base else None,
                            "noop_vs_first": round(runs[(n, "noop")]["wall_s"] / runs[(n, "first")]["wall_s"], 2),
                            "check_vs_first": round(runs[(n, "check")]["wall_s"] / runs[(n, "first")]["wall_s"], 2),
                            **per_host_vs(runs, n, REFERENCE_N)}
                        for n in results["sizes"] if (n, "noop") in runs}
    return out


#: the fleet-scaling ratios divide each N's per-host no-op cost by this N's
REFERENCE_N = 8


def per_host_vs(runs: dict[tuple[int, str], dict[str, Any]], n: int, ref: int) -> dict[str, float | None]:
    """The no-op's controller and node CPU per host at N over the same at N=ref (1.0: linear in hosts), and the node
    CPU per host of the one-host-at-a-time no-op ("alone") over its own at N=ref."""
    out: dict[str, float | None] = {}
    for kind, keys in (("noop", ("controller_cpu_s_per_host", "node_cpu_s_per_host", "node_cpu_s_per_host_net")),
                       ("alone", ("node_cpu_s_per_host", "node_cpu_s_per_host_net"))):
        here, base = runs.get((n, kind)), runs.get((ref, kind))
        for key in keys:
            ok = here and base and here.get(key) is not None and base.get(key)
            name = f"{key}_vs_{ref}" if kind == "noop" else f"{kind}_{key}_vs_{ref}"
            out[name] = round(here[key] / base[key], 2) if ok else None
    return out


def _pair(figures: dict[str, Any], key: str) -> str:
    """'raw; net' of a figure and its idle-subtracted twin (key + '_net', or key with '_vs_' -> '_net_vs_'), blank
    where it was not measured."""
    net = key.replace("_vs_", "_net_vs_") if "_vs_" in key else key + "_net"
    values = [figures.get(key), figures.get(net)]
    return "" if all(v is None for v in values) else "; ".join("" if v is None else str(v) for v in values)


def scaling(results: dict[str, Any]) -> list[str]:
    """The no-op's per-host cost past N=8: controller and node CPU per host at each N, and over N=8's."""
    rat = results.get("ratios") or ratios(results)
    lines = []
    for profile in results["profiles"]:
        runs = {(r["nodes"], r["run"]): r for r in results["runs"] if r["profile"] == profile}
        big = [n for n in results["sizes"] if n >= REFERENCE_N and (n, "noop") in runs]
        if len(big) < 2 or (REFERENCE_N, "noop") not in runs:
            continue
        lines += [f"## Fleet scaling, {profile}: the no-op per host past N={REFERENCE_N}", "",
                  f"| N | hosts | no-op s | controller CPU s / host | node CPU s / host | controller / host vs N={REFERENCE_N} "
                  f"| node / host vs N={REFERENCE_N} | node CPU s / host, idle background subtracted "
                  f"| its ratio vs N={REFERENCE_N} | node CPU s / host, one host at a time (forks 1): raw; idle "
                  f"subtracted | their ratios vs N={REFERENCE_N} | modules / host | node memory MiB (mean / max) |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for n in big:
            o, r, a = runs[(n, "noop")], rat[profile][n], runs.get((n, "alone")) or {}
            lines.append(f"| {n} | {o['hosts']} | {o['wall_s']} | {o['controller_cpu_s_per_host']} | "
                         f"{o['node_cpu_s_per_host']} | {r[f'controller_cpu_s_per_host_vs_{REFERENCE_N}']} | "
                         f"{r[f'node_cpu_s_per_host_vs_{REFERENCE_N}']} | {o.get('node_cpu_s_per_host_net')} | "
                         f"{r.get(f'node_cpu_s_per_host_net_vs_{REFERENCE_N}')} | {_pair(a, 'node_cpu_s_per_host')} | "
                         f"{_pair(r, f'alone_node_cpu_s_per_host_vs_{REFERENCE_N}')} | {o['modules_per_host']} | "
                         f"{o.get('node_memory_mib_mean')} / {o.get('node_memory_mib_max')} |")
        lines.append("")
    return lines


def busy_cores(run: dict[str, Any]) -> str:
    """Average cores kept busy during a run: busy CPU seconds over wall seconds (at the core count: saturated)."""
    if not run.get("busy_cpu_s") or not run.get("wall_s"):
        return ""
    return f"{run['busy_cpu_s'] / run['wall_s']:.2f}"


def describe(profile: str) -> str:
    if profile.startswith("ref:"):
        return f"the collection as of {profile[4:]}, with its ansible.cfg, over docker exec as root"
    return {"tuned": "this checkout, its ansible.cfg, over SSH as a sudo user",
            "docker": "this checkout, its ansible.cfg, over docker exec as root (the transport of earlier rounds)",
            "nopipelining": "this checkout, ANSIBLE_PIPELINING=False",
            "mitogen": "this checkout, its ansible.cfg, mitogen_linear strategy and mitogen's SSH transport",
            "defaults": "this checkout, Ansible defaults: " + ", ".join(f"{k}={v}" for k, v in DEFAULTS.items())}[profile]


def compare(results: dict[str, Any]) -> list[str]:
    """No-op and first-converge time of every profile against 'tuned' at each N, from this one run."""
    walls = {(r["profile"], r["nodes"], r["run"]): r["wall_s"] for r in results["runs"]}
    others = [p for p in results["profiles"] if p != "tuned"]
    if "tuned" not in results["profiles"] or not others:
        return []
    lines = ["## Before / after (same run): the other profiles' time divided by tuned's", "",
             "| profile | N | first / tuned first | no-op / tuned no-op | check / tuned check |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for profile in others:
        for n in results["sizes"]:
            cells = [round(walls[(profile, n, k)] / walls[("tuned", n, k)], 2)
                     if (profile, n, k) in walls and ("tuned", n, k) in walls else "" for k in RUNS[:3]]
            if not any(cells):
                continue
            lines.append(f"| {profile} | {n} | " + " | ".join(str(c) for c in cells) + " |")
    return lines + [""]


def markdown(results: dict[str, Any]) -> str:
    rat = ratios(results)
    lines = ["# site.yml converge cost on lab nodes", "",
             "N GPU-less servers plus one router (systemd containers on one machine), hardware-bound stages off.",
             "Times are wall seconds from one `make bench` run; compare the ratios, not the absolute numbers.",
             "'cores busy' is the machine's busy CPU time over wall time (controller and lab nodes share the cores);",
             "'controller CPU s' is what ansible-playbook and its children used.", ""]
    for profile in results["profiles"]:
        lines += [f"## {profile} ({describe(profile)})",
                  "", "| N | first s | no-op s | check s | no-op / no-op(N=1) | no-op / first | changed first | changed no-op "
                  "| changed check | no-op cores busy | no-op controller CPU s | no-op node CPU s / host "
                  "| no-op controller CPU s / host | no-op modules / host |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        runs = {(r["nodes"], r["run"]): r for r in results["runs"] if r["profile"] == profile}
        for n in results["sizes"]:
            if (n, "noop") not in runs:
                continue
            f, o, c = runs[(n, "first")], runs[(n, "noop")], runs[(n, "check")]
            r = rat[profile][n]
            lines.append(f"| {n} | {f['wall_s']} | {o['wall_s']} | {c['wall_s']} | {r['noop_vs_noop1']} | "
                         f"{r['noop_vs_first']} | {f['changed']} | {o['changed']} | {c['changed']} | "
                         f"{busy_cores(o)} of {o.get('cores', '?')} | {o.get('controller_cpu_s', '')} | "
                         f"{o.get('node_cpu_s_per_host', '')} | {o.get('controller_cpu_s_per_host', '')} | "
                         f"{o.get('modules_per_host', '')} |")
        lines.append("")
        top = next((r for r in results["runs"] if r["profile"] == profile and r["run"] == "noop"
                    and r["nodes"] == max(results["sizes"])), None)
        if top:
            lines += [f"Slowest tasks of the no-op run at N={top['nodes']}:", ""]
            lines += [f"- {t['seconds']:.2f} s {t['task']}" for t in top["slowest"]]
            lines.append("")
    lines += compare(results)
    lines += scaling(results)
    if results.get("render"):
        lines += ["## render.yml at fleet sizes (generated sites: racks of 16, a TP16 pair and a router per rack)", "",
                  "| servers | round | first render s | second render s | controller CPU s (first) |",
                  "| ---: | ---: | ---: | ---: | ---: |"]
        by = {(r["hosts"], r.get("round", 1), r["run"]): r for r in results["render"]}
        for n, i in sorted({(r["hosts"], r.get("round", 1)) for r in results["render"]}):
            lines.append(f"| {n} | {i} | {by[(n, i, 'first')]['wall_s']} | {by[(n, i, 'again')]['wall_s']} | "
                         f"{by[(n, i, 'first')]['controller_cpu_s']} |")
        lines.append("")
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, profile in enumerate(results["profiles"]):  # one colour per profile, one line style per run
        for kind, style in zip(RUNS[:3], ("o-", "s--", "^:")):
            pts = sorted((r["nodes"], r["wall_s"]) for r in results["runs"]
                         if r["profile"] == profile and r["run"] == kind)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colours[i % len(colours)],
                    label=f"{profile} {kind}")
    ax.set_xlabel("servers (N)")
    ax.set_ylabel("wall seconds")
    ax.set_title("site.yml on lab nodes")
    ax.set_xticks(results["sizes"])
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,4,8,16,32")
    ap.add_argument("--profiles", default="tuned")
    ap.add_argument("--out", default=str(ROOT / "bench"))
    ap.add_argument("--report", metavar="RESULTS_JSON", help="write the tables and plot again from a results.json; measure nothing")
    ap.add_argument("--render", default="", help="also time render.yml over generated sites of these sizes, e.g. 512,2048")
    ap.add_argument("--render-runs", type=int, default=1, help="how many first and second renders of each size")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each no-op and --check this many times and report the median of each figure")
    args = ap.parse_args()
    if args.report:
        results = json.loads(Path(args.report).read_text())
    else:
        results = measure([int(s) for s in args.sizes.split(",") if s], [p for p in args.profiles.split(",") if p],
                          partial=ROOT / ".cache" / "bench-partial.json", repeat=args.repeat)
        results["repeat"] = args.repeat
        if args.render:
            results["render"] = measure_render([int(s) for s in args.render.split(",")],
                                               ROOT / ".cache" / "bench-render", args.render_runs)
    results["ratios"] = ratios(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "README.md").write_text(markdown(results))
    plot(results, out / "bench.png")
    print((out / "README.md").read_text())
    return 0 if all(r["rc"] == 0 for r in results["runs"] + results.get("render", [])) else 1


if __name__ == "__main__":
    sys.exit(main())
