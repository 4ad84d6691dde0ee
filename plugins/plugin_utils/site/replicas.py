# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several servers of one cell on one node (sglang_replicas, sglang_replica_gpus). Pure.

A server host's plan describes one serving instance. With sglang_replicas: N > 1 it describes N of them: the host's
plan is its first replica's, and plan["replicas"] holds every replica's plan (the first included), each a complete
server plan of its own (instance, unit, --port, pinned --nccl-port, GPU set, environment file), so every function
that takes a server plan (units, monitoring, verify) takes a replica as it is. instances_of() is how the rest of the
collection walks them; a host without replicas is its own one instance.

What replicas share: the node, its install, its weights (read-only) and the cell; what each has alone: its GPUs
(data/sglang/gpu_sets.yml: a mask in its environment file, or docker's --gpus device list), its ports
(data/sglang/ports.yml: replica_step, replica_nccl_offset) and its files.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import coerce

REPLICAS = "sglang_replicas"
GPU_SETS = "sglang_replica_gpus"
_EXAMPLE = "[[0, 1], [2, 3]]"


def instances_of(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The serving instances a host's plan runs: its replicas, or the plan itself."""
    return list(plan.get("replicas") or [plan])


@functools.lru_cache(maxsize=1)
def gpu_set_forms() -> dict[str, Any]:
    """data/sglang/gpu_sets.yml: how a server is given its own GPUs, per vendor and install method."""
    return read_yaml(DATA_DIR / "sglang" / "gpu_sets.yml")


def mask_variables() -> set[str]:
    """Every environment variable a GPU set writes (either vendor): the plan owns them on a host with GPU sets."""
    return {name for vendor in gpu_set_forms().values() for form in vendor.values()
            for name in (form.get("env") or {})}


def devices(gpus: list[int]) -> str:
    return ",".join(str(g) for g in gpus)


def gpu_env(vendor: str, method: str, gpus: list[int] | None) -> dict[str, str]:
    """The environment lines that give a server its GPU set (none when it sees every GPU)."""
    if gpus is None:
        return {}
    form = (gpu_set_forms().get(vendor) or {}).get(method) or {}
    return {name: str(value).format(devices=devices(gpus)) for name, value in (form.get("env") or {}).items()}


def docker_gpu_options(vendor: str, gpus: list[int] | None) -> list[str] | None:
    """docker run options that hand the server only its GPU set (None: the vendor's own options stand)."""
    if gpus is None:
        return None
    options = ((gpu_set_forms().get(vendor) or {}).get("docker") or {}).get("options")
    return [str(o).format(devices=devices(gpus)) for o in options] if options else None


def _indices(value: Any, host: str, replica: int) -> list[int]:
    if not isinstance(value, (list, tuple)) or not value:
        raise RecipeError(f"{GPU_SETS}: replica {replica} of {host} is {value!r}, not a list of GPU indices; write one "
                          f"list per replica, e.g. {_EXAMPLE}")
    out = []
    for item in value:
        try:
            index = coerce(item, "int", GPU_SETS)
        except RecipeError:
            index = None
        if index is None or index < 0:
            raise RecipeError(f"{GPU_SETS}: replica {replica} of {host} names {item!r}, which is not a GPU index (0, 1, "
                              f"...); write one list of indices per replica, e.g. {_EXAMPLE}")
        out.append(index)
    return out


def gpu_sets(host: str, hv: dict[str, Any], rec: dict[str, Any], node_gpus: int,
             placement_value: Callable[[dict[str, Any], str], Any]) -> list[list[int]] | None:
    """Each replica's GPU indices, checked against the cell and the node; None for a plain server (one instance that
    sees every GPU). Refused, with what would work: fewer than one replica, replicas of a multi-node cell or of a PD
    worker, sets of the wrong size, a GPU the node lacks or in two sets, more GPUs than the node has, and a mask of
    the operator's own in sglang_env (the plan owns it here)."""
    count = placement_value(hv, REPLICAS)
    given = placement_value(hv, GPU_SETS)
    if count is not None and count < 1:
        raise RecipeError(f"{REPLICAS}: {count} on {host}; give 1 (one server, the default) or more")
    if given is None and (count or 1) == 1:
        return None
    if given is not None and hv.get(REPLICAS) is None:
        count = len(given)
    cell = f"{rec['model']} {rec['gpu']}/{rec['quant']}/{rec['strategy']}"
    if rec["nodes"] > 1:
        raise RecipeError(f"{REPLICAS}: {host} asks for {count} replica(s) of {cell}, a {rec['nodes']}-node cell; "
                          "replicas are single-node servers side by side on one node. Use a single-node cell, or "
                          f"leave {REPLICAS} and {GPU_SETS} unset (one instance per sglang_instance_group)")
    if rec["pd_role"]:
        raise RecipeError(f"{REPLICAS}: {host} is a PD {rec['pd_role']} worker ({cell}); PD workers run one per host "
                          f"(the router pairs them by address and bootstrap port): leave {REPLICAS} and {GPU_SETS} "
                          "unset there and give each PD worker its own host")
    per = int(rec["gpus_per_node"])
    if given is None:
        if count * per > node_gpus:
            raise RecipeError(f"{REPLICAS}: {count} replicas x {per} GPU(s) of {cell} is {count * per} GPUs, but the "
                              f"node ({rec['gpu']}) has {node_gpus}; at most {node_gpus // per} replica(s) of this cell "
                              "fit on one node")
        sets = [list(range(i * per, (i + 1) * per)) for i in range(count)]
    else:
        if not isinstance(given, list) or not given:
            raise RecipeError(f"{GPU_SETS}: {given!r} on {host} is not a list of GPU sets; write one list of GPU "
                              f"indices per replica, e.g. {_EXAMPLE}")
        if len(given) != count:
            raise RecipeError(f"{GPU_SETS}: {host} lists {len(given)} GPU set(s) but {REPLICAS} is {count}; give one "
                              f"set per replica (or leave {REPLICAS} unset: the sets count the replicas)")
        sets = [_indices(value, host, i) for i, value in enumerate(given)]
        check_sets(host, sets, per, node_gpus, cell, rec["gpu"])
    mine = sorted(mask_variables() & {str(k) for k in (hv.get("sglang_env") or {})})
    if mine:
        raise RecipeError(f"sglang_env: {host} sets {', '.join(mine)}, but with {REPLICAS} / {GPU_SETS} the plan gives "
                          f"each server its own GPUs; drop {'it' if len(mine) == 1 else 'them'} and name the GPUs in "
                          f"{GPU_SETS}")
    return sets


def check_sets(host: str, sets: list[list[int]], per: int, node_gpus: int, cell: str, gpu: str) -> None:
    """The operator's GPU sets: no GPU twice, the cell's count in each, only GPUs the node has, each in one set."""
    owner: dict[int, int] = {}
    for i, gpus in enumerate(sets):
        twice = sorted({g for g in gpus if gpus.count(g) > 1})
        if twice:
            raise RecipeError(f"{GPU_SETS}: replica {i} of {host} names GPU {', '.join(map(str, twice))} twice; "
                              "each GPU once per set")
        if len(gpus) != per:
            raise RecipeError(f"{GPU_SETS}: replica {i} of {host} gets GPU(s) {devices(gpus)} ({len(gpus)}), but "
                              f"{cell} takes {per} per server; give every replica exactly {per} GPU(s)")
        past = [g for g in gpus if g >= node_gpus]
        if past:
            raise RecipeError(f"{GPU_SETS}: replica {i} of {host} names GPU {', '.join(map(str, past))}, but the "
                              f"node ({gpu}) has {node_gpus}: GPUs 0-{node_gpus - 1}")
        for g in gpus:
            if g in owner:
                raise RecipeError(f"{GPU_SETS}: GPU {g} of {host} is in replica {owner[g]} and replica {i}; each "
                                  "GPU serves one replica")
            owner[g] = i


def name(instance: str, index: int, count: int) -> str:
    """A replica's instance name (its unit is sglang-<name>.service): the host's instance name, -r<index> after it
    when the host runs more than one."""
    return instance if count == 1 else f"{instance}-r{index}"


def ports(base: int, index: int, step: int, nccl_offset: int) -> tuple[int, int]:
    """(--port, --nccl-port) of replica `index`."""
    port = base + index * step
    return port, port + nccl_offset
