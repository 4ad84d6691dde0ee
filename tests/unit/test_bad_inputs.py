"""The bad-input matrix (tests/bad_inputs.yml): every mistake gives its own clear message.

plan: the placement/recipe engine the plan action runs, then the site checker over the files it renders; warning: the
same, for what the plan accepts with a warning; argspec: Ansible's ArgumentSpecValidator on the
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

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import placement
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
    for group, values in sorted((case.get("group_vars") or {}).items()):  # under the hosts' own, as in Ansible
        for host in groups[group]:
            hostvars[host] = {**hostvars[host], **values, **(case["hosts"][host] or {})}
    return hostvars, groups, case.get("host") or next(iter(case["hosts"]))


def origins(case: dict[str, Any]) -> dict[str, dict[str, list[str]]] | None:
    """Where each variable of a case with `group_vars` was set, as inventory_vars.variable_origins tells the plan
    (groups in the order Ansible applies them, then the host); None (inferred from the values) for the others."""
    if not case.get("group_vars"):
        return None
    hostvars, groups, _host = site(case)
    out: dict[str, dict[str, list[str]]] = {h: {} for h in hostvars}
    for group, values in sorted(case["group_vars"].items()):
        for host in groups[group]:
            for name in values:
                out[host].setdefault(name, []).append(group)
    for host, values in case["hosts"].items():
        for name in values or {}:
            out[host].setdefault(name, []).append(f"host {host}")
    for host in hostvars:
        for name in (set(hostvars[host]) - set(out[host])):
            out[host][name] = ["all"]
    return out


def ids(layer: str) -> list[str]:
    return [c["id"] for c in MATRIX[layer]]


def test_the_matrix_is_big_enough_and_ids_are_unique() -> None:
    every = [c["id"] for layer in MATRIX.values() for c in layer]
    assert len(every) >= 40
    assert len(every) == len(set(every))


def plan_problems(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]], host: str,
                  where: dict[str, dict[str, list[str]]] | None = None) -> list[str]:
    """A host's problems as render.yml and site.yml report them: the plan's, or, when the whole site plans, the site
    checker's over the files the nodes would get (checks/site.py)."""
    return site_plan.plan_site(hostvars, groups, where)["errors"].get(host, [])


@pytest.mark.parametrize("case", MATRIX["plan"], ids=ids("plan"))
def test_plan_refuses(case: dict[str, Any]) -> None:
    hostvars, groups, host = site(case)
    problems = plan_problems(hostvars, groups, host, origins(case))
    assert problems, f"{host} was planned without a problem"
    text = "\n".join(problems)
    assert re.search(case["expect"], text, re.M), text


#: the selection of the cell itself (and its release): a mistake there leaves no command to judge the rest against
CELL_KEYS = {"sglang_gpu", "sglang_strategy", "sglang_quant", "sglang_model", "sglang_nodes", "sglang_version",
             "sglang_image", "sglang_install_method", "sglang_cookbook_revision", "sglang_recipes",
             "sglang_gpu_platforms"}


def recipe_cases() -> list[dict[str, Any]]:
    """The matrix's one-host cases that set only the recipe engine's own inputs (data/variables.yml `recipe` variables
    with a key), not the cell, and give one message."""
    engine_inputs = {n for n, spec in CATALOG.variables["recipe"].items() if "key" in spec} - CELL_KEYS
    out = []
    for case in MATRIX["plan"]:
        if set(case) - {"id", "hosts", "expect"} or list(case["hosts"]) != ["n"]:
            continue
        if not set(case["hosts"]["n"]) <= engine_inputs:
            continue
        hostvars, groups, host = site(case)
        if len(plan_problems(hostvars, groups, host)) == 1 and engine_refuses(hostvars[host], case["expect"]):
            out.append(case)
    return out


def engine_refuses(hostvars: dict[str, Any], expect: str) -> bool:
    """The recipe engine itself gives the case's message (not the stages or the site checker after it)."""
    try:
        recipe_engine.build(placement.selection_of(hostvars))
    except RecipeError as exc:
        return bool(re.search(expect, str(exc), re.M))
    return False


def packed(cases: list[dict[str, Any]], size: int = 4) -> list[list[dict[str, Any]]]:
    """Cases packed into groups that set different variables and do not name each other's (a model path and a flag
    that contradicts it are one story, not two mistakes)."""
    groups: list[list[dict[str, Any]]] = []
    for case in cases:
        keys = set(case["hosts"]["n"])
        for group in groups:
            theirs = {k for c in group for k in c["hosts"]["n"]}
            named = any(k in c["expect"] for c in group for k in keys) or any(k in case["expect"] for k in theirs)
            if len(group) < size and not keys & theirs and not named:
                group.append(case)
                break
        else:
            groups.append([case])
    return [g for g in groups if len(g) > 1]


def test_every_recipe_mistake_of_a_host_is_named_at_once() -> None:
    """One host with several mistakes of the matrix at once gets every message the matrix pins for each alone."""
    groups = packed(recipe_cases())
    assert sum(len(g) for g in groups) >= 30, "the matrix has fewer recipe mistakes than this test was written for"
    for group in groups:
        hostvars = {"n": {**BASE, **{k: v for c in group for k, v in c["hosts"]["n"].items()}}}
        text = "\n".join(plan_problems(hostvars, {"all": ["n"]}, "n"))
        missing = [c["id"] for c in group if not re.search(c["expect"], text, re.M)]
        assert not missing, f"{[c['id'] for c in group]}: {missing} not said in:\n{text}"


@pytest.mark.parametrize("case", MATRIX["warning"], ids=ids("warning"))
def test_plan_warns(case: dict[str, Any]) -> None:
    """What the plan accepts with a warning: the host plans, and says so."""
    hostvars, groups, host = site(case)
    planned = site_plan.plan_site(hostvars, groups, origins(case))
    assert host not in planned["errors"], planned["errors"][host]
    text = "\n".join(planned["plans"][host]["warnings"])
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
