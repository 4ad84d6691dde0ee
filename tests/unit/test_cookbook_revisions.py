"""Cookbook revisions: each shipped revision of each model is the import of its unedited upstream files, the seed
is GLM-5.3 revision 03d5035a, a host selects one with sglang_cookbook_revision, and a host on an older revision is
told what the newest page does differently.

Expectations come from outside our code: the upstream files (tests/fixtures/upstream/<page>/<revision>/), the
lengths the search index reports for them, the seed as first transcribed (glm-5.3-cookbook-cells.yaml),
and the changes between the two revisions as read on the page (reference/vendor-facts.md, section C.2).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from decimal import Decimal

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as br
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import convert as CONVERT
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import jsread as JS
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import page as PAGE
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.tests.helpers import (
    PAGE_MODELS,
    REVISIONS,
    ROOT,
    UPSTREAM_DIR,
    fixture_dir,
    importer,
    model_doc,
    page_of,
    revisions,
    upstream,
    upstream_nodes,
)

DATA = ROOT / "data" / "models" / "glm-5.3" / "cookbook"
NEWEST, SEED_REVISION = "8e04be51", "03d5035a"
IMPORT = importer()
MODEL_REVISIONS = [(model, rev) for model in PAGE_MODELS for rev in revisions(model)]


def key(cell: dict) -> tuple:
    m = cell["match"]
    return (m["hw"], m["quant"], m["strategy"], upstream_nodes(m["nodes"]))


def test_every_page_model_is_shipped() -> None:
    assert PAGE_MODELS == ["deepseek-v4-pro", "glm-5.3", "qwen3.8-27b"]
    assert REVISIONS == [NEWEST, SEED_REVISION]


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_shipped_revisions_are_the_fixtures_newest_first(model: str) -> None:
    page = UPSTREAM_DIR / page_of(model)[0]
    assert sorted(p.parent.name for p in page.glob("*/source.yml")) == sorted(revisions(model))
    assert sorted(p.name for p in (ROOT / "data" / "models" / model / "cookbook").iterdir()) == sorted(revisions(model))


@pytest.mark.parametrize("model,rev", MODEL_REVISIONS)
def test_fixtures_are_the_files_the_index_holds(model: str, rev: str) -> None:
    """Unedited: each file has the length the search index reports for that path at that commit."""
    fixture = fixture_dir(model, rev)
    source = yaml.safe_load((fixture / "source.yml").read_text())
    assert len((fixture / source["config_file"]).read_text(encoding="utf-8")) == source["config_chars"]
    assert len((fixture / source["benchmarks_file"]).read_text(encoding="utf-8")) == source["benchmarks_chars"]
    assert source["config_commit"].startswith(rev)
    assert sorted(p.name for p in fixture.iterdir()) == sorted([source["config_file"], source["benchmarks_file"],
                                                               "source.yml"])


@pytest.mark.parametrize("model,rev", MODEL_REVISIONS)
def test_import_of_the_fixture_reproduces_data(model: str, rev: str) -> None:
    files = IMPORT.import_model_revision(model, rev, ROOT).files
    data = ROOT / "data" / "models" / model / "cookbook" / rev
    assert sorted(files) == sorted(f"cookbook/{rev}/{p.name}" for p in data.iterdir())
    for name, text in files.items():
        assert (ROOT / "data" / "models" / model / name).read_text(encoding="utf-8") == text, \
            f"data/models/{model}/{name} is not the import of its fixture: rerun tools/import_cookbook_cells.py"


@pytest.mark.parametrize("model,rev", MODEL_REVISIONS)
def test_every_cell_of_the_variant_on_a_known_gpu_is_imported(model: str, rev: str) -> None:
    """The page's cells of the model's variant on the GPUs data/gpus.yml describes, and no other, in page order."""
    doc = upstream(rev, model)
    cells = yaml.safe_load((ROOT / "data" / "models" / model / "cookbook" / rev / "cells.yml").read_text())["cells"]
    assert [(c["gpu"], c["quant"], c["strategy"], c["nodes"]) for c in cells] == [key(c) for c in doc["cells"]]
    assert doc["cells"], f"{model} {rev}: no cell imported"


@pytest.mark.parametrize("model,rev", MODEL_REVISIONS)
def test_checkpoints_of_the_model_are_the_pages(model: str, rev: str) -> None:
    """model.yml (what the engine reads) names the page's checkpoint for every precision and GPU of the revision."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import checkpoint_of, load_catalog
    from ansible_collections.metalserve.sglang.tests.helpers import checkpoint_name
    catalog_model = load_catalog().models[model]
    doc = upstream(rev, model)
    for cell in doc["cells"]:
        m = cell["match"]
        assert checkpoint_of(catalog_model, m["hw"], m["quant"])["id"] == checkpoint_name(cell, doc), m


