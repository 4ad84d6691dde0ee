"""Every upstream cell of every shipped cookbook revision of every model renders to the cookbook's own command,
token for token.

The expectation is built from the unedited upstream file of each revision alone
(tests/fixtures/upstream/<page>/<revision>/), with only the spellings this test names: --tp/--dp written out in
full, --cuda-graph-max-bs as --cuda-graph-max-bs-decode for releases that reject the old name, each flag item read
as a shell reads the copied command, and --model-path first (where the engine writes it for every model).
"""
from __future__ import annotations

import re

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.tests.helpers import (
    PAGE_MODELS,
    checkpoint_name,
    cookbook_alone,
    model_path_first,
    revisions,
    selection_of,
    upstream,
    upstream_nodes,
    upstream_tokens,
)

DOCS = {(model, rev): upstream(rev, model) for model in PAGE_MODELS for rev in revisions(model)}
CELLS = [(model, rev, cell) for (model, rev), doc in DOCS.items() for cell in doc["cells"]]
FULL_NAMES = {"--tp": "--tp-size", "--dp": "--dp-size"}
#: the releases each model's cells are rendered for here: the pinned one, and the one inside its ROCm images
RELEASES = {"glm-5.3": ["0.5.23", "0.5.13.post1"], "deepseek-v4-pro": ["0.5.23", "0.5.18"],
            "qwen3.8-27b": ["0.5.23"]}
ROCM_RELEASE = re.compile(r":v(\d+\.\d+\.\d+(?:\.post\d+)?)-rocm")


def cell_id(case: tuple[str, str, dict]) -> str:
    model, rev, cell = case
    m = cell["match"]
    return f"{model}-{rev}-{m['hw']}-{m['quant']}-{m['strategy']}-{m['nodes']}"


def expected(model: str, rev: str, cell: dict, release: str, rank: int = 0, head: str = "10.0.0.1") -> list[str]:
    names = dict(FULL_NAMES)
    if release != "0.5.13.post1":
        names["--cuda-graph-max-bs"] = "--cuda-graph-max-bs-decode"
    return model_path_first([names.get(t, t) for t in upstream_tokens(cell, DOCS[(model, rev)], rank, head)])


@pytest.mark.parametrize("model,rev", list(DOCS))
def test_every_cell_of_the_revision_is_shipped(model: str, rev: str) -> None:
    shipped = next(r for r in recipe_engine.load_catalog().models[model].revisions if r.id == rev)
    assert [c.key for c in shipped.cells] == [
        (c["match"]["hw"], c["match"]["quant"], c["match"]["strategy"], upstream_nodes(c["match"]["nodes"]))
        for c in DOCS[(model, rev)]["cells"]
    ]
    assert all(c.revision == rev for c in shipped.cells)


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_the_newest_revision_is_the_default(model: str) -> None:
    loaded = recipe_engine.load_catalog().models[model]
    assert loaded.revision == revisions(model)[0]
    assert [c.key for c in loaded.cells] == [c.key for c in loaded.revisions[0].cells]


@pytest.mark.parametrize("case", CELLS, ids=cell_id)
def test_cell_matches_upstream(case: tuple[str, str, dict]) -> None:
    model, rev, cell = case
    for release in RELEASES[model]:
        # uv: the release is the operator's to choose (a docker image fixes its own; see test_release_coherence);
        # parsers and metrics are our knobs on top of the cell, as the cookbook alone has them here
        sel = selection_of(cell, model=model, sglang_version=release, install_method="uv", cookbook_revision=rev,
                           **cookbook_alone(cell))
        if upstream_nodes(cell["match"]["nodes"]) == 1:
            assert recipe_engine.serve_args(sel) == expected(model, rev, cell, release), release
        else:
            for rank in (0, 1):
                assert recipe_engine.serve_args(sel, rank, "10.0.0.1") == expected(model, rev, cell, release, rank)


@pytest.mark.parametrize("case", CELLS, ids=cell_id)
def test_cell_metadata(case: tuple[str, str, dict]) -> None:
    model, rev, cell = case
    doc = DOCS[(model, rev)]
    rec = recipe_engine.recipe(selection_of(cell, model=model, cookbook_revision=rev))
    m = cell["match"]
    assert rec["model"] == model and rec["cookbook_revision"] == rev
    assert rec["checkpoint"] == checkpoint_name(cell, doc)
    assert rec["image"] == doc["docker_images"][m["hw"]]
    verified = cell.get("verified", False) is True and cell.get("verificationStatus", "verified") == "verified"
    assert rec["verified"] is verified
    assert rec["env"] == dict(e.split("=", 1) for e in cell.get("env", []))
    # GPUs each node runs: the cell's --tp (1 without one) over its nodes
    tp = next((int(f.split()[1]) for f in cell["flags"] if f.split()[0] in ("--tp", "--tp-size")), 1)
    assert rec["gpus_per_node"] == tp // upstream_nodes(m["nodes"])
    # the default release is the one inside the cell's image when its tag names one, else the pinned 0.5.23
    named = ROCM_RELEASE.search(doc["docker_images"][m["hw"]])
    assert rec["sglang_version"] == (named.group(1) if named else "0.5.23")
    unverified = [w for w in rec["warnings"] if "unverified recipe" in w]
    assert bool(unverified) is (not verified)


def test_default_parsers_and_metrics_are_added_before_host_and_port() -> None:
    args = recipe_engine.serve_args({"gpu": "h200", "quant": "fp8", "strategy": "low-latency"})
    assert args[-9:] == ["--reasoning-parser", "glm45", "--tool-call-parser", "glm47", "--enable-metrics",
                         "--host", "0.0.0.0", "--port", "30000"]


def test_parsers_a_cell_names_stay_where_the_cell_has_them() -> None:
    """Qwen3.8-27B cells name the page's parsers themselves: the default render keeps them in place (once) and
    only adds --enable-metrics before --host/--port."""
    args = recipe_engine.serve_args({"model": "qwen3.8-27b", "gpu": "gb300", "quant": "fp8",
                                     "strategy": "high-throughput"})
    assert args.count("--reasoning-parser") == 1 and args.count("--tool-call-parser") == 1
    at = args.index("--reasoning-parser")
    assert args[at:at + 4] == ["--reasoning-parser", "qwen3", "--tool-call-parser", "qwen3_coder"]
    assert args[at + 4] == "--speculative-algorithm" and args[-5:] == ["--enable-metrics", "--host", "0.0.0.0",
                                                                       "--port", "30000"]
    # sglang_parsers: false drops them, as the page's parser card (an opt-out) does
    plain = recipe_engine.serve_args({"model": "qwen3.8-27b", "gpu": "gb300", "quant": "fp8",
                                      "strategy": "high-throughput", "parsers": {"tool_call": False}})
    assert "--tool-call-parser" not in plain and plain[plain.index("--reasoning-parser") + 1] == "qwen3"
