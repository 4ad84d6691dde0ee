"""The bad-input matrix (tests/bad_inputs.yml): every mistake gives its own clear message.

plan: the placement/recipe engine the plan action runs, then the site checker over the files it renders; argspec: Ansible's ArgumentSpecValidator on the
role's meta/argument_specs.yml (what site.yml's first play runs); preflight: the checks on node facts.
The parser layer needs SGLang and runs in tests/slow/test_bad_inputs_parser.py.
"""
from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.metalserve.sglang.plugins.module_utils import gpu_probe

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import preflight as pc
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.tests.helpers import REAL_X2, ROOT, SYNTH_X8, raw_from_capture

MATRIX = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text())
BASE = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}
CATALOG = load_catalog()


def site(case: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]], str]:
    hostvars = {h: ({} if case.get("bare") else dict(BASE)) | (v or {}) for h, v in case["hosts"].items()}
    groups = {"all": sorted(hostvars), **(case.get("groups") or {})}
    return hostvars, groups, case.get("host") or next(iter(case["hosts"]))


def ids(layer: str) -> list[str]:
    return [c["id"] for c in MATRIX[layer]]


def test_the_matrix_is_big_enough_and_ids_are_unique() -> None:
    every = [c["id"] for layer in MATRIX.values() for c in layer]
    assert len(every) >= 40
    assert len(every) == len(set(every))


def plan_problems(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]], host: str) -> list[str]:
    """A host's problems as render.yml and site.yml report them: the plan's, or, when the whole site plans, the site
    checker's over the files the nodes would get (checks/site.py)."""
    return site_plan.plan_site(hostvars, groups)["errors"].get(host, [])


@pytest.mark.parametrize("case", MATRIX["plan"], ids=ids("plan"))
def test_plan_refuses(case: dict[str, Any]) -> None:
    hostvars, groups, host = site(case)
    problems = plan_problems(hostvars, groups, host)
    assert problems, f"{host} was planned without a problem"
    text = "\n".join(problems)
    assert re.search(case["expect"], text, re.M), text


def role_spec(role: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())[
        "argument_specs"]["main"]["options"]


@pytest.mark.parametrize("case", MATRIX["argspec"], ids=ids("argspec"))
def test_argument_specs_refuse(case: dict[str, Any]) -> None:
    validator = ArgumentSpecValidator(role_spec(case["role"]))
    result = validator.validate(dict(case["vars"]), validate_role_argument_spec=True)
    text = "\n".join(result.error_messages)
    assert re.search(case["expect"], text), text


def test_argument_specs_accept_the_defaults() -> None:
    """The validator is not refusing everything: each role's own defaults pass."""
    for role in sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists()):
        spec = role_spec(role)
        given = {k: v["default"] for k, v in spec.items() if "default" in v}
        assert ArgumentSpecValidator(spec).validate(given, validate_role_argument_spec=True).error_messages == [], role


def node_shapes() -> dict[str, dict[str, Any]]:
    x2 = gpu_probe.compose(raw_from_capture(REAL_X2), CATALOG.gpus)
    x8 = gpu_probe.compose(raw_from_capture(SYNTH_X8), CATALOG.gpus)
    no_fm = copy.deepcopy(x8)
    no_fm["nvswitch"] = {"pci_count": 4, "present": True}
    no_fm["fabric_manager"] = {**no_fm["fabric_manager"], "running": False}
    ib = {"device_count": 2, "active_ports": ["mlx5_0:1"], "memlock": {"soft": -1}, "resolved": {}}
    no_ib = {"device_count": 0, "active_ports": [], "memlock": {"soft": -1}, "resolved": {}}
    roomy = [{"mount": "/", "size_available": 4_000_000_000_000}]
    full = [{"mount": "/", "size_available": 2_000_000_000}]

    def shape(gpu: dict, fabric: dict, mounts: list) -> dict[str, Any]:
        return {"gpu": gpu, "fabric": fabric, "mounts": mounts, "weights_path": "/var/lib/sglang/glm",
                "weights_staged": False}
    return {"h200-x2": shape(x2, no_ib, roomy), "h200-x8": shape(x8, no_ib, roomy),
            "h200-x8-ib": shape(x8, ib, roomy), "h200-x8-no-fm": shape(no_fm, no_ib, roomy),
            "full-disk": shape(x8, no_ib, full), "no-gpu": shape(gpu_probe.compose({}, CATALOG.gpus), no_ib, roomy)}


@pytest.mark.parametrize("case", MATRIX["preflight"], ids=ids("preflight"))
def test_preflight_refuses(case: dict[str, Any]) -> None:
    shapes = node_shapes()
    hostvars, groups, host = site(case)
    facts = {h: shapes[name] for h, name in case["facts"].items()}
    report = pc.check_host(site_plan.host_plan(host, hostvars, groups), facts, CATALOG, pc.Limits())
    text = pc.report_text([report], {})
    assert report.problems, text
    assert re.search(case["expect"], text), text


def test_preflight_passes_a_good_node() -> None:
    """The same shapes pass when nothing is wrong, so the refusals above are about the mistake."""
    report = pc.check_host(site_plan.host_plan("n", {"n": dict(BASE)}, {"all": ["n"]}), {"n": node_shapes()["h200-x8"]},
                           CATALOG, pc.Limits())
    assert report.problems == []
