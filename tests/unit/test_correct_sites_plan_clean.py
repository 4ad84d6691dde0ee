"""No correct site is refused: every cookbook cell (each shipped revision of each model, as a docker install; the
newest revision's NVIDIA cells as a uv install too) and every lab shape (tests/lab/lab.py) plans clean through the whole
plan, the site checker's process views included. The cells and shapes are the upstream cookbook's and the lab's own,
not written for this test: a check that refuses one of them refuses a site the cookbook or the lab runs."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog, with_revision
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

from ansible_collections.metalserve.sglang.tests.lab import lab
from ansible_collections.metalserve.sglang.tests.unit.test_plan_speed import flatten

CATALOG = load_catalog()


def cells() -> list[tuple[str, str, Any, str]]:
    out = []
    for model in CATALOG.models.values():
        for i, rev in enumerate(model.revisions):
            for cell in with_revision(model, rev.id).cells:
                out.append((model.id, rev.id, cell, "docker"))
                if i == 0 and CATALOG.gpus[cell.gpu]["vendor"] == "nvidia":
                    out.append((model.id, rev.id, cell, "uv"))
    return out


CELLS = cells()


def cell_site(model: str, rev: str, cell: Any, method: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    base = {"sglang_model": model, "sglang_cookbook_revision": rev, "sglang_gpu": cell.gpu, "sglang_quant": cell.quant,
            "sglang_strategy": cell.strategy, "sglang_nodes": cell.nodes, "sglang_install_method": method}
    hosts = {f"n{i}": {**base, "ansible_host": f"10.0.0.{i + 1}"} for i in range(cell.nodes)}
    groups = {"all": sorted(hosts), "domain": sorted(hosts)}
    for hv in hosts.values():
        if cell.nodes > 1:
            hv["sglang_instance_group"] = "domain"
        if CATALOG.gpus[cell.gpu].get("imex"):
            hv["nvidia_driver_imex_group"] = "domain"
    return hosts, groups


CELL_IDS = [f"{m}-{r}-{c.gpu}-{c.quant}-{c.strategy}-{c.nodes}-{how}" for m, r, c, how in CELLS]


@pytest.mark.parametrize("case", CELLS, ids=CELL_IDS)
def test_every_cookbook_cell_plans_clean(case: tuple[str, str, Any, str]) -> None:
    hostvars, groups = cell_site(*case)
    assert plan_site(hostvars, groups)["errors"] == {}


def lab_inventories() -> dict[str, dict[str, Any]]:
    known = Path("/nonexistent/known_hosts")
    docs = {}
    for shape, servers in (("pd", 2), ("plain", 3), ("full", 4)):
        names = [f"metalserve-lab-node{i + 1}" for i in range(servers)]
        router = "metalserve-lab-router"
        ips = {h: f"172.30.0.{i + 10}" for i, h in enumerate(names + [router, router + "2"])}
        docs[shape] = lab.inventory("lab", names, router, shape, None, ips, known)
    servers, routers = lab.mixed_hosts("lab")
    docs["mixed"] = lab.mixed_inventory("lab", {h: f"172.31.0.{i + 10}" for i, h in enumerate(servers + routers)},
                                        known)
    return docs


@pytest.mark.parametrize("shape", ["pd", "plain", "full", "mixed"])
def test_every_lab_shape_plans_clean(shape: str) -> None:
    hostvars, groups = flatten(lab_inventories()[shape])
    assert plan_site(hostvars, groups)["errors"] == {}
