"""A variable set where nothing reads it (site/readers.py), judged against what the nodes get: rendered/.

The check decides from data (site.yml's plays, the roles' specs, `read_on`) whether a host reads a variable. The
oracle here is independent of that decision: the files render.yml writes for every host (plan_site + render_all, the
same text the roles write). On a representative host of each kind (an NVIDIA and an AMD server, a router, a monitoring
host; docker and uv installs), every variable the check calls unread there is set at once to another value: if the
check is right, not one rendered file of the site changes and the plan refuses nothing new; and the check refuses each
of them when the host itself sets it. A variable that `read_on` narrows to some kinds of host is set, alone, on a host
of such a kind: something rendered changes there (it does act where the check says it does).
"""
from __future__ import annotations

import copy
import functools
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import readers, render, runtime
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.tests.helpers import ROOT
from ansible_collections.metalserve.sglang.tests.unit import test_option_effects as effects

#: the host of each kind the check is tried on, per install method of the site (test_option_effects' sites)
HOSTS = {"docker": ["h1", "a1", "r1", "mon"], "uv": ["h1", "r1"]}


@functools.lru_cache(maxsize=1)
def data_variables() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((ROOT / "data" / "variables.yml").read_text())
    return {n: s for section in readers.SECTION_READERS for n, s in doc[section].items()}


def other(name: str) -> Any:
    """Another value of a variable: a role option's from its spec (test_option_effects), an inventory variable's
    from its type."""
    for role, options in effects.specs().items():
        if name in options:
            if options[name].get("no_log"):
                return "hf_" + "x" * 30
            try:
                return effects.other_value(role, name)
            except AssertionError:
                return None
    spec = data_variables()[name]
    kind, default = spec["type"], spec.get("default")
    if spec.get("choices"):
        return next(c for c in spec["choices"] if c != default)
    return {"int": 7, "bool": not default, "list": ["--other"], "dict": {"other": 1}}.get(kind, "other-value")


@functools.lru_cache(maxsize=1)
def judged() -> tuple[str, ...]:
    skip = runtime.converge_only()
    return tuple(n for n, (stage, _k) in readers.variable_readers().items()
                 if stage not in effects.ARGUMENT_ROLES and n not in skip and other(n) is not None)


@functools.lru_cache(maxsize=None)
def base(method: str) -> tuple[dict[str, Any], dict[str, Any]]:
    hv = effects.hostvars(method)
    site = plan_site(copy.deepcopy(hv), copy.deepcopy(effects.GROUPS), {})
    return hv, site


def unread_on(method: str, host: str) -> list[str]:
    """What the check says nothing reads on this host (readers.reads over the base plan of the host)."""
    _hv, site = base(method)
    plan = site["plans"][host]
    site_host = "mon"  # the first host of the monitoring group
    kinds = readers.host_kinds(plan, set(effects.GROUPS["monitoring"]), site_host)
    stages = readers.Stages()
    return sorted(n for n in judged() if readers.reads(n, plan, kinds, stages) is False)


