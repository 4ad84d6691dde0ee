"""metalserve.sglang.check_variables' logic (plugin_utils/checks/variables.py) against the roles' real
meta/argument_specs.yml and Ansible's own ArgumentSpecValidator: the refusals are Ansible's words, the test only
pins what Ansible says about each mistake and that every host's refusals end up in one message."""
from __future__ import annotations

import re

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))


def test_every_role_spec_is_found_in_the_collection() -> None:
    assert len(ROLES) >= 10
    for role in ROLES:
        assert variables.role_options(role), role


def test_an_unknown_role_is_named() -> None:
    with pytest.raises(ValueError, match="no_such_role"):
        variables.role_options("no_such_role")


def test_the_defaults_pass_every_spec() -> None:
    specs = {r: variables.role_options(r) for r in ROLES}
    defaults = {k: o["default"] for opts in specs.values() for k, o in opts.items() if "default" in o}
    assert variables.role_errors(specs, defaults) == {}


def test_a_wrong_choice_and_a_wrong_type_are_refused_in_ansibles_words() -> None:
    specs = {r: variables.role_options(r) for r in ("model_weights", "sglang_server")}
    found = variables.role_errors(specs, {"model_weights_source": "s3", "sglang_server_health_timeout": "soon"})
    assert re.search(r"value of model_weights_source must be one of: .*hf.*got: s3", found["model_weights"][0])
    assert re.search(r"sglang_server_health_timeout.* is of type str and we were unable to convert to int",
                     found["sglang_server"][0])


def test_only_the_roles_that_document_a_variable_judge_it() -> None:
    specs = {r: variables.role_options(r) for r in ("model_weights", "sglang_router")}
    assert set(variables.role_errors(specs, {"model_weights_source": "s3"})) == {"model_weights"}


def test_a_secret_never_reaches_the_message() -> None:
    secret = "hf_NOT_FOR_LOGS_0123456789"
    specs = {"sglang_server": variables.role_options("sglang_server")}
    # the token pasted into a neighbouring integer variable by mistake: Ansible quotes the value it could not convert
    found = variables.role_errors(specs, {"sglang_server_hf_token": secret, "sglang_server_health_timeout": secret})
    text = variables.failure_text({"gpu-01": found}, 1)
    assert "sglang_server_health_timeout" in text
    assert secret not in text


def test_values_that_cannot_be_templated_are_problems_not_crashes() -> None:
    def get(name: str) -> str:
        if name == "b":
            raise RuntimeError("'rack_vlan' is undefined\nmore detail")
        return "fine"
    values, broken = variables.read_values(["a", "b", "c"], lambda n: n != "c", get)
    assert values == {"a": "fine"}
    assert broken == {"b": "b could not be templated: it uses the undefined variable rack_vlan"}


def test_one_message_names_every_host_once_per_mistake() -> None:
    mistake = {"model_weights": ["value of model_weights_source must be one of: hf, rsync, copy, none, got: s3"]}
    text = variables.failure_text({"gpu-02": mistake, "gpu-01": mistake,
                                   "router-0": {"sglang_router": ["sglang_router_port: bad"]}}, 9)
    lines = text.splitlines()
    assert lines[0].startswith("the variables of 3 of 9 host(s)")
    assert lines[1:] == ["  model_weights: value of model_weights_source must be one of: hf, rsync, copy, none, got: s3"
                         " (on gpu-01, gpu-02)",
                         "  sglang_router: sglang_router_port: bad (on router-0)"]


def test_a_secret_that_cannot_be_templated_is_named_without_the_error_text() -> None:
    secret = "hf_{{ NOT_FOR_LOGS"

    def get(name: str) -> str:
        raise RuntimeError(f"template error while templating string: unexpected end. String: {secret}")
    names = ["sglang_server_hf_token", "sglang_port"]
    broken = variables.read_values(names, lambda n: True, get, {"sglang_server_hf_token"})[1]
    assert broken["sglang_server_hf_token"] == "sglang_server_hf_token could not be templated"
    assert secret in broken["sglang_port"]  # not a secret: the error's own words help


def test_a_templating_mistake_is_worded_the_same_by_the_check_and_the_plan() -> None:
    """The plan drops what the variable check already said by comparing the words, so they must be the same."""
    error = "'rack_port' is undefined"
    assert variables.templating_problem("sglang_port", error, variables.is_secret("sglang_port")) == \
        "sglang_port could not be templated: it uses the undefined variable rack_port"
    assert variables.templating_problem("sglang_hf_token", error, variables.is_secret("sglang_hf_token")) == \
        "sglang_hf_token could not be templated: it uses the undefined variable rack_port"


def test_a_roles_own_outputs_are_not_typos() -> None:
    specs = {r: variables.role_options(r) for r in ("model_weights", "node_acceptance")}
    assert "model_weights_result" in variables.role_outputs("model_weights")
    assert variables.unknown_names(["model_weights_result"], specs) == {}


def test_the_roles_mark_their_secrets_no_log() -> None:
    specs = {r: variables.role_options(r) for r in ROLES}
    assert {"sglang_server_hf_token", "sglang_server_api_key", "model_weights_hf_token"} <= variables.secret_names(specs)


