# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: does this node's hardware hold the recipe its inventory asks for? Pure, controller side.

check_host() returns every problem (with the variable or action that fixes it) and every warning of one
host; report_text() turns the problems of all hosts into the one message the play fails with.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.metalserve.sglang.plugins.module_utils import fabric_probe
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import var_or_none
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import Catalog, Cell, checkpoint_of, load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

MIB_TO_GB = 1.048576e-3  # 1 MiB in decimal GB, the unit of checkpoint sizes


@dataclass
class Limits:
    vram_headroom: float = 0.10      # weights may use at most 1 / (1 + headroom) of the instance's GPU memory
    disk_headroom: float = 0.05      # free space beyond the checkpoint size
    require_rdma: bool = True        # multi-node and PD hosts need an ACTIVE IB/RoCE port


@dataclass
class Report:
    host: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)
    summary: str = ""

    def problem(self, what: str, fix: str) -> None:
        self.problems.append(f"{what} Fix: {fix}")

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "ok": not self.problems, "problems": self.problems, "warnings": self.warnings,
                "alternatives": self.alternatives, "summary": self.summary}


def gb(mib: float | None) -> float:
    return (mib or 0) * MIB_TO_GB


def cell_gpus_per_node(cell: Cell) -> int:
    flags = dict(cell.flags)
    return max(1, int(flags.get("--tp-size", 1)) * int(flags.get("--pp-size", 1)) // cell.nodes)


def fits(catalog: Catalog, model_id: str, cell: Cell, count: int, mib_per_gpu: float | None,
         limits: Limits) -> bool:
    per_node = cell_gpus_per_node(cell)
    if per_node > count:
        return False
    model = catalog.models[model_id]
    size = checkpoint_of(model, cell.gpu, cell.quant).get("size_gb") if cell.quant in model.checkpoints else None
    if not size or not mib_per_gpu:
        return True
    return size * (1 + limits.vram_headroom) <= gb(mib_per_gpu) * per_node * cell.nodes


def alternatives(catalog: Catalog, gpu_id: str, count: int, mib_per_gpu: float | None, limits: Limits,
                 model_first: str | None = None) -> list[str]:
    """Recipes this node's GPUs can run (single node): the asked-for model's first, then the site's own recipes
    (sglang_recipes) of any model. Another shipped model is not offered: it serves something else."""
    out = []
    models = sorted(catalog.models, key=lambda m: (m != model_first, m))
    for model_id in models:
        for cell in catalog.models[model_id].cells:
            if model_first and model_id != model_first and cell.origin == "cookbook":
                continue
            if cell.gpu == gpu_id and cell.nodes == 1 and fits(catalog, model_id, cell, count, mib_per_gpu, limits):
                origin = "" if cell.origin == "cookbook" else ", from sglang_recipes"
                out.append(f"{model_id} {cell.gpu}/{cell.quant}/{cell.strategy} "
                           f"(TP{dict(cell.flags).get('--tp-size', 1)}{origin})")
    return out


def smallest_need(catalog: Catalog, model_id: str, gpu_id: str) -> str:
    cells = [c for c in catalog.models.get(model_id, catalog.models[next(iter(catalog.models))]).cells
             if c.gpu == gpu_id]
    if not cells:
        return f"{model_id} has no recipe for {gpu_id}"
    need = min(cell_gpus_per_node(c) for c in cells)
    return f"the smallest {model_id} recipe on {gpu_id} needs {need} GPUs per node"


def free_bytes(mounts: list[dict[str, Any]], path: str) -> tuple[str | None, int | None]:
    """The mount holding `path` (longest prefix) and its free bytes, from Ansible's ansible_mounts."""
    best = None
    for mount in mounts or []:
        point = mount.get("mount", "")
        inside = path == point or path.startswith(point.rstrip("/") + "/") or point == "/"
        if inside and (best is None or len(point) > len(best["mount"])):
            best = mount
    if best is None:
        return None, None
    return best["mount"], best.get("size_available")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


def check_gpus(r: Report, plan: dict[str, Any], gpu: dict[str, Any], platform: dict[str, Any]) -> bool:
    """GPU presence, model, count. Returns False when there is nothing further to check on the GPUs."""
    rec = plan["recipe"]
    count, gpu_id = gpu.get("count", 0), gpu.get("gpu_id")
    models = ", ".join(gpu.get("models") or []) or "?"
    if not count:
        r.problem("no GPU found: nvidia-smi, amd-smi and rocm-smi gave no GPU and the PCI bus shows no NVIDIA or AMD "
                  "GPU.", "run this on a GPU node (is the GPU passed through to this machine?), or set "
                  "sglang_role: router or none for hosts that serve no model")
        return False
    if gpu.get("source") == "sysfs":
        r.problem(f"{count} {gpu.get('vendor')} GPU(s) are on the PCI bus but no driver answers "
                  f"({'; '.join(gpu.get('notes') or [])}).",
                  "install and load the GPU driver (roles nvidia_driver / rocm_driver), then rerun preflight")
    if not gpu.get("uniform", True):
        r.problem(f"mixed GPU models on one node ({models}); SGLang's tensor parallelism needs identical GPUs.",
                  "serve only from identical GPUs (CUDA_VISIBLE_DEVICES in sglang_env) or fix the hardware")
        return False
    if gpu_id == "unknown":
        r.problem(f"the GPUs ({models}) are not in the GPU platform table.",
                  "add them with sglang_gpu_platforms (vendor, gpus_per_node, vram_gb, match.name_pattern) and a "
                  "recipe with sglang_recipes")
        return False
    if gpu_id != rec["gpu"]:
        r.problem(f"sglang_gpu is {rec['gpu']} but this node has {count}x {gpu_id} ({models}).",
                  f"set sglang_gpu: {gpu_id} for this host or its rack (or leave it unset: preflight then takes it "
                  "from the node)")
        return False
    need = rec["gpus_per_node"]
    if count < need:
        layout = f"over {rec['nodes']} nodes" if rec["nodes"] > 1 else "on one node"
        r.problem(f"the recipe needs {need} {gpu_id} GPUs per node (TP{need * rec['nodes']} {layout}); this node "
                  f"has {count} ({models}).",
                  "pick a recipe that fits this node (listed below) or run this one on a node with "
                  f"{need} {gpu_id} GPUs")
    # the servers of the host: its replicas' plans (sglang_replicas), or its own
    placed = [g for i in plan.get("replicas") or [plan] for g in (i.get("gpus") or [])]
    if placed and max(placed) >= count:
        r.problem(f"the plan places servers on GPU {max(placed)} (sglang_replicas / sglang_replica_gpus); this node has "
                  f"{count} ({models}), GPUs 0-{count - 1}.",
                  "lower sglang_replicas or name GPUs this node has in sglang_replica_gpus")
    expected = platform.get("gpus_per_node")
    if expected and count not in (expected, need) and count > need and not placed:
        r.warnings.append(f"{count} GPUs found; a standard {gpu_id} node has {expected}, the recipe uses {need}")
    return True


def check_memory(r: Report, plan: dict[str, Any], gpu: dict[str, Any], limits: Limits) -> None:
    rec = plan["recipe"]
    size = rec.get("checkpoint_size_gb")
    mib = gpu.get("memory_mib_per_gpu")
    if not size or not mib:
        return
    if gpu.get("count", 0) < rec["gpus_per_node"]:
        return  # the GPU-count problem already says it; memory per used GPU is what matters here
    used = rec["gpus_per_node"] * rec["nodes"]
    have = gb(mib) * used
    need = size * (1 + limits.vram_headroom)
    if have < need:
        r.problem(f"the {rec['quant']} checkpoint ({rec['checkpoint']}, ~{size} GB) needs ~{need:.0f} GB of GPU memory "
                  f"with {limits.vram_headroom:.0%} headroom; {used} GPU(s) x {gb(mib):.0f} GB give {have:.0f} GB.",
                  "use a smaller precision (sglang_quant) or more GPUs/nodes")


def check_gpu_health(r: Report, gpu: dict[str, Any], platform: dict[str, Any]) -> None:
    gpus = gpu.get("gpus") or []
    if gpu.get("vendor") != "nvidia" or gpu.get("source") != "nvidia-smi":
        return
    mig = [str(g["index"]) for g in gpus if (g.get("mig_mode") or "").lower() == "enabled"]
    if mig:
        r.problem(f"MIG is enabled on GPU {', '.join(mig)}; SGLang needs whole GPUs.",
                  "disable MIG (nvidia-smi -mig 0) and reset the GPUs")
    if any(not g.get("persistence_mode") for g in gpus):
        r.warnings.append("persistence mode is off on some GPUs; the nvidia_driver role enables nvidia-persistenced")
    if platform.get("open_modules") and gpu.get("driver_flavor") == "proprietary":
        r.problem(f"{platform.get('display_name', 'this GPU')} needs the open GPU kernel modules; the proprietary "
                  "driver is loaded.", "install the open modules (nvidia_driver role, nvidia-open packages)")
    states = gpu.get("fabric_manager") or {}
    bad = [f"GPU{g['index']}={g.get('fabric_state')}/{g.get('fabric_status')}" for g in gpus
           if g.get("fabric_state") not in (None, "N/A") and
           (g.get("fabric_state"), g.get("fabric_status")) != ("Completed", "Success")]
    if platform.get("nvswitch") and bad:
        r.problem(f"the GPUs are not registered with the NVLink fabric ({', '.join(bad)}).",
                  "start nvidia-fabricmanager at the driver's exact version (nvidia_driver role) and check its log")
    if (gpu.get("nvswitch") or {}).get("present"):
        if not states.get("running"):
            r.problem("NVSwitches are present but nv-fabricmanager is not running.",
                      "install and start Fabric Manager matching the driver (nvidia_driver role)")
        elif states.get("version") and gpu.get("driver_version") and states["version"] != gpu["driver_version"]:
            r.problem(f"Fabric Manager {states['version']} does not match driver {gpu['driver_version']}.",
                      "install the Fabric Manager package of exactly the driver's version and hold both")
    if gpu.get("secure_boot") and "nvidia" not in (gpu.get("kernel_modules") or []) and not gpu.get("module_signer"):
        r.problem("Secure Boot is on and the nvidia kernel module is neither loaded nor signed.",
                  "enroll a MOK and sign the modules, or use the distribution's signed precompiled modules")


def check_disk(r: Report, plan: dict[str, Any], host: dict[str, Any], limits: Limits) -> None:
    rec = plan["recipe"]
    size, path = rec.get("checkpoint_size_gb"), host.get("weights_path")
    if not size or not path or host.get("weights_staged"):
        return
    mount, free = free_bytes(host.get("mounts") or [], path)
    if free is None:
        r.warnings.append(f"could not tell the free space for {path} (no mount facts)")
        return
    need = size * (1 + limits.disk_headroom) * 1e9
    if free < need:
        r.problem(f"{path} (on {mount}) has {free / 1e9:.0f} GB free; the {rec['checkpoint']} weights need "
                  f"~{need / 1e9:.0f} GB.", "free space there, or point sglang_model_path at a larger node-local disk")


def check_instance(r: Report, plan: dict[str, Any], facts: dict[str, dict[str, Any]]) -> None:
    """Multi-node: every member present, same GPUs and driver, head address resolvable from here."""
    members = plan.get("members") or [plan["host"]]
    if len(members) < 2:
        return
    mine = facts.get(plan["host"], {}).get("gpu") or {}
    missing = [m for m in members if m != plan["host"] and not (facts.get(m) or {}).get("gpu")]
    if missing:
        r.problem(f"instance {plan['instance']} has {len(members)} members ({', '.join(members)}); no facts from "
                  f"{', '.join(missing)} (not in this run, or unreachable).",
                  "run preflight on every member of sglang_instance_group together")
    for member in members:
        other = (facts.get(member) or {}).get("gpu")
        if member == plan["host"] or not other:
            continue
        for key, label in (("gpu_id", "GPU model"), ("count", "GPU count"), ("driver_version", "driver")):
            if other.get(key) != mine.get(key):
                r.problem(f"{label} differs from member {member}: {mine.get(key)} here, {other.get(key)} there.",
                          "give every member of the instance the same hardware and driver")
    head = plan.get("head_address")
    resolved = ((facts.get(plan["host"]) or {}).get("fabric") or {}).get("resolved") or {}
    if head and not _is_ip(head) and not resolved.get(head):
        r.problem(f"the head address {head} does not resolve on this node.",
                  "fix DNS or /etc/hosts, or set sglang_dist_address on the head to an IP")  # one-owner: advice


def check_rdma(r: Report, plan: dict[str, Any], fabric: dict[str, Any], limits: Limits) -> None:
    multi = len(plan.get("members") or []) > 1
    pd = bool(plan["recipe"].get("pd_role"))
    if not (multi or pd):
        return
    why = "multi-node" if multi else "PD disaggregation"
    if not fabric.get("active_ports"):
        text = (f"{why} needs an ACTIVE InfiniBand/RoCE port; "
                + (f"{fabric.get('device_count', 0)} HCA(s), none ACTIVE." if fabric.get("device_count")
                   else f"no HCA under /{fabric_probe.IB_CLASS}."))
        fix = "cable/enable the HCA ports (rdma role), or set preflight_require_rdma: false to accept TCP"
        if limits.require_rdma:
            r.problem(text, fix)
        else:
            r.warnings.append(text + " NCCL and Mooncake will fall back to TCP.")
    memlock = (fabric.get("memlock") or {}).get("soft")
    if memlock not in (None, -1):
        r.warnings.append(f"memlock is {memlock} bytes in this session; the serving unit sets LimitMEMLOCK=infinity")


def check_host(plan: dict[str, Any], facts: dict[str, dict[str, Any]], catalog: Catalog,
               limits: Limits) -> Report:
    host = plan["host"]
    mine = facts.get(host) or {}
    gpu, fabric = mine.get("gpu") or {}, mine.get("fabric") or {}
    rec = plan["recipe"]
    r = Report(host=host, summary=(f"{rec['model']} {rec['gpu']}/{rec['quant']}/{rec['strategy']}, "
                                   f"{rec['nodes']} node{'s' if rec['nodes'] > 1 else ''}, "
                                   f"{rec['gpus_per_node']} GPUs per node"))
    platform = catalog.gpus.get(rec["gpu"], {})
    if check_gpus(r, plan, gpu, platform):
        check_memory(r, plan, gpu, limits)
        check_gpu_health(r, gpu, platform)
    check_disk(r, plan, mine, limits)
    check_instance(r, plan, facts)
    check_rdma(r, plan, fabric, limits)
    if r.problems and gpu.get("gpu_id") and gpu.get("count"):
        r.alternatives = alternatives(catalog, gpu["gpu_id"], gpu["count"], gpu.get("memory_mib_per_gpu"), limits,
                                      rec["model"])
        if not r.alternatives:
            r.alternatives = [f"none: {smallest_need(catalog, rec['model'], gpu['gpu_id'])}; this node has "
                              f"{gpu['count']}. A site recipe (sglang_recipes) can add one that fits"]
    return r


def report_text(reports: list[Report], plan_errors: dict[str, str]) -> str:
    failing = [r for r in reports if r.problems]
    total = len(reports) + len(plan_errors)
    lines = [f"preflight: {len(failing) + len(plan_errors)} of {total} host(s) cannot serve what the inventory asks:"]
    for host, error in sorted(plan_errors.items()):
        lines.append(f"{host}: the inventory does not describe a recipe: {error}")
    for r in sorted(failing, key=lambda x: x.host):
        lines.append(f"{r.host} ({r.summary}):")
        lines += [f"  - {p}" for p in r.problems]
        if r.alternatives:
            lines.append("  Recipes this node can run: " + "; ".join(r.alternatives))
    return "\n".join(lines)


def host_facts(view: Any, getter: Any) -> dict[str, Any]:
    """The facts preflight reads of one host; `getter(view, name)` returns a variable or None."""
    facts = getter(view, "ansible_facts") or {}
    weights = getter(view, "preflight_weights") or {}
    return {"gpu": facts.get("metalserve_gpu"), "fabric": facts.get("metalserve_fabric"),
            "mounts": facts.get("mounts"), "weights_path": weights.get("path"),
            "weights_staged": weights.get("staged", False)}


def facts_of(hostvars: Any, hosts: Any) -> dict[str, dict[str, Any]]:
    """host_facts() of each host, read from Ansible's hostvars."""
    return {h: host_facts(hostvars[h], var_or_none) for h in hosts}


def catalog_for(hostvars: Any) -> Any:
    """catalog_of(host) for site_reports: the catalog with the host's own sglang_recipes and sglang_gpu_platforms."""
    return lambda host: load_catalog(var_or_none(hostvars[host], "sglang_recipes"),
                                     var_or_none(hostvars[host], "sglang_gpu_platforms"))


def site_reports(plans: dict[str, dict[str, Any]], facts: dict[str, dict[str, Any]], catalog_of: Any,
                 limits: Limits, only_with_facts: bool = False) -> tuple[list[Report], dict[str, str]]:
    """Every server's report (hosts without GPU facts skipped when only_with_facts); catalog_of(host) gives
    the host's catalog (its sglang_recipes and sglang_gpu_platforms) or raises RecipeError."""
    reports: list[Report] = []
    errors: dict[str, str] = {}
    for host, plan in sorted(plans.items()):
        if plan.get("role") != "server" or (only_with_facts and not facts.get(host, {}).get("gpu")):
            continue
        try:
            catalog = catalog_of(host)
        except RecipeError as exc:
            errors[host] = str(exc)
            continue
        reports.append(check_host(plan, facts, catalog, limits))
    return reports, errors