def files_of(site: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return render.render_all(site["plans"], "test", site_monitoring=site["monitoring"])


@pytest.mark.parametrize(("method", "host"), [(m, h) for m, hs in HOSTS.items() for h in hs])
def test_what_the_check_calls_unread_changes_nothing_a_node_gets(method: str, host: str) -> None:
    hv, site = base(method)
    names = unread_on(method, host)
    assert names, f"{host}: every variable acts here?"
    values = {n: other(n) for n in names}
    mutated = copy.deepcopy(hv)
    mutated[host].update(copy.deepcopy(values))
    quiet = plan_site(copy.deepcopy(mutated), copy.deepcopy(effects.GROUPS), {})  # origins {}: nothing judged
    assert quiet["errors"] == site["errors"] == {}, quiet["errors"]
    before, after = files_of(site), files_of(quiet)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if changed:  # name the variable that reached the nodes
        culprits = []
        for name, value in values.items():
            one = copy.deepcopy(hv)
            one[host][name] = copy.deepcopy(value)
            alone = plan_site(one, copy.deepcopy(effects.GROUPS), {})
            if alone["errors"] or files_of(alone) != before:
                culprits.append(name)
        pytest.fail(f"{host} ({method}): the check calls {culprits} unread, yet they change {changed[:5]}")
    # and the check refuses each of them when the host itself sets it
    judged_site = plan_site(copy.deepcopy(mutated), copy.deepcopy(effects.GROUPS),
                            {host: {n: [f"host {host}"] for n in names}})
    said = " ".join(judged_site["errors"].get(host, []))
    missing = [n for n in names if f"{n}: set by the host_vars of {host} for {host}" not in said]
    assert not missing, missing


@functools.lru_cache(maxsize=1)
def declared() -> dict[str, tuple[str, ...]]:
    """The variables whose data names the kinds of host they act on (`read_on` in data/variables.yml or a role's
    meta/variables.yml; a section's default is not a declaration)."""
    out = {n: tuple(s["read_on"]) for n, s in data_variables().items() if s.get("read_on")}
    for path in sorted((ROOT / "roles").glob("*/meta/variables.yml")):
        for name, info in (yaml.safe_load(path.read_text()).get("variables") or {}).items():
            if (info or {}).get("read_on"):
                out[name] = tuple(info["read_on"])
    return out


def narrowed() -> list[tuple[str, str, str]]:
    """(variable, method, host) for every declared variable, on a base host of a kind it acts on."""
    out = []
    for name in sorted(declared()):
        if name not in judged():
            continue
        for method, hosts in HOSTS.items():
            _hv, site = base(method)
            here = [h for h in hosts if readers.reads(name, site["plans"][h], readers.host_kinds(
                site["plans"][h], set(effects.GROUPS["monitoring"]), "mon"), readers.Stages())]
            if here:
                out.append((name, method, here[0]))
                break
    return out


def values_of(name: str) -> list[Any]:
    """Every choice of a variable that has choices (one of them is what the host holds now), else another value."""
    spec = data_variables().get(name) or {}
    return list(spec["choices"]) if spec.get("choices") else [other(name)]


@pytest.mark.parametrize(("name", "method", "host"), narrowed(), ids=str)
def test_a_declared_variable_acts_where_the_check_says_it_does(name: str, method: str, host: str) -> None:
    """A refusal or a changed file: the host reacts to the variable."""
    hv, site = base(method)
    for value in values_of(name):
        mutated = copy.deepcopy(hv)
        mutated[host][name] = copy.deepcopy(value)
        after = plan_site(mutated, copy.deepcopy(effects.GROUPS), {})
        if after["errors"] != site["errors"] or files_of(after) != files_of(site):
            return
    pytest.fail(f"{name} on {host} ({method}) changes nothing rendered with any of {values_of(name)}")


@pytest.mark.parametrize("name", ["layered", "h200-4rack", "example", "mixed"])
def test_the_sources_of_each_variable_are_the_inventorys_own_files(name: str) -> None:
    """inventory_vars.variable_origins against the inventory's files read as plain YAML: every group_vars file (or
    folder) and host_vars file that holds a variable, and the hosts file's own host variables, for every host they
    reach."""
    from ansible_collections.metalserve.sglang.tests import validators  # noqa: PLC0415

    folder = ROOT / "inventories" / name
    hostvars, groups, found = validators.inventory_site(folder)
    prefixes = ("sglang_", "monitoring_", "nvidia_driver_", "rocm_driver_", "rdma_", "container_runtime_",
                "model_weights_", "preflight_", "node_acceptance_", "nftables_")

    def keys(path: Any) -> set[str]:
        files = sorted(path.glob("*.yml")) if path.is_dir() else [path]
        return {k for f in files for k in (yaml.safe_load(f.read_text()) or {}) if k.startswith(prefixes)}

    expected: dict[str, dict[str, set[str]]] = {h: {} for h in hostvars}
    for group, members in groups.items():
        for source in (folder / "group_vars" / group, folder / "group_vars" / f"{group}.yml"):
            for key in keys(source) if source.exists() else set():
                for host in members:
                    expected[host].setdefault(key, set()).add(group)
    for host in hostvars:
        source = folder / "host_vars" / f"{host}.yml"
        for key in keys(source) if source.exists() else set():
            expected[host].setdefault(key, set()).add(f"host {host}")

    def inline(node: Any) -> None:  # a YAML inventory's own host variables
        for host, values in ((node or {}).get("hosts") or {}).items():
            for key in (k for k in (values or {}) if k.startswith(prefixes)):
                expected[host].setdefault(key, set()).add(f"host {host}")
        for child in ((node or {}).get("children") or {}).values():
            inline(child)
    if (folder / "hosts.yml").exists():
        inline(yaml.safe_load((folder / "hosts.yml").read_text())["all"])
    assert {h: {k: set(v) for k, v in d.items()} for h, d in found.items()} == expected


def test_a_role_a_play_applies_itself_turns_the_refusal_into_a_warning() -> None:
    """site.yml runs node_acceptance on servers, so on a host with sglang_role: none its variables are unread: refused;
    a play that applies the role to that host itself (ansible_play_role_names) hears it as a warning."""
    hostvars = {"idle": {"sglang_role": "none", "node_acceptance_replay": {"node": "/tmp/node.json"}}}
    groups = {"all": ["idle"]}
    origins = {"idle": {"node_acceptance_replay": ["host idle"]}}
    refused = plan_site(copy.deepcopy(hostvars), groups, origins)["errors"]
    assert any(m.startswith("node_acceptance_replay: set by the host_vars of idle") for m in refused.get("idle", []))
    applied = plan_site(copy.deepcopy(hostvars), groups, origins, {"node_acceptance": frozenset({"idle"})})
    assert "idle" not in applied["errors"], applied["errors"]
    assert any(w.startswith("node_acceptance_replay: set by the host_vars of idle")
               for w in applied["plans"]["idle"]["warnings"])