@pytest.mark.parametrize("value", ["{{ rack_vlan }}", ["ok", "{% if x %}y{% endif %}"], {"a": {"b": "{{ c }}"}}])
def test_a_template_left_unrendered_is_a_problem_before_2_19(value: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """ansible-core before 2.19 hands an undefined variable's template back as text through hostvars; from 2.19 on
    the read fails instead, and a `{{` still there was meant literally."""
    monkeypatch.setattr(variables, "TEMPLATES_COME_BACK_AS_TEXT", True)
    values, broken = variables.read_values(["v"], lambda n: True, lambda n: value)
    assert values == {}
    assert "still holds a template" in broken["v"]
    monkeypatch.setattr(variables, "TEMPLATES_COME_BACK_AS_TEXT", False)
    assert variables.read_values(["v"], lambda n: True, lambda n: value) == ({"v": value}, {})


def test_a_likely_typo_of_a_role_variable_is_named_with_what_was_meant() -> None:
    specs = {r: variables.role_options(r) for r in ("model_weights", "rdma", "sglang_server", "nvidia_driver")}
    found = variables.unknown_names(["model_weights_revison", "rdma_vlan_of_another_role", "sglang_server_prot",
                                     "model_weights_source", "model_weight_source", "rack_vlan", "nvidia_driver_gpu",
                                     "_rdma_private", "monitoring_port"], specs)
    # the collection owns every prefix it ships: a name under one that the role does not read is refused, with its
    # nearest name or where the role's names are; a near miss of a prefix (model_weight_) is refused with the name
    # meant; a retired name is the plan's warning in the minor release that retired it and refused after
    # (retired_verdict); the site's own names (rack_vlan) and private ones are left alone; sglang_* names are the
    # plan's to judge
    # the expectation from the data and galaxy.yml, not from retired_verdict: refused once the minor release moved on
    entry = yaml.safe_load((ROOT / "data" / "variables.yml").read_text())["retired"]["nvidia_driver_gpu"]
    version = str(yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"])
    moved_on = tuple(map(int, version.split(".")[:2])) > tuple(map(int, entry["retired_in"].split(".")[:2]))
    retired = {"nvidia_driver": [f"nvidia_driver_gpu is retired (since {entry['retired_in']}): "
                                 f"{' '.join(entry['replacement'].split())}"]} if moved_on else {}
    assert found == {
        **retired,
        "model_weights": ["model_weight_source is not a variable of this collection; did you mean model_weights_source?",
                          "model_weights_revison is not a variable of model_weights (the collection owns the "
                          "model_weights_ prefix); did you mean model_weights_revision?"],
        "rdma": ["rdma_vlan_of_another_role is not a variable of rdma (the collection owns the rdma_ prefix); its "
                 "variables are listed in roles/rdma/README.md"]}


@pytest.mark.parametrize("token", ["hf_abcdefghijklmnop", "sk-ant-api03-TOPSECRET", "ghp_0123456789abcdefXYZ",
                                   "AKIAIOSFODNN7EXAMPLE"])
def test_token_shaped_values_are_masked_wherever_they_are_quoted(token: str) -> None:
    text = variables.redact(f"sglang_port: expected an integer, got str '{token}'")
    assert token not in text
    assert text.startswith("sglang_port: expected an integer, got str '")


def test_a_refusal_says_what_the_spec_wants() -> None:
    found = variables.role_errors({"sglang_server": variables.role_options("sglang_server")},
                                  {"sglang_server_health_timeout": "20m"})
    assert "(sglang_server_health_timeout wants int, default " in found["sglang_server"][0]


def test_a_secret_in_a_mistyped_value_is_not_quoted() -> None:
    """The operator trial's leak: sglang_env given as a list of NAME=VALUE items; the type error quoted the list, and
    a key of no known token shape (WANDB_API_KEY's) reached the log. A key in a plan path (hf_endpoint) is not a
    token and stays readable."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import coerce  # noqa: PLC0415
    wandb = "0a1b2c3d4e5f60718293a4b5c6d7e8f9WANDBSECRET"
    with pytest.raises(RecipeError) as err:
        coerce(["HF_TOKEN=hf_" + "x" * 34, f"WANDB_API_KEY={wandb}", "NCCL_DEBUG=INFO"], "dict", "sglang_env")
    text = variables.redact(str(err.value))
    assert wandb not in text and "hf_xxxx" not in text and "'NCCL_DEBUG=INFO'" in text, text
    assert "'WANDB_API_KEY=<hidden>'" in text
    assert variables.redact("at stages.weights.settings.hf_endpoint (from model_weights_hf_endpoint)") == \
        "at stages.weights.settings.hf_endpoint (from model_weights_hf_endpoint)"


def test_a_retired_name_warns_through_the_minor_release_that_retired_it_then_is_refused() -> None:
    """The policy of data/variables.yml `retired` against release numbers: the release that retires a name warns
    (naming its replacement), the next minor release refuses it."""
    doc = yaml.safe_load((ROOT / "data" / "variables.yml").read_text())["retired"]
    name, entry = next(iter(doc.items()))
    major, minor = (int(p) for p in entry["retired_in"].split(".")[:2])
    replacement = " ".join(entry["replacement"].split())
    level, text = variables.retired_verdict(name, f"{major}.{minor}.3")
    assert level == "warning" and replacement in text and f"From {major}.{minor + 1}.0" in text
    assert variables.retired_verdict(name, f"{major}.{minor + 1}.0") == (
        "error", f"{name} is retired (since {entry['retired_in']}): {replacement}")
    assert variables.retired_verdict("sglang_gpu", "9.9.9") is None
    # this checkout's own version (galaxy.yml) decides which one a run gives
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    assert variables.collection_version() == version
    assert variables.retired_verdict(name)[0] == ("warning" if tuple(int(p) for p in version.split(".")[:2]) <= (
        major, minor) else "error")
