"""Unit files, environment files and docker commands for every recipe family and install method."""
from __future__ import annotations

import configparser

import pytest

from ansible_collections.metalserve.sglang.plugins.module_utils import serving_units as su
from ansible_collections.metalserve.sglang.plugins.module_utils.placement import host_plan
from ansible_collections.metalserve.sglang.plugins.module_utils.recipe_errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.module_utils.render_files import unit_settings

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
