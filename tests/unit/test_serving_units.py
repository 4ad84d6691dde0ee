"""Unit files, environment files and docker commands for every recipe family and install method.

The plan holds them (plan.files); these tests read them back and check what systemd and docker would see.
"""
from __future__ import annotations

import configparser
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import units as su
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

FAMILIES = {
    "h200-fp8": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"},
    "b300-nvfp4": {"sglang_gpu": "b300", "sglang_quant": "nvfp4", "sglang_strategy": "low-latency"},
    "gb300-fp8": {"sglang_gpu": "gb300", "sglang_quant": "fp8", "sglang_strategy": "high-throughput",
                  "nvidia_driver_imex_group": "all"},
    "mi355x-fp8": {"sglang_gpu": "mi355x", "sglang_quant": "fp8", "sglang_strategy": "balanced"},
}
FABRIC = {"ansible_facts": {"metalserve_fabric": {"uverbs_present": True, "devices": []}}}


def parse(unit: str) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str  # type: ignore[assignment,method-assign]
    cp.read_string(unit.replace("\\\n", " "))
    return cp


def exec_argv(unit: str) -> list[str]:
    return parse(unit)["Service"]["ExecStart"].split()


def one(host_vars: dict[str, Any]) -> dict[str, Any]:
    return host_plan("n", {"n": host_vars}, {"all": ["n"]})