@pytest.mark.parametrize("model", PAGE_MODELS)
def test_parsers_and_speculative_presets_are_the_pages(model: str) -> None:
    """The parsers are the page's parser card; a preset named like an option of the page's speculative card
    carries exactly that option's flags (newest revision)."""
    config = upstream(revisions(model)[0], model)["config"]
    card = {item["id"]: item["flag"].split(" ", 1) for item in config["playgroundFeatures"]["parsers"]["items"]}
    parsers = model_doc(model)["parsers"]
    assert card == {"reasoning": ["--reasoning-parser", parsers["reasoning"]],
                    "toolCall": ["--tool-call-parser", parsers["tool_call"]]}
    options = {o["id"]: o for o in config["playgroundFeatures"]["speculative"]["options"]}
    presets = model_doc(model)["speculative_presets"]
    shared = sorted(set(options) & set(presets))
    assert shared, f"{model}: no preset is named after an option of the page"
    for name in shared:
        theirs = [f.split(" ", 1) for f in options[name]["flags"]]
        assert [[k, str(v)] for k, v in presets[name]["flags"].items()] == theirs, name


def test_the_seed_is_revision_03d5035a() -> None:
    """The cells we first shipped (transcribed without a commit) are 03d5035a's, cell for cell, and not 8e04be51's."""
    seed = upstream()
    by_key = {rev: {key(c): c for c in upstream(rev)["cells"]} for rev in REVISIONS}
    seed_cells = {key(c): {**c, "match": None} for c in seed["cells"]}
    assert seed_cells == {k: {**c, "match": None} for k, c in by_key[SEED_REVISION].items()}
    assert seed_cells != {k: {**c, "match": None} for k, c in by_key[NEWEST].items()}
    assert seed["docker_images"] == upstream(SEED_REVISION)["docker_images"]
    assert seed["model_names"] == upstream(SEED_REVISION)["model_names"]


def test_the_reader_keeps_callbacks_opaque_and_refuses_them_where_it_reads() -> None:
    read = JS.read_js_export
    config = read("export const config = { a: f(1), b: (s) => s.x / 2, get c() { return 1 }, d(s) { return s }, "
                  "e: \"x\" + \"y\", r: (s) => s.split(/[\\s=,]/)[0], t: `x ${y}`, n: [1, 2] };", "config")
    assert config == {"a": "f(1)", "b": "(s) => s.x / 2", "c": "() { return 1 }", "d": "(s) { return s }",
                      "e": '"x" + "y"', "r": "(s) => s.split(/[\\s=,]/)[0]", "t": "`x ${y}`", "n": [1, 2]}
    assert all(isinstance(config[k], JS.Opaque) for k in "abcdert") and not isinstance(config["n"], JS.Opaque)
    with pytest.raises(JS.JsLiteralError, match=r"cells\[0\]\.verified: the page computes this value"):
        JS.literal({"verified": config["b"]}, "cells[0]")
    with pytest.raises(JS.JsLiteralError, match="`export const config` is not a literal"):
        read("export const config = make();", "config")
    with pytest.raises(JS.JsLiteralError, match="unexpected character '#' at offset 24"):
        read("export const config = { #a: 1 };", "config")
    assert read("// c\nexport const b = [{ x: 14.20, 'k': `a\\\\\nb`, n: null, },];", "b") == \
        [{"x": Decimal("14.20"), "k": "a\\\nb", "n": None}]


def _one_cell(cell: dict) -> dict:
    config = {"modelNames": {"default|fp4": "org/M"}, "cells": [cell]}
    return CONVERT.convert(PAGE.page_cells(config, "default")[0], "org/M", {"--tp": "--tp-size"})


