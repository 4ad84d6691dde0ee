"""Unit files, environment files and docker commands for every recipe family and install method."""
from __future__ import annotations

import configparser

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import units as su
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.placement import host_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.render import unit_settings

SETTINGS = unit_settings("sglang_server")
FAMILIES = {
    "h200-fp8": {"sglang_gpu": "h200", "sglang_quant": "fp8"},
    "b300-nvfp4": {"sglang_gpu": "b300", "sglang_quant": "nvfp4", "sglang_strategy": "low-latency"},
    "gb300-fp8": {"sglang_gpu": "gb300", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"},
    "mi355x-fp8": {"sglang_gpu": "mi355x", "sglang_quant": "fp8"},
}


def runtime(method: str, **extra: object) -> dict:
    base = {"method": method, "sglang": "/opt/sglang/venvs/0.5.23/bin/sglang", "python": "/opt/sglang/venvs/0.5.23/bin/python",
            "image": "registry.local/lmsysorg/sglang@sha256:" + "a" * 64, "image_id": "sha256:" + "b" * 64,
            "env_file": "/etc/sglang/glm-5.3.env", "secrets_config": "", "hf_cache": "/var/lib/sglang/hf-cache",
            "rdma": False}
    return {**base, **extra}


def parse(unit: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str  # type: ignore[assignment,method-assign]
    cp.read_string(unit.replace("\\\n", " "))
    return cp


def exec_argv(unit: str) -> list[str]:
    return parse(unit)["Service"]["ExecStart"].split()


@pytest.mark.parametrize("method", ["uv", "docker"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_unit_for_every_family_and_method(family: str, method: str) -> None:
    plan = host_plan("n", {"n": {**FAMILIES[family], "sglang_model_path": "/nvme/glm"}}, {})
    unit = su.server_unit(plan, runtime(method), SETTINGS)
    service = parse(unit)["Service"]
    argv = exec_argv(unit)
    assert argv[-len(plan["argv"]):] == plan["argv"]  # the plan's argv, untouched, ends ExecStart
    assert service["Restart"] == "on-failure" and service["LimitMEMLOCK"] == "infinity"
    assert service["TimeoutStartSec"] == "1800" and service["EnvironmentFile"] == "/etc/sglang/glm-5.3.env"
    assert "$MAINPID" in service["ExecStartPost"] and "/health" in service["ExecStartPost"]
    amd = family.startswith("mi")
    if method == "uv":
        assert argv[:2] == ["/opt/sglang/venvs/0.5.23/bin/sglang", "serve"]
        assert service["User"] == "sglang" and service["NoNewPrivileges"] == "yes"
        assert ("SupplementaryGroups" in service) is amd
    else:
        assert argv[:6] == ["/usr/bin/docker", "run", "--rm", "--name", "sglang-glm-5.3", "--env-file"]
        assert ("--gpus" in argv) is (not amd) and ("--device=/dev/kfd" in argv) is amd
        assert argv[argv.index("-p") + 1] == "30000:30000" and "--network=host" not in argv
        assert "/nvme/glm:/nvme/glm:ro" in argv
        assert "User" not in service and service["ExecStop"].endswith("sglang-glm-5.3")
        assert "metalserve.image-id=sha256:" + "b" * 64 in argv


def test_docker_pd_and_multinode_use_the_host_network_and_the_hcas() -> None:
    pd = host_plan("p", {"p": {"sglang_gpu": "h200", "sglang_pd": {"role": "prefill"}},
                         "r": {"sglang_role": "router", "sglang_router_workers_group": "g"},
                         "d": {"sglang_gpu": "h200", "sglang_pd": {"role": "decode"}}}, {"g": ["p", "d"]})
    argv = su.docker_run(pd, runtime("docker", rdma=True))
    assert "--network=host" in argv and "-p" not in argv
    assert argv[argv.index("--device") + 1] == "/dev/infiniband" and "IPC_LOCK" in argv
    assert "-v" in argv and "/var/lib/sglang/hf-cache:/root/.cache/huggingface" in argv  # a hub id: the cache
    amd = host_plan("a", {"a": {"sglang_gpu": "mi355x", "sglang_nodes": 1, "sglang_pd": {"role": "decode"}},
                          "r": {"sglang_role": "router", "sglang_router_workers_group": "g"},
                          "p": {"sglang_gpu": "mi355x", "sglang_pd": {"role": "prefill"}}}, {"g": ["a", "p"]})
    assert "stack=67108864" in su.docker_run(amd, runtime("docker", rdma=True))


def test_only_the_head_waits_for_health() -> None:
    pair = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_nodes": 2, "sglang_instance_group": "g"}
    hostvars, groups = {"a": pair, "b": pair}, {"g": ["a", "b"]}
    assert "ExecStartPost" in su.server_unit(host_plan("a", hostvars, groups), runtime("uv"), SETTINGS)
    assert "ExecStartPost" not in su.server_unit(host_plan("b", hostvars, groups), runtime("uv"), SETTINGS)


def test_api_key_goes_through_a_config_file_path() -> None:
    plan = host_plan("n", {"n": {"sglang_gpu": "h200", "sglang_api_key": "sk-never-in-a-unit"}}, {})
    unit = su.server_unit(plan, runtime("uv", secrets_config="/etc/sglang/glm-5.3.secrets.yaml"), SETTINGS)
    assert exec_argv(unit)[-2:] == ["--config", "/etc/sglang/glm-5.3.secrets.yaml"]
    assert "sk-never-in-a-unit" not in unit and plan["api_key"] is True


def test_systemd_quoting() -> None:
    assert su.systemd_quote("--port") == "--port"
    assert su.systemd_quote("50%") == "50%%"
    assert su.systemd_quote('{"a": 1}') == '"{\\"a\\": 1}"'
    assert su.systemd_quote("$HOME") == '"$$HOME"'


def test_env_file() -> None:
    text = su.env_file({"NCCL_IB_GID_INDEX": "3", "A": "x y"}, "hdr")
    assert text == "# hdr\nA=x y\nNCCL_IB_GID_INDEX=3\n"
    with pytest.raises(RecipeError, match="'1BAD' is not an environment variable name"):
        su.env_file({"1BAD": "x"}, "hdr")
    with pytest.raises(RecipeError, match="values cannot hold newlines"):
        su.env_file({"A": "x\ny"}, "hdr")


def test_router_units() -> None:
    hostvars = {"p": {"sglang_gpu": "h200", "sglang_pd": {"role": "prefill"}, "ansible_host": "10.0.0.1"},
                "d": {"sglang_gpu": "h200", "sglang_pd": {"role": "decode"}, "ansible_host": "10.0.0.2"},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "g"}}
    plan = host_plan("r", hostvars, {"g": ["p", "d"]})
    uv = su.router_unit(plan, {"method": "uv", "python": "/opt/sglang/current/bin/python"}, unit_settings("sglang_router"))
    argv = exec_argv(uv)
    assert argv[:3] == ["/opt/sglang/current/bin/python", "-m", "sglang_router.launch_router"]
    assert argv[3:] == plan["argv"] and "http://10.0.0.2:30100" in argv
    docker = su.router_unit(plan, {"method": "docker", "image": "lmsysorg/sglang:latest"}, unit_settings("sglang_router"))
    assert exec_argv(docker)[:8] == ["/usr/bin/docker", "run", "--rm", "--name", "sglang-router", "--network=host",
                                     "lmsysorg/sglang:latest", "python3"]


def _majors(proc_devices: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for line in proc_devices.split("Block devices:")[0].splitlines()[1:]:
        if line.strip():
            major, name = line.split(None, 1)
            out.setdefault(int(major), set()).add(name.strip())
    return out


def test_device_allowlist_covers_every_gpu_and_rdma_node_of_a_real_h200() -> None:
    """Every /dev/nvidia* and /dev/infiniband/* node of the captured H200 is allowed by name or path."""
    from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES
    capture = FIXTURES / "nvidia" / "h200-x1-devices"
    majors = _majors((capture / "proc-devices.txt").read_text())
    lines = su.device_allowlist("nvidia", rdma=True)
    assert lines[0] == "DevicePolicy=closed"
    allowed = {line.split("=", 1)[1].rsplit(" ", 1)[0] for line in lines[1:]}
    nodes = [ln.split() for ln in (capture / "dev-nodes.txt").read_text().splitlines() if ln.startswith("c")]
    assert len(nodes) >= 6
    for fields in nodes:
        major, path = int(fields[4].rstrip(",")), fields[-1]
        by_name = {f"char-{name}" for name in majors[major]} & allowed
        assert by_name or path in allowed, f"{path} (major {major}: {majors[major]}) is not allowed"
    assert "char-misc" not in allowed  # rdma_cm is allowed by path, not the whole misc class
    assert not any("kfd" in a or "drm" in a for a in allowed)


def test_amd_units_allow_kfd_and_dri_only() -> None:
    lines = su.device_allowlist("amd", rdma=False)
    assert lines == ["DevicePolicy=closed", "DeviceAllow=char-kfd rw", "DeviceAllow=char-drm rw"]


def test_docker_servers_get_the_token_as_a_mounted_file_not_in_their_environment() -> None:
    """`docker inspect` shows a container's environment (Config.Env) to anyone with the socket."""
    plan = host_plan("n", {"n": {**FAMILIES["h200-fp8"], "sglang_hf_token": "hf_x", "sglang_install_method": "docker"}},
                     {"all": ["n"]})
    argv = su.docker_run(plan, runtime("docker", hf_token_file="/etc/sglang/glm-5.3.hf_token"))
    assert "/etc/sglang/glm-5.3.hf_token:/run/secrets/hf_token:ro" in argv
    assert not [a for a in argv if "hf_x" in a]
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.render import assumed_runtime
    assert assumed_runtime(plan)["hf_token_file"] == "/etc/sglang/glm-5.3.hf_token"
    uv = host_plan("n", {"n": {**FAMILIES["h200-fp8"], "sglang_hf_token": "hf_x", "sglang_install_method": "uv"}},
                   {"all": ["n"]})
    assert assumed_runtime(uv)["hf_token_file"] == ""