@pytest.mark.parametrize("method", ["uv", "docker"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_unit_for_every_family_and_method(family: str, method: str) -> None:
    # an AMD uv venv is built from the site's own ROCm wheels (PyPI's are CUDA builds: refused without them)
    own = {"sglang_install_find_links": ["/srv/rocm-wheels"]} if method == "uv" and family.startswith("mi") else {}
    plan = one({**FAMILIES[family], "sglang_model_path": "/nvme/glm", "sglang_install_method": method, **own})
    unit = plan["files"]["unit"]["content"]
    service = parse(unit)["Service"]
    argv = exec_argv(unit)
    assert argv[-len(plan["argv"]):] == plan["argv"]  # the plan's argv, untouched, ends ExecStart
    assert service["Restart"] == "on-failure" and service["LimitMEMLOCK"] == "infinity"
    assert service["TimeoutStartSec"] == "1800" and service["EnvironmentFile"] == "/etc/sglang/glm-5.3.env"
    assert "$MAINPID" in service["ExecStartPost"] and "/health" in service["ExecStartPost"]
    amd = family.startswith("mi")
    release = plan["recipe"]["sglang_version"]
    if method == "uv":
        # the unit runs the venv of the very release the command was rendered for, which sglang_install builds
        assert argv[:2] == [f"/opt/sglang/venvs/{release}/bin/sglang", "serve"]
        assert plan["install"]["venv"] == f"/opt/sglang/venvs/{release}"
        assert service["ExecStartPost"].startswith(f"/opt/sglang/venvs/{release}/bin/python ")
        assert service["User"] == "sglang" and service["NoNewPrivileges"] == "yes"
        assert ("SupplementaryGroups" in service) is amd
    else:
        assert argv[:6] == ["/usr/bin/docker", "run", "--rm", "--name", "sglang-glm-5.3", "--env-file"]
        assert ("--gpus" in argv) is (not amd) and ("--device=/dev/kfd" in argv) is amd
        assert argv[argv.index("-p") + 1] == "30000:30000" and "--network=host" not in argv
        assert "/nvme/glm:/nvme/glm:ro" in argv and plan["install"]["image"] in argv
        assert "User" not in service and service["ExecStop"].endswith("sglang-glm-5.3")
        assert service["ExecStartPost"].startswith("/usr/bin/python3 ")


def test_the_registry_mirror_is_in_the_unit_and_the_install_alike() -> None:
    """One owner: the image a node pulls is the image its unit runs, and both are what render.yml shows."""
    plan = one({**FAMILIES["h200-fp8"], "sglang_install_registry_mirror": "registry.site:5000"})
    assert plan["install"]["image"] == "registry.site:5000/lmsysorg/sglang:latest"
    assert "registry.site:5000/lmsysorg/sglang:latest" in exec_argv(plan["files"]["unit"]["content"])
    with pytest.raises(RecipeError, match="sglang_install_registry_mirror: 'https://registry.site' is not a registry"):
        one({**FAMILIES["h200-fp8"], "sglang_install_registry_mirror": "https://registry.site"})


def test_a_release_other_than_the_pin_gets_its_own_venv_in_the_unit() -> None:
    plan = one({**FAMILIES["h200-fp8"], "sglang_install_method": "uv", "sglang_version": "0.5.13.post1"})
    assert plan["install"]["venv"] == "/opt/sglang/venvs/0.5.13.post1"
    assert exec_argv(plan["files"]["unit"]["content"])[0] == "/opt/sglang/venvs/0.5.13.post1/bin/sglang"


def test_docker_pd_and_multinode_use_the_host_network_and_the_hcas() -> None:
    ht = {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}
    pd = host_plan("p", {"p": {**ht, "sglang_pd": {"role": "prefill"}, **FABRIC},
                         "r": {"sglang_role": "router", "sglang_router_workers_group": "g"},
                         "d": {**ht, "sglang_pd": {"role": "decode"}}}, {"g": ["p", "d"]})
    argv = su.docker_run(pd)
    assert "--network=host" in argv and "-p" not in argv
    assert argv[argv.index("--device") + 1] == "/dev/infiniband" and "IPC_LOCK" in argv
    assert "-v" in argv and "/var/lib/sglang/hf-cache:/root/.cache/huggingface" in argv  # a hub id: the cache
    no_hca = host_plan("p", {"p": {**ht, "sglang_pd": {"role": "prefill"},
                                   "ansible_facts": {"metalserve_fabric": {"uverbs_present": False, "devices": []}}},
                             "r": {"sglang_role": "router", "sglang_router_workers_group": "g"},
                             "d": {**ht, "sglang_pd": {"role": "decode"}}}, {"g": ["p", "d"]})
    assert "/dev/infiniband" not in su.docker_run(no_hca)  # docker refuses a --device that does not exist
    mi = {"sglang_gpu": "mi355x", "sglang_strategy": "balanced"}
    amd = host_plan("a", {"a": {**mi, "sglang_nodes": 1, "sglang_pd": {"role": "decode"}, **FABRIC},
                          "r": {"sglang_role": "router", "sglang_router_workers_group": "g"},
                          "p": {**mi, "sglang_pd": {"role": "prefill"}}}, {"g": ["a", "p"]})
    assert "stack=67108864" in su.docker_run(amd)


def test_only_the_head_waits_for_health() -> None:
    pair = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
            "sglang_instance_group": "g", "sglang_install_method": "uv", "sglang_server_firewall": False}
    hostvars, groups = {"a": pair, "b": pair}, {"g": ["a", "b"]}
    assert "ExecStartPost" in host_plan("a", hostvars, groups)["files"]["unit"]["content"]
    assert "ExecStartPost" not in host_plan("b", hostvars, groups)["files"]["unit"]["content"]


def test_api_key_goes_through_a_config_file_path() -> None:
    plan = one({"sglang_gpu": "h200", "sglang_strategy": "high-throughput", "sglang_api_key": "sk-never-in-a-unit",
                "sglang_install_method": "uv"})
    unit = plan["files"]["unit"]["content"]
    assert exec_argv(unit)[-2:] == ["--config", "/etc/sglang/glm-5.3.secrets.yaml"]
    assert "sk-never-in-a-unit" not in repr(plan) and plan["api_key"] is True


def test_systemd_quoting() -> None:
    assert su.systemd_quote("--port") == "--port"
    assert su.systemd_quote("50%") == "50%%"
    assert su.systemd_quote('{"a": 1}') == '"{\\"a\\": 1}"'
    assert su.systemd_quote("$HOME") == '"$$HOME"'


def test_env_file_with_and_without_the_secret() -> None:
    plan = one({"sglang_gpu": "h200", "sglang_strategy": "high-throughput", "sglang_install_method": "uv", "sglang_hf_token": "hf_real",
                "sglang_env": {"NCCL_DEBUG": "WARN", "A": "x y"}})
    preview = plan["files"]["env"]["content"]
    assert preview.splitlines()[1:] == ["A=x y", "NCCL_DEBUG=WARN", "HF_TOKEN=<secret: sglang_hf_token>"]
    assert plan["files"]["env"]["mode"] == "0600" and "hf_real" not in preview
    filled = su.env_file(plan, {"HF_TOKEN": "hf_real"})
    assert filled == preview.replace("<secret: sglang_hf_token>", "hf_real")  # they differ only in the secret
    with pytest.raises(RecipeError, match="'1BAD' is not an environment variable name"):
        su.check_env({"1BAD": "x"})
    with pytest.raises(RecipeError, match="values cannot hold newlines"):
        su.check_env({"A": "x\ny"})


def test_router_units() -> None:
    ht = {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}
    hostvars = {"p": {**ht, "sglang_pd": {"role": "prefill"}, "ansible_host": "10.0.0.1"},
                "d": {**ht, "sglang_pd": {"role": "decode"}, "ansible_host": "10.0.0.2"},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "g", "sglang_install_method": "uv"}}
    plan = host_plan("r", hostvars, {"g": ["p", "d"]})
    argv = exec_argv(plan["files"]["unit"]["content"])
    assert argv[:3] == ["/opt/sglang/venvs/0.5.23/bin/python", "-m", "sglang_router.launch_router"]
    assert argv[3:] == plan["argv"] and "http://10.0.0.2:30100" in argv
    hostvars["r"].update(sglang_install_method="docker", sglang_install_registry_mirror="mirror.site/")
    docker = host_plan("r", hostvars, {"g": ["p", "d"]})
    assert docker["install"]["image"] == "mirror.site/lmsysorg/sglang:latest"
    assert exec_argv(docker["files"]["unit"]["content"])[:8] == [
        "/usr/bin/docker", "run", "--rm", "--name", "sglang-router", "--network=host",
        "mirror.site/lmsysorg/sglang:latest", "python3"]


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
    plan = one({**FAMILIES["h200-fp8"], "sglang_hf_token": "hf_x", "sglang_install_method": "docker"})
    argv = su.docker_run(plan)
    assert "/etc/sglang/glm-5.3.hf_token:/run/secrets/hf_token:ro" in argv
    assert not [a for a in argv if "hf_x" in a]
    assert "HF_TOKEN_PATH=/run/secrets/hf_token" in plan["files"]["env"]["content"]
    uv = one({**FAMILIES["h200-fp8"], "sglang_hf_token": "hf_x", "sglang_install_method": "uv"})
    assert not [a for a in su.server_argv(uv) if "hf_token" in a]