def test_a_cell_value_is_read_as_the_shell_reads_it() -> None:
    """--deepep-config '{"a":1}' on the page is the JSON text without the quotes once pasted into a shell."""
    cell = {"match": {"hw": "b300", "quant": "fp4", "strategy": "balanced", "nodes": "single"}, "verified": True,
            "flags": ["--trust-remote-code", "--model-path {{MODEL_NAME}}", "--tp 8",
                      "--deepep-config '{\"normal_dispatch\":{\"num_sms\":96}}'", "--host {{HOST_IP}}", "--port {{PORT}}"]}
    assert _one_cell(cell)["flags"] == {
        "--trust-remote-code": True, "--tp-size": 8, "--deepep-config": '{"normal_dispatch":{"num_sms":96}}'}
    cell["flags"][3] = "--deepep-config two words"
    with pytest.raises(CONVERT.LeftOut, match="is 2 shell words; expected one"):
        _one_cell(cell)
    cell["verificationStatus"] = "in-progress"
    cell["flags"][3] = "--deepep-config x"
    assert _one_cell(cell)["verified"] is False


# --- the changes between the revisions, as upstream made them (vendor-facts C.2) ---------------------

def test_newest_fp8_high_throughput_is_the_former_balanced_cell() -> None:
    for gpu in ("h200", "b200", "b300", "gb300"):
        newest = recipe_engine.serve_args({"gpu": gpu, "quant": "fp8", "strategy": "high-throughput"})
        seed = recipe_engine.serve_args({"gpu": gpu, "quant": "fp8", "strategy": "balanced",
                                         "cookbook_revision": SEED_REVISION})
        assert newest == seed
    gb300 = recipe_engine.recipe({"gpu": "gb300", "quant": "fp8", "strategy": "high-throughput"})
    assert gb300["env"] == {} and gb300["cookbook_revision"] == NEWEST


def test_balanced_is_gone_from_the_newest_nvidia_fp8_and_the_message_says_how_to_pin() -> None:
    with pytest.raises(RecipeError) as err:
        recipe_engine.recipe({"gpu": "h200", "quant": "fp8", "strategy": "balanced"})
    text = str(err.value)
    assert text.startswith("sglang_strategy: 'balanced' is not a single-node fp8 recipe on h200; it offers "
                           "low-latency, high-throughput")
    assert "its high-throughput carries that cell's flags" in text
    assert 'sglang_cookbook_revision: "03d5035a"' in text


def test_a_host_on_the_newest_revision_gets_no_revision_warning() -> None:
    for strategy in ("low-latency", "high-throughput"):
        rec = recipe_engine.recipe({"gpu": "gb300", "quant": "fp8", "strategy": strategy})
        assert not [w for w in rec["warnings"] if "cookbook revision" in w]


def test_pinned_cell_that_upstream_left_alone_gets_no_warning() -> None:
    rec = recipe_engine.recipe({"gpu": "mi355x", "quant": "fp8", "strategy": "balanced",
                                "cookbook_revision": SEED_REVISION})
    assert not [w for w in rec["warnings"] if "cookbook revision" in w]


def test_pinned_gb300_high_throughput_is_told_what_the_newest_page_does() -> None:
    rec = recipe_engine.recipe({"gpu": "gb300", "quant": "fp8", "strategy": "high-throughput",
                                "cookbook_revision": SEED_REVISION})
    [warning] = [w for w in rec["warnings"] if "cookbook revision" in w]
    assert warning == (
        "cookbook revision 03d5035a (sglang_cookbook_revision) differs from the newest shipped revision 8e04be51 for "
        "gb300/fp8/high-throughput/1 node: 8e04be51 adds --speculative-algorithm EAGLE, --speculative-num-steps 1, "
        "--speculative-eagle-topk 1, --speculative-num-draft-tokens 2, --chunked-prefill-size 32768, "
        "--max-running-requests 256; drops env SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=512")
    assert rec["env"] == {"SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK": "512"}


