"""Every upstream GLM-5.3 cell of every shipped cookbook revision renders to the cookbook's own command,
token for token.

The expectation is built from the unedited upstream file of each revision alone
(tests/fixtures/upstream/<revision>/glm-5.3.jsx), with only the spellings this test names: --tp/--dp
written out in full, and --cuda-graph-max-bs as --cuda-graph-max-bs-decode for releases that reject
the old name.
"""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.tests.helpers import REVISIONS, selection_of, upstream, upstream_nodes, upstream_tokens

DOCS = {rev: upstream(rev) for rev in REVISIONS}
CELLS = [(rev, cell) for rev in REVISIONS for cell in DOCS[rev]["cells"]]
FULL_NAMES = {"--tp": "--tp-size", "--dp": "--dp-size"}


def cell_id(case: tuple[str, dict]) -> str:
    rev, cell = case
    m = cell["match"]
    return f"{rev}-{m['hw']}-{m['quant']}-{m['strategy']}-{m['nodes']}"


def expected(rev: str, cell: dict, release: str, rank: int = 0, head: str = "10.0.0.1") -> list[str]:
    names = dict(FULL_NAMES)
    if release != "0.5.13.post1":
        names["--cuda-graph-max-bs"] = "--cuda-graph-max-bs-decode"
    return [names.get(t, t) for t in upstream_tokens(cell, DOCS[rev], rank, head)]


@pytest.mark.parametrize("rev", REVISIONS)
def test_every_cell_of_the_revision_is_shipped(rev: str) -> None:
    model = recipe_engine.load_catalog().models["glm-5.3"]
    shipped = next(r for r in model.revisions if r.id == rev)
    assert [c.key for c in shipped.cells] == [
        (c["match"]["hw"], c["match"]["quant"], c["match"]["strategy"], upstream_nodes(c["match"]["nodes"]))
        for c in DOCS[rev]["cells"]
    ]
    assert all(c.revision == rev for c in shipped.cells)


def test_the_newest_revision_is_the_default() -> None:
    model = recipe_engine.load_catalog().models["glm-5.3"]
    assert model.revision == REVISIONS[0] and [c.key for c in model.cells] == [c.key for c in model.revisions[0].cells]


@pytest.mark.parametrize("release", ["0.5.23", "0.5.13.post1"])
@pytest.mark.parametrize("case", CELLS, ids=cell_id)
def test_cell_matches_upstream(case: tuple[str, dict], release: str) -> None:
    rev, cell = case
    # uv: the release is the operator's to choose (a docker image fixes its own; see test_release_coherence);
    # parsers and metrics are our knobs on top of the cell, off here to compare with the cookbook alone
    sel = selection_of(cell, parsers=False, metrics=False, sglang_version=release, install_method="uv",
                       cookbook_revision=rev)
    if upstream_nodes(cell["match"]["nodes"]) == 1:
        assert recipe_engine.serve_args(sel) == expected(rev, cell, release)
    else:
        for rank in (0, 1):
            assert recipe_engine.serve_args(sel, rank, "10.0.0.1") == expected(rev, cell, release, rank)


@pytest.mark.parametrize("case", CELLS, ids=cell_id)
def test_cell_metadata(case: tuple[str, dict]) -> None:
    rev, cell = case
    doc = DOCS[rev]
    rec = recipe_engine.recipe(selection_of(cell, cookbook_revision=rev))
    m = cell["match"]
    assert rec["cookbook_revision"] == rev
    assert rec["checkpoint"] == doc["model_names"][m["quant"]]
    assert rec["image"] == doc["docker_images"][m["hw"]]
    assert rec["verified"] is cell["verified"]
    assert rec["env"] == dict(e.split("=", 1) for e in cell["env"])
    # GPUs each node runs: TP over the nodes (GB300 trays hold 4, the rest 8)
    assert rec["gpus_per_node"] == (4 if m["hw"] == "gb300" else 8)
    # the default release is the one inside the cell's image when its tag names one
    assert rec["sglang_version"] == ("0.5.13.post1" if m["hw"].startswith("mi") else "0.5.23")
    unverified = [w for w in rec["warnings"] if "unverified recipe" in w]
    assert bool(unverified) is (not cell["verified"])


def test_default_parsers_and_metrics_are_added_before_host_and_port() -> None:
    args = recipe_engine.serve_args({"gpu": "h200", "quant": "fp8", "strategy": "low-latency"})
    assert args[-9:] == ["--reasoning-parser", "glm45", "--tool-call-parser", "glm47", "--enable-metrics",
                         "--host", "0.0.0.0", "--port", "30000"]