def test_gb300_containers_get_the_imex_channel_the_vendor_names_and_others_do_not() -> None:
    """The device path comes from the tests' vendor facts (NVIDIA's IMEX guide), not from data/."""
    channel = yaml.safe_load((ROOT / "tests" / "vendor" / "nvidia.yml").read_text())["imex"]["channel_device"]
    gb = one({**FAMILIES["gb300-fp8"], "sglang_install_method": "docker"})
    argv = su.docker_run(gb)
    assert argv[argv.index("--device") + 1] == channel
    h = one({**FAMILIES["h200-fp8"], "sglang_install_method": "docker"})
    assert channel not in su.docker_run(h)
    assert channel in gb["files"]["unit"]["content"]


def test_the_health_probe_asks_the_address_the_program_binds() -> None:
    """ExecStartPost's probe runs on the node: loopback when the program binds every address, else the one address
    it binds (a server bound to 10.20.1.11 does not answer on 127.0.0.1)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.units import probe_url  # noqa: PLC0415
    assert probe_url(["--host", "0.0.0.0", "--port", "30000"], 30000) == "http://127.0.0.1:30000/health"
    assert probe_url(["--port", "30000"], 30000) == "http://127.0.0.1:30000/health"
    assert probe_url(["--host", "10.20.1.11"], 30000) == "http://10.20.1.11:30000/health"
    assert probe_url(["--host", "::"], 8000) == "http://[::1]:8000/health"
    assert probe_url(["--host", "fd00::5"], 8000) == "http://[fd00::5]:8000/health"


def test_a_server_bound_to_its_own_address_plans_and_is_probed_there() -> None:
    """sglang_host set to the node's own address (an operator trial found it refused: the probe asked 127.0.0.1)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    site = plan_site({"n": {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "low-latency",
                            "sglang_install_method": "uv", "sglang_host": "10.0.0.5", "ansible_host": "10.0.0.5"}},
                     {"all": ["n"]})
    assert site["errors"] == {}
    plan = site["plans"]["n"]
    assert plan["health_url"] == "http://10.0.0.5:30000/health"
    assert "--url http://10.0.0.5:30000/health " in plan["files"]["unit"]["content"]


