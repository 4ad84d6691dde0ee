#!/usr/bin/env python3
"""Converge cost and fleet scaling of site.yml on lab nodes (`make bench`).

For each N in --sizes: build a lab of N GPU-less servers plus one router (tests/lab/lab.py, plain shape),
then run site.yml (hardware-bound stages off) three times: the first converge, a second (no-op) converge,
and a --check run. Each run records wall time, changed tasks (from the recap) and the 10 slowest tasks
(ansible.posix.profile_tasks). --profiles adds runs with Ansible's defaults instead of our ansible.cfg
(forks 5, no pipelining, implicit gathering, no fact cache), for before/after figures.

Absolute times on shared machines are noisy; the report states ratios measured within one run:
no-op(N) / no-op(1) and no-op / first converge.
Writes <out>/results.json, <out>/README.md (tables) and <out>/bench.png (time against N).
Usage: bench.py [--sizes 1,4,8] [--profiles tuned,defaults] [--out bench]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "lab"))

import lab  # noqa: E402

DEFAULTS = {"ANSIBLE_FORKS": "5", "ANSIBLE_PIPELINING": "False", "ANSIBLE_GATHERING": "implicit",
            "ANSIBLE_CACHE_PLUGIN": "memory"}
RUNS = ("first", "noop", "check")


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


def one_run(name: str, kind: str, env: dict[str, str]) -> dict[str, Any]:
    extra_env = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks", "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "40",
                 **env}
    inv = lab.lab_dir(name) / "hosts.yml"
    args = ["ansible-playbook", "-i", str(inv), "playbooks/site.yml", "--skip-tags", lab.SKIP]
    if kind == "check":
        args.append("--check")
    t0 = time.monotonic()
    proc = lab.run_ansible(args, quiet=True, extra_env=extra_env)
    wall = time.monotonic() - t0
    recap = parse_recap(proc.stdout)
    return {"run": kind, "wall_s": round(wall, 1), "rc": proc.returncode,
            "changed": sum(h.get("changed", 0) for h in recap.values()),
            "failed": sum(h.get("failed", 0) for h in recap.values()), "hosts": len(recap),
            "slowest": parse_profile(proc.stdout)}


def measure(sizes: list[int], profiles: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": sizes, "profiles": profiles, "runs": []}
    for profile in profiles:
        env = DEFAULTS if profile == "defaults" else {}
        for n in sizes:
            name = f"bench{n}{'d' if profile == 'defaults' else ''}"
            lab.destroy(name)
            lab.up(name, n, "plain")
            try:
                for kind in RUNS:
                    run = one_run(name, kind, env)
                    run.update(profile=profile, nodes=n)
                    print(f"[bench] {profile} N={n} {kind}: {run['wall_s']} s, changed={run['changed']}, "
                          f"failed={run['failed']}", flush=True)
                    results["runs"].append(run)
            finally:
                lab.destroy(name)
    return results


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for profile in results["profiles"]:
        runs = {(r["nodes"], r["run"]): r for r in results["runs"] if r["profile"] == profile}
        base = runs.get((min(results["sizes"]), "noop"))
        out[profile] = {n: {"noop_vs_noop1": round(runs[(n, "noop")]["wall_s"] / base["wall_s"], 2) if base else None,
                            "noop_vs_first": round(runs[(n, "noop")]["wall_s"] / runs[(n, "first")]["wall_s"], 2),
                            "check_vs_first": round(runs[(n, "check")]["wall_s"] / runs[(n, "first")]["wall_s"], 2)}
                        for n in results["sizes"] if (n, "noop") in runs}
    return out


def markdown(results: dict[str, Any]) -> str:
    rat = ratios(results)
    lines = ["# site.yml converge cost on lab nodes", "",
             "N GPU-less servers plus one router (systemd containers on one machine), hardware-bound stages off.",
             "Times are wall seconds from one `make bench` run; compare the ratios, not the absolute numbers.", ""]
    for profile in results["profiles"]:
        lines += [f"## {profile} ({'our ansible.cfg' if profile == 'tuned' else 'Ansible defaults: ' + ', '.join(f'{k}={v}' for k, v in DEFAULTS.items())})",
                  "", "| N | first s | no-op s | check s | no-op / no-op(N=1) | no-op / first | changed first | changed no-op | changed check |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        runs = {(r["nodes"], r["run"]): r for r in results["runs"] if r["profile"] == profile}
        for n in results["sizes"]:
            if (n, "noop") not in runs:
                continue
            f, o, c = runs[(n, "first")], runs[(n, "noop")], runs[(n, "check")]
            r = rat[profile][n]
            lines.append(f"| {n} | {f['wall_s']} | {o['wall_s']} | {c['wall_s']} | {r['noop_vs_noop1']} | "
                         f"{r['noop_vs_first']} | {f['changed']} | {o['changed']} | {c['changed']} |")
        lines.append("")
        top = next((r for r in results["runs"] if r["profile"] == profile and r["run"] == "noop"
                    and r["nodes"] == max(results["sizes"])), None)
        if top:
            lines += [f"Slowest tasks of the no-op run at N={top['nodes']}:", ""]
            lines += [f"- {t['seconds']:.2f} s {t['task']}" for t in top["slowest"]]
            lines.append("")
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    for profile in results["profiles"]:
        for kind, style in zip(RUNS, ("o-", "s-", "^-")):
            pts = sorted((r["nodes"], r["wall_s"]) for r in results["runs"]
                         if r["profile"] == profile and r["run"] == kind)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=f"{profile} {kind}")
    ax.set_xlabel("servers (N)")
    ax.set_ylabel("wall seconds")
    ax.set_title("site.yml on lab nodes")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,4,8")
    ap.add_argument("--profiles", default="tuned")
    ap.add_argument("--out", default=str(ROOT / "bench"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = measure(sizes, args.profiles.split(","))
    results["ratios"] = ratios(results)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "README.md").write_text(markdown(results))
    plot(results, out / "bench.png")
    print((out / "README.md").read_text())
    return 0 if all(r["rc"] == 0 for r in results["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
