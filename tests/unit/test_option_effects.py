"""Every option of every role changes what the nodes get (rendered/), or its role declares it converge-only.

Generated from the roles' meta/argument_specs.yml: each option is set to another valid value site-wide (as a
group_vars/all would), in a docker site and in a uv site, and the two renders (plan_site + render_all, what
render.yml writes) are compared (the uv site only where the docker site shows no change). An option that changes nothing
in either site and is not marked `converge_only`
in its role's meta/variables.yml fails the test, so a new option cannot escape it. Secrets (no_log) never reach
rendered/ and are left out. The other value of an option comes from its spec (another choice, the other boolean,
a larger number, one more list item) unless VALUES names one; CONTEXT names the settings an option only works
with (a DOCA URL needs the DOCA stack).
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import render, runtime
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

ROOT = Path(__file__).resolve().parents[2]
#: roles whose options are their including role's arguments, not the inventory's (nftables writes what
#: sglang_server, monitoring and nvidia_driver hand it from the plan)
ARGUMENT_ROLES = {"nftables"}

FACTS = {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04",
         "distribution_release": "noble", "architecture": "x86_64", "os_family": "Debian"}
FABRIC = {"uverbs_present": True, "devices": [{"name": "mlx5_0", "ports": [
    {"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]}]}
H200 = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}
PAIR = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
        "sglang_instance_group": "pair", "sglang_model_path": "/nvme/models/zai-org/GLM-5.3-BF16"}
PD = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "balanced", "sglang_cookbook_revision": "03d5035a",
      "sglang_model_path": "/nvme/models/zai-org/GLM-5.3"}
GB300 = {"sglang_gpu": "gb300", "sglang_quant": "fp8", "sglang_strategy": "high-throughput",
         "nvidia_driver_imex_group": "nvl", "sglang_model_path": "/nvme/models/zai-org/GLM-5.3"}

# another valid value where the spec alone does not give one (empty strings, URLs, names that must exist)
VALUES: dict[str, Any] = {
    "container_runtime_docker_repo_url": "https://mirror.example.com/docker/ubuntu",
    "container_runtime_docker_key_url": "https://mirror.example.com/docker/ubuntu/gpg",
    "container_runtime_daemon_json": {"log-driver": "json-file", "log-opts": {"max-size": "50m", "max-file": "3"}},
    "container_runtime_nvidia_toolkit": False,
    "nvidia_driver_imex_group": "nvl2",
    "container_runtime_nvidia_repo_url": "https://mirror.example.com/libnvidia-container/stable/deb/$(ARCH)",
    "container_runtime_nvidia_key_url": "https://mirror.example.com/libnvidia-container/gpgkey",
    "container_runtime_nvidia_toolkit_version": "1.18.0-1",
    "model_weights_source": "none",
    "model_weights_repo": "mirror-org/GLM-5.3",
    "model_weights_revision": "v1.1",
    "model_weights_hf_endpoint": "https://hf-mirror.example.com",
    "model_weights_rsync_source": "rsync://cache.example.com/models/zai-org/GLM-5.3-mirror",
    "model_weights_copy_source": "/mnt/nfs2/models/zai-org/GLM-5.3",
    # node paths whose default is empty (unset): another is an absolute path (a relative one is refused)
    "model_weights_token_file": "/etc/metalserve/hf-token",
    "model_weights_tools_venv": "/opt/metalserve/hf-tools",
    "model_weights_fanout_group": "fanout",
    "monitoring_amd_exporter_image": "docker.io/rocm/device-metrics-exporter:v1.5.5",
    "monitoring_allowed_sources": ["10.20.0.0/24"],
    "monitoring_alertmanagers": ["10.0.0.30:9093"],
    "nvidia_driver_branch": 575,
    "nvidia_driver_version": "580.95.05",
    "nvidia_driver_flavor": "proprietary",
    "nvidia_driver_repo_base_url": "https://mirror.example.com/cuda/repos",
    "nvidia_driver_repo_key_url": "https://mirror.example.com/cuda/key.pub",
    "nvidia_driver_repo_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
    "nvidia_driver_imex_address": "10.9.9.9",
    "rdma_stack": "doca",
    "rdma_doca_version": "3.2.0",
    "rdma_doca_repo_url": "https://mirror.example.com/doca/",
    "rdma_doca_key_url": "https://mirror.example.com/doca/key.pub",
    "rdma_peermem": True,
    "rocm_driver_version": "7.2.3",
    "rocm_driver_rocm_repo_url": "https://mirror.example.com/rocm/apt/{dir}",
    "rocm_driver_graphics_repo_url": "https://mirror.example.com/graphics/{dir}/ubuntu",
    "rocm_driver_amdgpu_repo_url": "https://mirror.example.com/amdgpu/{driver}/ubuntu",
    "rocm_driver_repo_key_url": "https://mirror.example.com/rocm.gpg.key",
    "rocm_driver_repo_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
    "sglang_install_router_version": "0.3.1",
    "sglang_install_index_url": "https://pypi.example.com/simple",
    "sglang_install_extra_index_urls": ["https://extra.example.com/simple"],
    "sglang_install_find_links": ["/srv/wheels"],
    "sglang_install_registry_mirror": "registry.example.com:5000/",
    "sglang_install_registry_url": "registry.example.com:5000",
    "sglang_install_registry_username": "puller",
    "sglang_server_health_timeout": 1500,
    "sglang_server_hardening": ["NoNewPrivileges=yes", "ProtectClock=yes"],
    "sglang_router_service_hardening": ["NoNewPrivileges=yes", "ProtectClock=yes"],
    "sglang_server_after_units": ["openibd.service"],
    "sglang_server_timeout_start": 2400,
    # the GPUs a node must show lie between what its servers use and what it has (site/weights_inputs.py)
    "node_acceptance_expected_gpus": 4,
}
# settings an option only works with (set in both renders)
CONTEXT: dict[str, dict[str, Any]] = {
    "container_runtime_docker_repo_url": {"container_runtime_docker_source": "docker"},
    "container_runtime_docker_key_url": {"container_runtime_docker_source": "docker"},
    "model_weights_rsync_source": {"model_weights_source": "rsync",
                                   "model_weights_rsync_source": "rsync://cache.example.com/models/zai-org/GLM-5.3"},
    "model_weights_copy_source": {"model_weights_source": "copy",
                                  "model_weights_copy_source": "/mnt/nfs/models/zai-org/GLM-5.3"},
    "rdma_doca_version": {"rdma_stack": "doca"},
    "rdma_doca_repo_url": {"rdma_stack": "doca"},
    "rdma_doca_key_url": {"rdma_stack": "doca"},
    "rdma_doca_packages": {"rdma_stack": "doca"},
    # a site's own key only with a mirror it re-signed (site/stage_inputs.py: never NVIDIA's or AMD's repository)
    "nvidia_driver_repo_key_fingerprint": {"nvidia_driver_repo_base_url": "https://mirror.example.com/cuda/repos",
                                           "nvidia_driver_repo_key_url": "https://mirror.example.com/cuda/key.pub"},
    "rocm_driver_repo_key_fingerprint": {
        "rocm_driver_rocm_repo_url": "https://mirror.example.com/rocm/apt/{dir}",
        "rocm_driver_graphics_repo_url": "https://mirror.example.com/graphics/{dir}/ubuntu",
        "rocm_driver_amdgpu_repo_url": "https://mirror.example.com/amdgpu/{driver}/ubuntu",
        "rocm_driver_repo_key_url": "https://mirror.example.com/rocm.gpg.key"},
    # an offline node stages its weights from inside the site, never from the Hub (site/weights_inputs.py)
    "sglang_install_offline": {"model_weights_source": "copy",
                               "model_weights_copy_source": "/mnt/nfs/models/zai-org/GLM-5.3"},
    # another count than the 8 its servers use needs a node with more GPUs than that (a platform of 16)
    "rocm_driver_expected_gpus": {"sglang_gpu_platforms": {"mi355x": {"gpus_per_node": 16}}},
}
# options that belong to some hosts only (a rack's group_vars): the context and the value go to these hosts alone
ONLY: dict[str, list[str]] = {
    "model_weights_rsync_source": ["h1"], "model_weights_copy_source": ["h1"], "model_weights_fanout_group": ["h1"],
    "nvidia_driver_flavor": ["h1"], "nvidia_driver_imex_group": ["g1", "g2"], "nvidia_driver_imex_address": ["g1"],
    "rdma_peermem": ["b1", "b2"], "sglang_install_offline": ["h1"],
    "node_acceptance_expected_gpus": ["g1", "g2"], "rocm_driver_expected_gpus": ["a1"],
    # memlock stays unlimited on networked servers (site/runtime_inputs.py); h1 serves alone
    "rdma_memlock_unlimited": ["h1"],
}


@functools.lru_cache(maxsize=1)
def specs() -> dict[str, dict[str, dict[str, Any]]]:
    out = {}
    for path in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = path.parent.parent.name
        out[role] = yaml.safe_load(path.read_text())["argument_specs"]["main"]["options"]
    return out


def options() -> list[tuple[str, str]]:
    skip = runtime.converge_only()
    return [(role, name) for role, opts in specs().items() if role not in ARGUMENT_ROLES
            for name, opt in opts.items() if name not in skip and not opt.get("no_log")]


def other_value(role: str, name: str) -> Any:
    if name in VALUES:
        return VALUES[name]
    opt = specs()[role][name]
    default, kind = opt.get("default"), opt.get("type", "str")
    if opt.get("choices"):
        return next(c for c in opt["choices"] if c != default)
    if kind == "bool":
        return not default
    if kind == "int":
        return int(default) + 7
    if kind == "float":
        return float(default) + 0.05
    if kind == "list":
        return list(default or []) + ([f"{name}-extra"] if opt.get("elements", "str") == "str" else [])
    if kind == "path":
        return str(default).rstrip("/") + "-other"
    if isinstance(default, str) and default and "{{" not in default:
        return default + "-other"
    raise AssertionError(f"{role}/{name}: no other value for a {kind} defaulting to {default!r}; add one to VALUES")


def hostvars(method: str) -> dict[str, dict[str, Any]]:
    def node(ip: str, **values: Any) -> dict[str, Any]:
        facts = {**FACTS, "default_ipv4": {"address": ip, "interface": "eth0"}}
        if values.get("sglang_nodes") or values.get("sglang_pd"):
            facts["metalserve_fabric"] = FABRIC
        out = {"ansible_host": ip, "ansible_facts": facts, **values}
        # AMD nodes run the ROCm image in both sites (PyPI's SGLang wheels are CUDA builds: uv is refused there)
        if method == "uv" and values.get("sglang_role", "server") != "none" and values.get("sglang_gpu") != "mi355x":
            out["sglang_install_method"] = "uv"
        return out
    return {
        "h1": node("10.0.1.1", **H200, sglang_model_path="/nvme/models/zai-org/GLM-5.3"),
        "h2": node("10.0.1.2", **H200),  # loads the hub id (its weights are SGLang's to fetch)
        "b1": node("10.0.2.1", **PAIR), "b2": node("10.0.2.2", **PAIR),
        "g1": node("10.0.3.1", **GB300), "g2": node("10.0.3.2", **GB300),
        "a1": node("10.0.4.1", sglang_gpu="mi355x", sglang_quant="fp8", sglang_strategy="balanced",
                   sglang_model_path="/nvme/models/zai-org/GLM-5.3"),
        "p1": node("10.0.5.1", **PD, sglang_pd={"role": "prefill"}),
        "d1": node("10.0.5.2", **PD, sglang_pd={"role": "decode"}),
        "r1": node("10.0.9.1", sglang_role="router", sglang_router_workers_group="pd"),
        "mon": node("10.0.9.20", sglang_role="none"),
    }


GROUPS = {"all": ["a1", "b1", "b2", "d1", "g1", "g2", "h1", "h2", "mon", "p1", "r1"], "pair": ["b1", "b2"],
          "nvl": ["g1", "g2"], "nvl2": ["g1", "g2"], "pd": ["d1", "p1"], "fanout": ["h1"], "monitoring": ["mon"]}


@functools.lru_cache(maxsize=None)
def rendered(method: str, settings: str, hosts: tuple[str, ...] = ()) -> dict[str, tuple[str, str]]:
    hv = hostvars(method)
    extra = yaml.safe_load(settings)
    for host in hosts or tuple(hv):
        hv[host].update(copy.deepcopy(extra))
    site = plan_site(hv, copy.deepcopy(GROUPS))
    assert not site["errors"], f"{method} site with {extra}: {site['errors']}"
    return render.render_all(site["plans"], "test", site_monitoring=site["monitoring"])


def test_the_base_sites_plan_and_render() -> None:
    for method in ("docker", "uv"):
        files = rendered(method, "{}")
        assert any(path.endswith("driver.yml") for path in files)
        assert any("/files/etc/systemd/system/sglang-" in path for path in files)


@pytest.mark.parametrize(("role", "name"), options(), ids=lambda v: v)
def test_option_changes_what_a_node_gets(role: str, name: str) -> None:
    context = CONTEXT.get(name, {})
    hosts = tuple(ONLY.get(name, ()))
    changed = []
    for method in ("docker", "uv"):
        before = rendered(method, yaml.safe_dump(context, sort_keys=True), hosts)
        after = rendered(method, yaml.safe_dump({**context, name: other_value(role, name)}, sort_keys=True), hosts)
        if before != after:
            changed.append(method)
            break  # one site where it reaches the nodes is enough
    assert changed, (f"{name} ({role}) changes nothing in rendered/ in a docker or a uv site; make it reach the plan, or "
                     f"declare it converge_only (with the reason) in roles/{role}/meta/variables.yml")
