"""Random coherent sites and one-mistake mutations of them (tests/unit/test_generated_sites.py).

A site is made from a seed: racks of single-node servers (H200 FP8, GB300 FP8 with its IMEX domain, MI355X FP8),
a rack of Qwen3.8-27B nodes running several replicas each (TP1 or TP2, sglang_replicas), two-node H200 BF16 pairs,
PD pairs behind a PD router, plain routers over a rack, a monitoring host; each rack
with its own install method (docker or uv) and its own weights folder or hub id. Every host has the facts
site.yml's first play gathers (OS, default address, fabric for networked servers). A mutation is one mistake of
issue 26's classes applied to one host of such a site; it returns the host it changed, which the refusal must
name.
"""
from __future__ import annotations

import random
from typing import Any, Callable

FACTS = {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04",
         "distribution_release": "noble", "architecture": "x86_64", "os_family": "Debian"}
FABRIC = {"uverbs_present": True, "devices": [{"name": "mlx5_0", "ports": [
    {"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]}]}
RACKS = {
    "h200": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"},
    "gb300": {"sglang_gpu": "gb300", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"},
    "mi355x": {"sglang_gpu": "mi355x", "sglang_quant": "fp8", "sglang_strategy": "balanced"},
}
PAIR = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2}
QWEN = {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced"}
PD = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "balanced", "sglang_cookbook_revision": "03d5035a"}
CHECKPOINTS = {"fp8": "zai-org/GLM-5.3", "bf16": "zai-org/GLM-5.3-BF16"}

Site = tuple[dict[str, dict[str, Any]], dict[str, list[str]]]


class Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.hostvars: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, list[str]] = {}
        self.ip = 10

    def host(self, name: str, groups: list[str], networked: bool = False, **values: Any) -> None:
        self.ip += 1
        address = f"10.{self.ip // 250}.{self.ip % 250}.1"
        facts = {**FACTS, "default_ipv4": {"address": address, "interface": "eth0"}}
        if networked:
            facts["metalserve_fabric"] = FABRIC
        self.hostvars[name] = {"ansible_host": address, "ansible_facts": facts, **values}
        for group in groups:
            self.groups.setdefault(group, []).append(name)

    def install(self) -> dict[str, Any]:
        return {"sglang_install_method": self.rng.choice(["docker", "uv"])}

    def weights(self, quant: str) -> dict[str, Any]:
        if self.rng.random() < 0.3:
            return {}  # the hub id: SGLang fetches it itself
        return {"sglang_model_path": f"/nvme/models/{CHECKPOINTS[quant]}"}


def generate(seed: int) -> Site:
    """A coherent site of 6 to 30 hosts."""
    rng = random.Random(seed)
    b = Builder(rng)
    plain_racks = []
    for r in range(rng.randint(1, 3)):
        kind = rng.choice(sorted(RACKS))
        rack = f"rack{r}"
        settings = {**RACKS[kind], **b.install(), **b.weights("fp8"), "sglang_rack": rack}
        if kind == "mi355x" and settings["sglang_install_method"] == "uv":
            settings["sglang_install_find_links"] = ["/srv/rocm-wheels"]  # a site's own ROCm wheels (PyPI's are CUDA)
        if kind == "gb300":
            settings["nvidia_driver_imex_group"] = rack
        for n in range(rng.randint(1, 3)):
            b.host(f"{rack}-n{n}", [rack], **settings)
        plain_racks.append(rack)
    if rng.random() < 0.5:  # several servers per node: Qwen3.8-27B replicas of one or two GPUs each
        tp = rng.choice([1, 2])
        settings = {**QWEN, **b.install(), "sglang_rack": "qwen", "sglang_replicas": rng.randint(2, 8 // tp)}
        if tp == 2:
            settings["sglang_extra_args"] = ["--tp-size", "2"]
        if rng.random() < 0.5:
            settings["sglang_model_path"] = "/nvme/models/Qwen/Qwen3.8-27B-FP8"
        for n in range(rng.randint(1, 2)):
            b.host(f"qwen-n{n}", ["qwen"], **settings)
        plain_racks.append("qwen")
    for p in range(rng.randint(0, 2)):
        group = f"pair{p}"
        settings = {**PAIR, **b.install(), "sglang_model_path": f"/nvme/models/{CHECKPOINTS['bf16']}",
                    "sglang_instance_group": group, "sglang_rack": group}
        for n in range(2):
            b.host(f"{group}-n{n}", [group], networked=True, **settings)
    for p in range(rng.randint(0, 2)):
        group = f"pd{p}"
        install = b.install()
        common = {**PD, **install, "sglang_model_path": f"/nvme/models/{CHECKPOINTS['fp8']}", "sglang_rack": group}
        b.host(f"{group}-prefill", [group], networked=True, sglang_pd={"role": "prefill"}, **common)
        b.host(f"{group}-decode", [group], networked=True, sglang_pd={"role": "decode"}, **common)
        b.host(f"{group}-router", ["routers"], sglang_role="router", sglang_router_workers_group=group,
               sglang_rack=group, **install)
    for rack in rng.sample(plain_racks, rng.randint(0, len(plain_racks))):
        b.host(f"{rack}-router", ["routers"], sglang_role="router", sglang_router_workers_group=rack,
               sglang_rack=rack, **b.install())
    if rng.random() < 0.7:
        b.host("mon", ["monitoring"], sglang_role="none")
    b.groups["all"] = sorted(b.hostvars)
    return b.hostvars, {g: sorted(m) for g, m in b.groups.items()}


# --- mutations: one mistake of issue 26's classes each; the host returned must be named by the refusal ----------

def _servers(hv: dict[str, dict[str, Any]], pred: Callable[[str, dict[str, Any]], bool] = lambda h, v: True) -> list[str]:
    return sorted(h for h, v in hv.items() if v.get("sglang_role", "server") == "server" and pred(h, v))


def pick(rng: random.Random, hosts: list[str]) -> str | None:
    return rng.choice(hosts) if hosts else None


def _nvidia(h: str, v: dict[str, Any]) -> bool:
    return v.get("sglang_gpu") != "mi355x"


def tp_alias_in_extra_args(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = pick(rng, _servers(hv, lambda h, v: not v.get("sglang_nodes")))
    if host is None:
        return None
    hv[host]["sglang_extra_args"] = ["--tensor-parallel-size 16"]  # more GPUs than any node has
    return host


def dist_flag_under_an_old_name(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = pick(rng, _servers(hv))
    if host is None:
        return None
    hv[host]["sglang_extra_args"] = {"--nccl-init-addr": "10.0.0.1:20000"}
    return host


def secret_in_router_args(rng: random.Random, hv: dict, groups: dict) -> str | None:
    routers = sorted(h for h, v in hv.items() if v.get("sglang_role") == "router")
    if not routers:
        return None
    host = rng.choice(routers)
    hv[host]["sglang_router_extra_args"] = ["--api-key", "sk-live-0123456789abcdef"]
    return host


def router_host_with_port(rng: random.Random, hv: dict, groups: dict) -> str | None:
    routers = sorted(h for h, v in hv.items() if v.get("sglang_role") == "router")
    if not routers:
        return None
    host = rng.choice(routers)
    hv[host]["sglang_router_extra_args"] = ["--host", "0.0.0.0:8000"]
    return host


def nccl_boolean(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = pick(rng, _servers(hv))
    if host is None:
        return None
    hv[host]["sglang_env"] = {"NCCL_IB_DISABLE": True}
    return host


def credentials_in_env(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = pick(rng, _servers(hv))
    if host is None:
        return None
    hv[host]["sglang_env"] = {"HF_ENDPOINT": "https://user:hunter2pass@hf-mirror.example.com"}
    return host


def gpu_mask_hides_half(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_gpu") == "h200" and not v.get("sglang_nodes"))
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host]["sglang_env"] = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    return host


def pd_backends_differ(rng: random.Random, hv: dict, groups: dict) -> str | None:
    decoders = sorted(h for h, v in hv.items() if (v.get("sglang_pd") or {}).get("role") == "decode")
    if not decoders:
        return None
    host = rng.choice(decoders)
    hv[host]["sglang_pd"] = {"role": "decode", "transfer_backend": "nixl"}
    return host


def pd_kv_dtype_differs(rng: random.Random, hv: dict, groups: dict) -> str | None:
    decoders = sorted(h for h, v in hv.items() if (v.get("sglang_pd") or {}).get("role") == "decode")
    if not decoders:
        return None
    host = rng.choice(decoders)
    hv[host]["sglang_extra_args"] = {"--kv-cache-dtype": "fp8_e5m2"}
    return host


def copied_dist_address(rng: random.Random, hv: dict, groups: dict) -> str | None:
    pairs = sorted(g for g in groups if g.startswith("pair"))
    if not pairs:
        return None
    first, second = groups[rng.choice(pairs)]
    hv[second]["sglang_dist_address"] = hv[first]["ansible_host"]
    return second


def loopback_bind_behind_a_router(rng: random.Random, hv: dict, groups: dict) -> str | None:
    routed = {m for v in hv.values() if v.get("sglang_role") == "router"
              for m in groups.get(v["sglang_router_workers_group"], [])}
    hosts = sorted(h for h in routed if not hv[h].get("sglang_pd"))
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host]["sglang_host"] = "127.0.0.1"
    return host


def cuda_image_on_amd(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_gpu") == "mi355x" and v.get("sglang_install_method") == "docker")
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host]["sglang_image"] = "lmsysorg/sglang:v0.5.13.post1-cu129"
    return host


def deepep_on_amd(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_gpu") == "mi355x")
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host]["sglang_moe_a2a"] = "deepep"
    return host


def gb300_without_imex(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_gpu") == "gb300")
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host].pop("nvidia_driver_imex_group", None)
    return host


def driver_of_another_branch(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = rng.choice(_servers(hv, _nvidia) or [None]) if _servers(hv, _nvidia) else None
    if host:
        hv[host]["nvidia_driver_version"] = "575.57.08"
    return host


def daemon_json_number(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_install_method") == "docker")
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host]["container_runtime_daemon_json"] = {"log-opts": {"max-file": 5}}
    return host


def bf16_folder_on_fp8(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_quant") == "fp8")
    if not hosts:
        return None
    host = rng.choice(hosts)
    hv[host]["sglang_model_path"] = f"/nvme/models/{CHECKPOINTS['bf16']}"
    return host


def misspelled_role_prefix(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = pick(rng, _servers(hv))
    if host is None:
        return None
    hv[host]["sglang_servr_restart_sec"] = 45
    return host


def quoted_number_in_nested_dict(rng: random.Random, hv: dict, groups: dict) -> str | None:
    host = pick(rng, _servers(hv, lambda h, v: v.get("sglang_gpu") != "mi355x" and not v.get("sglang_nodes")))
    if host is None:
        return None
    hv[host]["sglang_hicache"] = {"enabled": "yes", "ratio": "two"}
    return host


def stray_nvidia_setting_on_amd(rng: random.Random, hv: dict, groups: dict) -> str | None:
    hosts = _servers(hv, lambda h, v: v.get("sglang_gpu") == "mi355x")
    if not hosts or any(_nvidia(h, v) and v.get("nvidia_driver_flavor") for h, v in hv.items()):
        return None
    host = rng.choice(hosts)
    hv[host]["nvidia_driver_flavor"] = "open"
    return host


def _replicated(h: str, v: dict[str, Any]) -> bool:
    return int(v.get("sglang_replicas") or 1) > 1


def replica_gpu_sets_overlap(rng: random.Random, hv: dict, groups: dict) -> str | None:
    """Two replicas of a host named on the same GPUs (the last set copies the first)."""
    host = pick(rng, _servers(hv, _replicated))
    if host:
        count, per = int(hv[host]["sglang_replicas"]), 2 if hv[host].get("sglang_extra_args") else 1
        sets = [[i * per + k for k in range(per)] for i in range(count)]
        hv[host]["sglang_replica_gpus"] = sets[:-1] + [list(sets[0])]
    return host


def replica_mask_of_the_operators_own(rng: random.Random, hv: dict, groups: dict) -> str | None:
    """A GPU mask in sglang_env on a host whose replicas the plan gives their own GPUs."""
    host = pick(rng, _servers(hv, _replicated))
    if host:
        hv[host]["sglang_env"] = {"CUDA_VISIBLE_DEVICES": "0,1"}
    return host


MUTATIONS: tuple[Callable[[random.Random, dict, dict], str | None], ...] = (
    tp_alias_in_extra_args, dist_flag_under_an_old_name, secret_in_router_args, router_host_with_port, nccl_boolean,
    credentials_in_env, gpu_mask_hides_half, pd_backends_differ, pd_kv_dtype_differs, copied_dist_address,
    loopback_bind_behind_a_router, cuda_image_on_amd, deepep_on_amd, gb300_without_imex, driver_of_another_branch,
    daemon_json_number, bf16_folder_on_fp8, misspelled_role_prefix, quoted_number_in_nested_dict,
    stray_nvidia_setting_on_amd, replica_gpu_sets_overlap, replica_mask_of_the_operators_own,
)