def test_pinned_b300_nvfp4_high_throughput_hears_of_changed_flags_and_the_badge() -> None:
    rec = recipe_engine.recipe({"gpu": "b300", "quant": "nvfp4", "strategy": "high-throughput",
                                "cookbook_revision": SEED_REVISION})
    [warning] = [w for w in rec["warnings"] if "cookbook revision" in w]
    assert warning.endswith("8e04be51 adds --speculative-algorithm EAGLE, --speculative-num-steps 2, "
                            "--speculative-eagle-topk 1, --speculative-num-draft-tokens 3; changes "
                            "--max-running-requests 512 -> 256; is verified upstream")


@pytest.mark.parametrize("gpu,quant", [("h200", "fp8"), ("b300", "nvfp4"), ("gb300", "nvfp4")])
def test_pinned_balanced_hears_that_the_strategy_is_gone(gpu: str, quant: str) -> None:
    rec = recipe_engine.recipe({"gpu": gpu, "quant": quant, "strategy": "balanced", "cookbook_revision": SEED_REVISION})
    [warning] = [w for w in rec["warnings"] if "cookbook revision" in w]
    assert warning == (f"cookbook revision 03d5035a (sglang_cookbook_revision) differs from the newest shipped revision "
                       f"8e04be51 for {gpu}/{quant}/balanced/1 node: the balanced strategy is gone there ({quant} on "
                       f"{gpu} offers low-latency, high-throughput); its high-throughput carries these very flags")


def test_revision_by_full_commit_and_unknown_revisions() -> None:
    full = recipe_engine.recipe({"gpu": "h200", "quant": "fp8", "strategy": "balanced",
                                 "cookbook_revision": "03d5035ae36860d9445bdf2ce42804640c76e567"})
    assert full["cookbook_revision"] == SEED_REVISION
    with pytest.raises(RecipeError, match=r"sglang_cookbook_revision: '1234abcd' is not a cookbook revision shipped for "
                                          r"glm-5.3; shipped: 8e04be51 \(newest\), 03d5035a"):
        recipe_engine.recipe({"gpu": "h200", "cookbook_revision": "1234abcd"})


def test_a_site_cell_applies_whichever_revision_is_selected() -> None:
    site = [{"id": "glm-5.3", "cells": [{"gpu": "h200", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                                         "flags": {"--tp-size": 8, "--mem-fraction-static": "0.7"}}]}]
    for rev in (None, SEED_REVISION):
        rec = recipe_engine.recipe({"gpu": "h200", "quant": "fp8", "strategy": "balanced", "recipes": site,
                                    "cookbook_revision": rev})
        assert rec["origin"] == "site" and rec["cookbook_revision"] is None
        assert not [w for w in rec["warnings"] if "cookbook revision" in w]
    with pytest.raises(RecipeError, match="sglang_cookbook_revision: tiny has no cookbook revisions"):
        recipe_engine.recipe({"model": "tiny", "gpu": "h200", "quant": "bf16", "cookbook_revision": NEWEST,
                              "recipes": [{"id": "tiny", "checkpoints": {"bf16": {"id": "x/tiny", "size_gb": 1}},
                                           "cells": [{"gpu": "h200", "quant": "bf16", "strategy": "balanced",
                                                      "flags": {"--tp-size": 1}}]}]})


# --- published numbers of the selected revision (upstream's benchmarks files) -----------------------

def test_benchmark_numbers_follow_the_selected_revision() -> None:
    ht = {"gpu": "h200", "quant": "fp8", "strategy": "high-throughput", "nodes": 1}
    newest = br.published("glm-5.3", ht)["entry"]
    seed = br.published("glm-5.3", {**ht, "cookbook_revision": SEED_REVISION})["entry"]
    assert [s["concurrency"] for s in newest["speed"]] == [64, 256] and newest["speed"][0]["tok_s_per_gpu"] == 2440
    assert [s["concurrency"] for s in seed["speed"]] == [1024] and seed["speed"][0]["tok_s_per_gpu"] == 1762
    gb300_nvfp4 = {"gpu": "gb300", "quant": "nvfp4", "strategy": "low-latency", "nodes": 1}
    assert br.published("glm-5.3", gb300_nvfp4)["entry"]["speed"][1]["tok_s_per_gpu"] == 3979
    assert br.published("glm-5.3", {**gb300_nvfp4, "cookbook_revision": SEED_REVISION})["entry"] is None


