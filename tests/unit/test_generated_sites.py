"""Random coherent sites pass; one mistake of issue 26's classes in one of them is refused, naming its host.

A seeded generator (tests/unit/site_generator.py) builds sites of racks, two-node pairs, PD pairs behind routers,
plain routers and a monitoring host, with docker and uv racks, local weights and hub ids. Each is planned as
render.yml and site.yml plan it (placement, the node stages, coherence, and the site checker over the files the
nodes would get) and must plan without a problem. Then one mutation (a mistake an operator makes: a flag under
another spelling, a secret in router args, an NCCL boolean, a GPU mask, PD pairs that disagree, a copied
rendezvous address, a CUDA image on AMD, ...) goes into one host of a fresh copy, and the plan must refuse it with a
problem of that host or one that names it. METALSERVE_SITES and METALSERVE_MUTATIONS raise the counts (the
defaults keep `make unit` quick); the terminal summary says how many ran.
"""
from __future__ import annotations

import copy
import os
import random

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.tests.unit import site_generator as gen

SITES = int(os.environ.get("METALSERVE_SITES", "24"))
MUTATIONS = int(os.environ.get("METALSERVE_MUTATIONS", "60"))
RAN = {"sites": 0, "mutations": 0, "by_class": {}}


@pytest.mark.parametrize("seed", range(SITES))
def test_a_generated_site_plans_and_passes_the_checker(seed: int) -> None:
    hostvars, groups = gen.generate(seed)
    site = plan_site(copy.deepcopy(hostvars), groups)
    assert site["errors"] == {}, f"seed {seed}: {site['errors']}"
    assert len(site["plans"]) == len(hostvars)
    RAN["sites"] += 1


def mutated(seed: int) -> tuple[str, str, dict, dict]:
    """A site and one mutation that applies to it (the seed picks the class; another site when it has no host for
    it)."""
    name = gen.MUTATIONS[seed % len(gen.MUTATIONS)].__name__
    rng = random.Random(10_000 + seed)
    for attempt in range(50):
        hostvars, groups = gen.generate(rng.randrange(1_000_000))
        host = gen.MUTATIONS[seed % len(gen.MUTATIONS)](rng, hostvars, groups)
        if host:
            return name, host, hostvars, groups
    raise AssertionError(f"no generated site had a host for {name} in {attempt + 1} tries")


@pytest.mark.parametrize("seed", range(MUTATIONS))
def test_one_mistake_is_refused_naming_its_host(seed: int) -> None:
    name, host, hostvars, groups = mutated(seed)
    errors = plan_site(hostvars, groups)["errors"]
    named = errors.get(host) or [m for h, ms in errors.items() for m in ms if host in m]
    assert named, f"seed {seed}, {name} on {host} was not refused naming {host}; problems: {errors}"
    RAN["mutations"] += 1
    RAN["by_class"][name] = RAN["by_class"].get(name, 0) + 1


def test_every_mutation_class_is_exercised() -> None:
    assert MUTATIONS >= len(gen.MUTATIONS), "raise METALSERVE_MUTATIONS: some mistake classes would not run"
