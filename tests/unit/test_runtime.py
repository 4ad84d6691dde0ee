"""site/runtime.py: the install, unit settings and role-setting drift every node file is made from."""
from __future__ import annotations

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime
from ansible_collections.metalserve.sglang.tests.helpers import ROOT


def test_settings_take_the_inventory_over_the_role_defaults() -> None:
    s = runtime.settings({"sglang_server_restart_sec": "45", "sglang_server_firewall": "no"}, "sglang_server")
    assert s["sglang_server_restart_sec"] == 45 and s["sglang_server_firewall"] is False
    defaults = yaml.safe_load((ROOT / "roles" / "sglang_server" / "defaults" / "main.yml").read_text())
    assert s["sglang_server_timeout_start"] == defaults["sglang_server_timeout_start"]
    # a templated default (a secret taken from another variable) is never part of a plan
    assert "sglang_server_hf_token" not in s and "sglang_server_api_key" not in s


@pytest.mark.parametrize(("role", "name", "value"), [
    ("sglang_server", "sglang_server_restart_sec", "45"), ("sglang_server", "sglang_server_restart_sec", "soon"),
    ("sglang_server", "sglang_server_restart_sec", True), ("sglang_server", "sglang_server_restart_sec", 4.0),
    ("sglang_server", "sglang_server_firewall", "no"), ("sglang_server", "sglang_server_firewall", "maybe"),
    ("sglang_server", "sglang_server_firewall", 0), ("sglang_server", "sglang_server_user", 1000),
    ("sglang_server", "sglang_server_after_units", "a.service,b.service"),
    ("rdma", "rdma_peermem", True), ("rdma", "rdma_peermem", "auto"),
    ("container_runtime", "container_runtime_nvidia_toolkit", "false"),
    ("container_runtime", "container_runtime_daemon_json", '{"live-restore": true}'),
    ("container_runtime", "container_runtime_daemon_json", ["a"]),
    ("monitoring", "monitoring_node_exporter_port", "9101"), ("monitoring", "monitoring_allowed_sources", "10.0.0.0/8"),
])
def test_a_setting_is_read_as_its_roles_argument_spec_reads_it(role: str, name: str, value: object) -> None:
    """One coercion: the plan takes a role setting exactly as Ansible's validator of that role's argument spec does
    (the value it hands the role, or a refusal), whatever the setting's type."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: PLC0415

    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    result = ArgumentSpecValidator(spec["argument_specs"]["main"]["options"]).validate({name: value})
    if result.error_messages:
        with pytest.raises(RecipeError, match=f"^{name}: expected"):
            runtime.settings({name: value}, role)
    else:
        assert runtime.settings({name: value}, role)[name] == result.validated_parameters[name]


@pytest.mark.parametrize("image,mirror,pulled", [
    ("lmsysorg/sglang:latest", "", "lmsysorg/sglang:latest"),
    ("lmsysorg/sglang:latest", "registry.site:5000/", "registry.site:5000/lmsysorg/sglang:latest"),
    ("lmsysorg/sglang:latest", "registry.site:5000", "registry.site:5000/lmsysorg/sglang:latest"),
    ("docker.io/lmsysorg/sglang:latest", "mirror.site/dockerhub/", "mirror.site/dockerhub/lmsysorg/sglang:latest"),
])
def test_the_image_a_node_pulls_is_the_mirror_plus_the_image(image: str, mirror: str, pulled: str) -> None:
    assert runtime.mirrored(image, mirror) == pulled


@pytest.mark.parametrize("ref", ["lmsysorg/sglang", "lmsysorg/sglang:v0.5.23-cu129", "registry.site:5000/a/b:1",
                                 "lmsysorg/sglang@sha256:" + "a" * 64])
def test_image_references_docker_accepts(ref: str) -> None:
    runtime.check_image(ref, "sglang_image")


@pytest.mark.parametrize("ref", ["lmsysorg/sglang latest", "LMSYS/sglang", "lmsysorg/sglang@sha256:abc", ""])
def test_image_references_docker_refuses(ref: str) -> None:
    with pytest.raises(RecipeError, match="is not an image reference"):
        runtime.check_image(ref, "sglang_image")


def test_uv_installs_name_the_release_venv_and_docker_installs_the_mirrored_image() -> None:
    uv = runtime.install_spec({"sglang_install_root": "/srv/sglang/"}, "uv", "0.5.13.post1", None)
    assert uv["venv"] == "/srv/sglang/venvs/0.5.13.post1" and uv["sglang"] == "/srv/sglang/venvs/0.5.13.post1/bin/sglang"
    docker = runtime.install_spec({"sglang_install_registry_mirror": "r.site/"}, "docker", "0.5.23", "lmsysorg/sglang:x")
    assert docker["image"] == "r.site/lmsysorg/sglang:x" and docker["venv"] is None


def test_drift_names_what_a_play_set_that_the_inventory_did_not() -> None:
    planned = {"sglang_server_restart_sec": 30, "sglang_server_firewall": True, "sglang_install_root": "/opt/sglang"}
    assert runtime.drift(planned, ["30", "yes", None]) == []  # coerced alike; None: not visible in this role
    assert runtime.drift(planned, [5, True, None]) == [
        "sglang_server_restart_sec: this play gives 5 but the inventory, which the plan and render.yml read, gives 30; "
        "set sglang_server_restart_sec in group_vars, host_vars or with -e, not in a play's vars"]


def test_a_secret_setting_is_never_part_of_a_plan() -> None:
    """The secrets: what Ansible's argument specs mark no_log. A plan (printed by -v, kept in rendered/) names none."""
    planned = runtime.inputs({"sglang_install_registry_password": "reg-pass-1", "sglang_install_registry_username": "u"},
                             ("sglang_install", "sglang_server", "sglang_router"))
    assert "reg-pass-1" not in repr(planned) and planned["sglang_install_registry_username"] == "u"
    assert "sglang_install_registry_password" not in planned
    for role in ("sglang_install", "sglang_server", "sglang_router"):
        spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
        assert not [k for k, v in spec["argument_specs"]["main"]["options"].items() if v.get("no_log") and k in planned]