def test_report_names_the_revision_and_the_pinned_accept_length_only_where_upstream_pinned_it() -> None:
    pub = br.published("glm-5.3", {"gpu": "b300", "quant": "nvfp4", "strategy": "high-throughput", "nodes": 1})
    cell = {"gpu": "b300", "quant": "nvfp4", "strategy": "high-throughput", "nodes": 1}
    text = br.markdown("n", "glm-5.3", cell, 8, [], pub, "0.5.23")
    assert "cookbook revision 8e04be51" in text and "SGLANG_SIMULATE_ACC_LEN" not in text
    pub = br.published("glm-5.3", {**cell, "quant": "fp8"})
    assert "SGLANG_SIMULATE_ACC_LEN=2)" in br.markdown("n", "glm-5.3", {**cell, "quant": "fp8"}, 8, [], pub, "0.5.23")


def test_the_benchmark_filter_passes_the_revision() -> None:
    from ansible_collections.metalserve.sglang.plugins.filter.bench_workload import bench_workload
    rec = recipe_engine.recipe({"gpu": "h200", "quant": "fp8", "strategy": "high-throughput",
                                "cookbook_revision": SEED_REVISION})
    # the GLM-5.3 page's speed command: random ISL 8192 / OSL 1024, range ratio 1.0, 64 warm-up requests
    glm = {"dataset": "random", "isl": 8192, "osl": 1024, "range_ratio": 1.0, "warmup_requests": 64, "backend": "sglang",
           "extra_args": []}
    assert bench_workload(rec) == [{"concurrency": 1024, "prompts": 2048, **glm}]
    assert bench_workload(recipe_engine.recipe({"gpu": "h200", "quant": "fp8", "strategy": "high-throughput"})) == \
        [{"concurrency": 64, "prompts": 128, **glm}, {"concurrency": 256, "prompts": 512, **glm}]


def test_each_model_is_benchmarked_at_its_own_published_workload() -> None:
    """The Qwen3.8-27B page measured ISL 1024 / OSL 1024 through the OpenAI-compatible backend with no warm-up flag
    (its benchmarks.jsx speed command, which also asks --request-rate inf), DeepSeek-V4 at GLM-5.3's 8192/1024: a mixed
    site runs each its own way."""
    from ansible_collections.metalserve.sglang.plugins.filter.bench_workload import bench_workload
    qwen = bench_workload(recipe_engine.recipe({"model": "qwen3.8-27b", "gpu": "gb300", "quant": "fp8",
                                                "strategy": "balanced"}))
    assert qwen == [{"concurrency": c, "prompts": p, "dataset": "random", "isl": 1024, "osl": 1024, "range_ratio": 1,
                     "warmup_requests": None, "backend": "sglang-oai", "extra_args": ["--request-rate", "inf"]}
                    for c, p in ((1, 64), (16, 64), (64, 256))]
    deepseek = bench_workload(recipe_engine.recipe({"model": "deepseek-v4-pro", "gpu": "b200", "quant": "fp4",
                                                    "strategy": "balanced"}))
    assert [(r["concurrency"], r["prompts"], r["isl"], r["osl"], r["warmup_requests"], r["backend"]) for r in deepseek] \
        == [(64, 128, 8192, 1024, 64, "sglang"), (256, 512, 8192, 1024, 64, "sglang")]


@pytest.mark.parametrize("model,rev", MODEL_REVISIONS)
def test_data_files_cite_their_upstream_commit(model: str, rev: str) -> None:
    source = yaml.safe_load((fixture_dir(model, rev) / "source.yml").read_text())
    data = ROOT / "data" / "models" / model / "cookbook" / rev
    cells = yaml.safe_load((data / "cells.yml").read_text())
    bench = yaml.safe_load((data / "benchmarks.yml").read_text())
    assert (cells["revision"], cells["commit"]) == (rev, source["config_commit"])
    assert (bench["revision"], bench["commit"]) == (rev, source["benchmarks_commit"])
    assert cells["source"].endswith(f"/blob/{source['config_commit']}/{source['path']}{source['config_file']}")
    assert Path(cells["source"]).name == source["config_file"]
    assert source["path"].startswith("docs/src/snippets/configs/")