def test_an_imex_domain_firewall_admits_its_members_on_nvidias_ports() -> None:
    """The IMEX table of a two-tray domain: the ports from the tests' vendor facts (NVIDIA's IMEX guide), its header
    two comment lines (it was written one comment line per character of the domain's name)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    imex = yaml.safe_load((ROOT / "tests" / "vendor" / "nvidia.yml").read_text())["imex"]
    trays = {f"gb{i}": {**FAMILIES["gb300-fp8"], "ansible_host": f"10.0.0.{i}", "nvidia_driver_imex_address": f"10.0.0.{i}",
                        "nvidia_driver_imex_group": "rack1"} for i in (1, 2)}
    site = plan_site(trays, {"all": list(trays), "rack1": list(trays)})
    assert site["errors"] == {}
    text = site["plans"]["gb1"]["stages"]["driver"]["files"]["imex_firewall"]["content"]
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert len(comments) == 2 and "IMEX domain rack1" in comments[0], comments
    assert f"tcp dport {{ {imex['server_port']}, {imex['cmd_port']} }} ip saddr != @members_v4 drop" in text
    assert "elements = { 10.0.0.1, 10.0.0.2 }" in text


def test_an_image_that_names_no_vendor_is_not_called_cuda() -> None:
    """A site's own registry path or a digest says nothing of the vendor: the checker refuses only images that name
    the other vendor (an operator trial's mirrored ROCm image was refused as "a CUDA image")."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    for image in ("registry.internal/ml/sglang:prod-2026w20", "registry.internal/ml/sglang@sha256:" + "a" * 64):
        site = plan_site({"n": {**FAMILIES["mi355x-fp8"], "sglang_image": image, "sglang_version": "0.5.13.post1"}},
                         {"all": ["n"]})
        assert not [m for m in site["errors"].get("n", []) if "CUDA image" in m], (image, site["errors"])


def test_sglang_variables_are_typed_by_their_release() -> None:
    """The names and types come from SGLang 0.5.23's own environ.py (data/sglang/env-0.5.23.yml, generated from the
    wheel): an EnvInt named SGLANG_ENABLE_* and an EnvFloat named SGLANG_SKIP_* take numbers (a reviewer found a
    name-prefix rule refusing them), and an EnvBool takes true/false."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    for env in ({"SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_BUSY": "2"}, {"SGLANG_SKIP_SOFTMAX_DECODE_THRESHOLD_SCALE_FACTOR": "0.5"},
                {"SGLANG_ENABLE_JIT_DEEPGEMM": "false"}):
        site = plan_site({"n": {**FAMILIES["h200-fp8"], "sglang_strategy": "low-latency", "sglang_env": env}}, {"all": ["n"]})
        assert site["errors"] == {}, (env, site["errors"])


def test_a_host_left_in_two_racks_gets_a_word_and_a_canary_group_none() -> None:
    """Ansible merges a host's groups silently: a host in two racks' groups is warned about (which group set
    sglang_rack cannot be told from the merged variables, so a canary group of another rack's hosts must not be
    refused: a reviewer's case)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415
    racks = {"a1": "a", "a2": "a", "c1": "c", "c2": "c", "x": "c"}
    hv = {h: {**FAMILIES["h200-fp8"], "sglang_strategy": "low-latency", "sglang_rack": r,
              "ansible_host": f"10.0.0.{i + 1}"} for i, (h, r) in enumerate(racks.items())}
    site = plan_site(hv, {"all": list(hv), "rack_a": ["a1", "a2", "x"], "rack_c": ["c1", "c2", "x"]})
    assert site["errors"] == {}
    assert [w for w in site["plans"]["x"]["warnings"] if w.startswith("x is in two racks' groups: rack_a")], \
        site["plans"]["x"]["warnings"]
    assert not [w for h in ("a1", "c1") for w in site["plans"][h]["warnings"] if "two racks" in w]
