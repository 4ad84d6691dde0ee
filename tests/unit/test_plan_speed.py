"""The plan's speed as a ratio, not a time: plan_site() and render_all() of the bench's generated 512-server site
(bench/bench.py render_inventory: racks of 16, a BF16 TP16 pair and FP8 servers per rack, a router per rack) against
a fixed pure-Python reference workload timed in the same process, best of two each. Issue 27 asks render.yml of
2,048 servers in 10 s here; the plan and render of 512 took 1.9x to 3.1x the reference on this 2-core machine (shared by
other work) when the budget was set (2026-12-01): the budget is about three times the quiet figure, so a change that makes the plan twice as slow per host fails
here whatever machine CI runs on. docs/performance.md has the absolute numbers and where the time goes."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import render
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench  # noqa: E402

#: plan + render of 512 servers, in units of the reference workload (see the module's docstring)
BUDGET = 6.0


def flatten(doc: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """An Ansible YAML inventory as (hostvars, groups), with Ansible's precedence: groups' vars by depth (a child's
    over its parent's), groups of one depth by name, then the host's own vars."""
    own: dict[str, dict[str, Any]] = {}
    member_of: dict[str, dict[str, int]] = {}
    group_vars: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[str]] = {}

    def walk(name: str, group: dict[str, Any], depth: int) -> list[str]:
        group_vars[name] = group.get("vars") or {}
        members = groups.setdefault(name, [])
        for host, hvars in (group.get("hosts") or {}).items():
            own[host] = {**own.get(host, {}), **(hvars or {})}
            members.append(host)
        for child, sub in (group.get("children") or {}).items():
            members.extend(h for h in walk(child, sub or {}, depth + 1) if h not in members)
        for host in members:
            member_of.setdefault(host, {})[name] = depth
        return members

    walk("all", doc["all"], 0)
    hostvars = {}
    for host, gs in member_of.items():
        merged: dict[str, Any] = {}
        for name in sorted(gs, key=lambda g: (gs[g], g)):
            merged.update(group_vars[name])
        hostvars[host] = {**merged, **own.get(host, {})}
    groups["all"] = sorted(hostvars)
    return hostvars, groups


def reference() -> None:
    """A fixed workload of the plan's kind (dicts, strings, JSON): never changes with the collection."""
    out = []
    for i in range(60000):
        doc = {"host": f"gpu-{i // 16:03d}-{i % 16:02d}", "port": 30000 + i % 7, "args": ["--tp", str(i % 8), "--x"]}
        out.append(json.dumps(doc, sort_keys=True).replace(" ", ""))
    assert len("".join(out)) > 0


def best_of(n: int, work: Callable[[], Any]) -> float:
    times = []
    for _round in range(n):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def test_flatten_reads_the_bench_inventory_as_ansible_does(tmp_path: Path) -> None:
    """The flattening against ansible-inventory's own reading of the same file (hosts, groups and every variable)."""
    inv = bench.render_inventory(40, tmp_path)
    hv, groups = flatten(yaml.safe_load(inv.read_text()))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inv), "--list"],
                          capture_output=True, text=True, check=True, timeout=300)
    listed = json.loads(proc.stdout)
    assert hv == listed["_meta"]["hostvars"]
    for name, members in groups.items():
        if name != "all":
            assert set(members) == set(listed[name].get("hosts", []) + [
                h for child in listed[name].get("children", []) for h in groups[child]]), name
    # and by hand: three racks (16, 16, 8), one router per rack; a rack's first two are its BF16 pair
    assert len(groups["gpus"]) == 40 and groups["routers"] == ["router-000", "router-001", "router-002"]
    assert hv["gpu-002-01"]["sglang_quant"] == "bf16" and hv["gpu-002-02"]["sglang_quant"] == "fp8"


def test_plan_and_render_of_512_servers_within_budget(tmp_path: Path) -> None:
    hv, groups = flatten(yaml.safe_load(bench.render_inventory(512, tmp_path).read_text()))
    load_catalog()  # data files parsed once per process, as in a playbook run

    def plan_and_render() -> None:
        site = plan_site(hv, groups)
        assert not site["errors"], site["errors"]
        render.render_all(site["plans"], "bench", site_monitoring=site["monitoring"])

    ratio = best_of(2, plan_and_render) / best_of(3, reference)
    print(f"plan+render of 512 servers: {ratio:.1f}x the reference workload (budget {BUDGET}x)")
    assert ratio <= BUDGET, (f"plan+render of 512 servers took {ratio:.1f}x the reference workload, over the budget of "
                             f"{BUDGET}x: profile it (docs/performance.md says how) before raising the budget")
