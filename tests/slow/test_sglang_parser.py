"""SGLang's own parsers accept every command we render, and read it as the cookbook's command.

Every cell of every shipped cookbook revision of every model (GLM-5.3, DeepSeek-V4-Pro, Qwen3.8-27B) is parsed
by the release that runs it: the release inside its image (GLM-5.3's ROCm images: 0.5.13.post1; DeepSeek-V4-Pro's:
0.5.18) or the pinned 0.5.23 (NVIDIA's floating images, uv installs). Knob combinations and the bad-input cases
are parsed by 0.5.23.

Needs the parser venvs (tests/slow/sglang_parser_venv.sh, cached); `make slow` builds them and passes their
pythons in SGLANG_PARSER_PYTHON (0.5.23) and SGLANG_PARSER_PYTHON_<release with _ for .> (the others, e.g.
SGLANG_PARSER_PYTHON_0_5_13_POST1, SGLANG_PARSER_PYTHON_0_5_18). Everything one release parses goes through one
subprocess.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan
from ansible_collections.metalserve.sglang.tests.helpers import (
    PAGE_MODELS,
    cookbook_alone,
    page_selection,
    page_tokens_at,
    ROOT,
    site_cells,
    site_models,
    revisions,
    selection_of,
    upstream,
    upstream_nodes,
    upstream_tokens,
)

pytestmark = pytest.mark.slow
PARSER_PY = os.environ.get("SGLANG_PARSER_PYTHON", "")
PINNED = recipe_engine.load_catalog().versions["pinned"]
DOCS = {(model, rev): upstream(rev, model) for model in PAGE_MODELS for rev in revisions(model)}
CELLS = [(model, rev, cell) for (model, rev), doc in DOCS.items() for cell in doc["cells"]]
#: the releases inside the cookbook images (tests/slow builds a parser venv for each)
IMAGE_RELEASES = {"0.5.23", "0.5.18", "0.5.13.post1"}
BAD_INPUTS = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text())["parser"]
HELPER = Path(__file__).with_name("parse_with_sglang.py")
# 0.5.23 rejects the cookbook's --cuda-graph-max-bs as ambiguous; everything else upstream is taken as written
UPSTREAM_FOR_0523 = {"--cuda-graph-max-bs": "--cuda-graph-max-bs-decode"}

H200_HT = {"gpu": "h200", "quant": "fp8", "strategy": "high-throughput"}
H200_LL = {"gpu": "h200", "quant": "fp8", "strategy": "low-latency"}
GB300_LL = {"gpu": "gb300", "quant": "fp8", "strategy": "low-latency"}
MI355_UV = {"gpu": "mi355x", "quant": "fp8", "strategy": "balanced", "install_method": "uv"}
KNOB_COMBOS: dict[str, dict[str, Any]] = {
    "mtp-516": {**H200_HT, "speculative": "mtp-516"},
    "mtp-213-b300-ht": {"gpu": "b300", "quant": "fp8", "strategy": "high-throughput", "speculative": "mtp-213"},
    "spec-off": {**H200_HT, "speculative": "off"},
    "dflash2": {**H200_LL, "speculative": "dflash2", "draft_model_path": "/models/dflash2"},
    "dflash2-dp-off": {**H200_HT, "speculative": "dflash2", "dp_attention": "off"},
    "dp4-deepep-ep8": {**H200_LL, "dp_attention": 4, "moe_a2a": "deepep", "ep": 8},
    "dp-off": {**H200_HT, "dp_attention": "off"},
    "cp": {**H200_LL, "context_parallel": {"size": 8}},
    "cp-layer-split-pd": {**H200_LL, "context_parallel": {"size": 8, "layer_split": True}, "pd": {"role": "prefill"}},
    "hicache": {**H200_HT, "hicache": {"ratio": 2}},
    "hicache-file": {**GB300_LL, "hicache": {"write_policy": "write_back", "storage_backend": "mooncake"}},
    "kv-fp8": {**H200_HT, "kv_cache_fp8": True},
    "pd-prefill": {**H200_HT, "pd": {"role": "prefill", "bootstrap_port": 9000}},
    "pd-decode-nixl": {**GB300_LL, "pd": {"role": "decode", "transfer_backend": "nixl", "ib_device": "mlx5_0"}},
    "parsers-reasoning-only": {**H200_HT, "parsers": {"reasoning": True, "tool_call": False}},
    "model-path": {**H200_HT, "model_path": "/var/lib/sglang/models/zai-org/GLM-5.3"},
    "extra-remove": {**H200_HT, "extra_args": {"--dist-timeout": 3600, "--enable-mixed-chunk": True},
                     "remove_args": ["--chunked-prefill-size"]},
    "amd-uv-hicache": {**MI355_UV, "hicache": {}},
    "amd-uv-cuda-graph": {**MI355_UV, "extra_args": {"--cuda-graph-max-bs": 64}},
    "tp16-dp-attention": {"gpu": "b200", "quant": "bf16", "strategy": "balanced", "nodes": 2, "dp_attention": 8},
    "dsv4-ngram": {"model": "deepseek-v4-pro", "gpu": "b200", "strategy": "low-latency", "speculative": "ngram"},
    "dsv4-cp": {"model": "deepseek-v4-pro", "gpu": "b200", "strategy": "low-latency", "context_parallel": {"size": 8}},
    "dsv4-h200-fp8-tp16": {"model": "deepseek-v4-pro", "gpu": "h200", "quant": "fp8", "strategy": "balanced",
                           "nodes": 2, "speculative": "mtp-314"},
    "qwen-dspark": {"model": "qwen3.8-27b", "gpu": "gb300", "strategy": "balanced", "speculative": "dspark",
                    "draft_model_path": "/models/dspark"},
    "qwen-mtp-h200": {"model": "qwen3.8-27b", "gpu": "h200", "quant": "bf16", "speculative": "mtp"},
}


def cell_id(case: tuple[str, str, dict]) -> str:
    model, rev, cell = case
    m = cell["match"]
    return f"{model}-{rev}-{m['hw']}-{m['quant']}-{m['strategy']}-{m['nodes']}"


def page_parsers(model: str, rev: str) -> dict[str, str]:
    """{dest: parser} of the page's parser card (playgroundFeatures.parsers)."""
    items = DOCS[(model, rev)]["config"]["playgroundFeatures"]["parsers"]["items"]
    return {item["flag"].split()[0][2:].replace("-", "_"): item["flag"].split()[1] for item in items}


def parser_python(release: str) -> str:
    if release == PINNED:
        return PARSER_PY
    return os.environ.get("SGLANG_PARSER_PYTHON_" + re.sub(r"[^0-9A-Za-z]", "_", release).upper(), "")


def parse(python: str, serve: dict[str, list[str]], router: dict[str, list[str]] | None = None) -> dict[str, Any]:
    request = {"serve": list(serve.values()), "router": list((router or {}).values())}
    proc = subprocess.run([python, str(HELPER)], input=json.dumps(request), capture_output=True, text=True,
                          check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    return {"version": result["sglang"], "serve": dict(zip(serve, result["serve"])),
            "router": dict(zip(router or {}, result["router"]))}


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    """Each cell of each revision as a host renders it by default (docker, the cookbook image), parsed by the
    parser of the release that runs it, beside the cookbook's own command parsed by the same parser."""
    if not PARSER_PY:
        pytest.skip("SGLANG_PARSER_PYTHON is not set (make slow sets it)")
    by_release: dict[str, dict[str, list[str]]] = {}
    for model, rev, cell in CELLS:
        nodes = upstream_nodes(cell["match"]["nodes"])
        release = recipe_engine.recipe(selection_of(cell, model=model, cookbook_revision=rev))["sglang_version"]
        batch = by_release.setdefault(release, {})
        for rank in range(nodes):
            head = "10.0.0.1" if nodes > 1 else None
            key = f"{cell_id((model, rev, cell))}#{rank}"
            batch[f"default:{key}"] = recipe_engine.serve_args(selection_of(cell, model=model, cookbook_revision=rev),
                                                               rank, head)
            # parsers and metrics are our knobs on top of the cell: as the cookbook alone has them
            plain = selection_of(cell, model=model, cookbook_revision=rev, **cookbook_alone(cell))
            batch[f"plain:{key}"] = recipe_engine.serve_args(plain, rank, head)
            theirs = upstream_tokens(cell, DOCS[(model, rev)], rank, "10.0.0.1")
            batch[f"upstream:{key}"] = [UPSTREAM_FOR_0523.get(t, t) for t in theirs] if release == PINNED else theirs
    missing = sorted(r for r in by_release if not parser_python(r))
    assert not missing, (f"no parser venv for SGLang {', '.join(missing)}: make slow builds one per release "
                         "(SGLANG_VERSION=<release> bash tests/slow/sglang_parser_venv.sh)")
    out: dict[str, Any] = {"versions": {}, "serve": {}, "release_of": {}}
    for release, batch in by_release.items():
        result = parse(parser_python(release), batch)
        out["versions"][release] = result["version"]
        out["serve"].update(result["serve"])
        out["release_of"].update({k: release for k in batch})
    return out


@pytest.fixture(scope="module")
def parsed() -> dict[str, Any]:
    """Render everything for the pinned release, parse it all with its real parsers in one go."""
    if not PARSER_PY:
        pytest.skip("SGLANG_PARSER_PYTHON is not set (make test sets it)")
    serve: dict[str, list[str]] = {}
    for model, rev, cell in CELLS:
        nodes = upstream_nodes(cell["match"]["nodes"])
        for rank in range(nodes):
            head = "10.0.0.1" if nodes > 1 else None
            # AMD cells default to their image's release; here we ask for 0.5.23 (a uv install)
            uv = {"model": model, "sglang_version": "0.5.23", "install_method": "uv", "cookbook_revision": rev}
            ours_plain = recipe_engine.serve_args(selection_of(cell, **cookbook_alone(cell), **uv), rank, head)
            ours_default = recipe_engine.serve_args(selection_of(cell, **uv), rank, head)
            theirs = [UPSTREAM_FOR_0523.get(t, t)
                      for t in upstream_tokens(cell, DOCS[(model, rev)], rank, "10.0.0.1")]
            key = f"{cell_id((model, rev, cell))}#{rank}"
            serve[f"ours:{key}"], serve[f"default:{key}"], serve[f"upstream:{key}"] = ours_plain, ours_default, theirs
    for name, selection in KNOB_COMBOS.items():
        nodes = selection.get("nodes", 1)
        serve[f"knob:{name}"] = recipe_engine.serve_args(selection, nodes - 1, "10.0.0.1" if nodes > 1 else None)
    for case in BAD_INPUTS:
        serve[f"bad:{case['id']}"] = recipe_engine.serve_args(case["selection"])
    serve["negative:typo"] = ["--model-path", "x", "--tp-szie", "8"]
    serve["negative:old-cuda-graph"] = ["--model-path", "x", "--cuda-graph-max-bs", "8"]
    router = {
        "example-pd": example_router_argv(),
        "plain": recipe_engine.router_args({"workers": ["http://a:30000", "http://b:30000"], "policy": "cache_aware"}),
    }
    result = parse(PARSER_PY, serve, router)
    return {**result, "argv": serve, "router_argv": router}


def example_router_argv() -> list[str]:
    h200 = {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"}
    hostvars = {"p": {**h200, "sglang_pd": {"role": "prefill", "bootstrap_port": 9000}, "ansible_host": "10.0.0.1"},
                "d": {**h200, "sglang_pd": {"role": "decode"}, "ansible_host": "10.0.0.2"},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "pd"}}
    return host_plan("r", hostvars, {"pd": ["p", "d"]})["argv"]


def test_the_parser_is_0_5_23(parsed: dict) -> None:
    assert parsed["version"] == "0.5.23"


def test_every_rendered_command_parses(parsed: dict) -> None:
    failures = {k: v["error"] for k, v in parsed["serve"].items()
                if not k.startswith(("negative:", "upstream:", "bad:")) and not v["ok"]}
    assert not failures
    n = sum(1 for k in parsed["serve"] if k.startswith(("ours:", "default:", "knob:")))
    print(f"\n{n} rendered command lines accepted by SGLang {parsed['version']}'s parser")


@pytest.mark.parametrize("case", BAD_INPUTS, ids=lambda c: c["id"])
def test_bad_inputs_only_sglang_can_judge_are_refused_in_its_words(parsed: dict, case: dict) -> None:
    """The parser layer of tests/bad_inputs.yml: the engine renders these; SGLang's parser (which
    the sglang_server role runs on the node before touching the unit) refuses them."""
    result = parsed["serve"][f"bad:{case['id']}"]
    assert not result["ok"]
    assert re.search(case["expect"], result["error"]), result["error"]


def test_the_parser_is_strict_enough_to_fail(parsed: dict) -> None:
    assert "unrecognized arguments: --tp-szie" in parsed["serve"]["negative:typo"]["error"]
    assert "ambiguous option: --cuda-graph-max-bs" in parsed["serve"]["negative:old-cuda-graph"]["error"]


@pytest.mark.parametrize("case", CELLS, ids=cell_id)
def test_ours_means_what_the_cookbook_means(parsed: dict, case: tuple[str, str, dict]) -> None:
    model, rev, cell = case
    parsers = page_parsers(model, rev)
    for rank in range(upstream_nodes(cell["match"]["nodes"])):
        key = f"{cell_id(case)}#{rank}"
        theirs, ours = parsed["serve"][f"upstream:{key}"], parsed["serve"][f"ours:{key}"]
        assert theirs["ok"], theirs["error"]
        assert ours["ns"] == theirs["ns"]
        default = parsed["serve"][f"default:{key}"]["ns"]
        changed = {k for k in default if default[k] != theirs["ns"][k]}
        # our knobs on top of the cell, and nothing else: the page's parsers (its parser card; a cell that names
        # them already is unchanged) and Prometheus metrics (sglang_metrics)
        assert changed == {"enable_metrics"} | {k for k, v in parsers.items() if theirs["ns"][k] != v}
        assert {k: default[k] for k in parsers} == parsers
        assert default["enable_metrics"] is True


def test_each_cell_parses_under_the_release_that_runs_it(runs: dict) -> None:
    """The default render of every cell of every shipped revision (docker, the cookbook image) is accepted by
    the parser of the release inside that image, and means what the cookbook's command means to it."""
    assert runs["versions"] == {r: r for r in runs["versions"]}  # each venv holds the release it is named for
    assert set(runs["versions"]) == IMAGE_RELEASES
    failures = {k: v["error"] for k, v in runs["serve"].items() if k.startswith(("default:", "plain:")) and not v["ok"]}
    assert not failures
    for key, result in runs["serve"].items():
        if not key.startswith("plain:"):
            continue
        theirs = runs["serve"]["upstream:" + key[len("plain:"):]]
        assert theirs["ok"], (key, theirs["error"])
        assert result["ns"] == theirs["ns"], key
    amd = [k for k, r in runs["release_of"].items() if r == "0.5.13.post1" and k.startswith("default:")]
    assert amd and all(k.startswith("default:glm-5.3-") and "-mi3" in k for k in amd)
    dsv4_amd = [k for k, r in runs["release_of"].items() if r == "0.5.18" and k.startswith("default:")]
    assert dsv4_amd and all(k.startswith("default:deepseek-v4-pro-") and "-mi355x-" in k for k in dsv4_amd)
    print(f"\n{sum(1 for k in runs['serve'] if k.startswith(('default:', 'plain:')))} default renders of "
          f"{len(CELLS)} cells ({', '.join(f'{m} {r}' for m, r in DOCS)}) accepted by the parser of the release "
          f"that runs each: {', '.join(sorted(runs['versions']))}")


def test_0_5_13_post1_rejects_the_new_spelling_we_translate_away(runs: dict) -> None:
    """The rename rule (data/sglang/versions.yml) seen from the old release's own parser."""
    result = parse(parser_python("0.5.13.post1"), {"new": ["--model-path", "x", "--cuda-graph-max-bs-decode", "8"],
                                                   "old": ["--model-path", "x", "--cuda-graph-max-bs", "8"]})
    assert "unrecognized arguments: --cuda-graph-max-bs-decode" in result["serve"]["new"]["error"]
    assert result["serve"]["old"]["ok"] and result["serve"]["old"]["ns"]["cuda_graph_max_bs"] == 8


def test_knobs_mean_what_they_say(parsed: dict) -> None:
    ns = {k[len("knob:"):]: v["ns"] for k, v in parsed["serve"].items() if k.startswith("knob:")}
    assert (ns["mtp-516"]["speculative_algorithm"], ns["mtp-516"]["speculative_num_steps"]) == ("EAGLE", 5)
    assert ns["mtp-213-b300-ht"]["speculative_num_draft_tokens"] == 3
    assert ns["spec-off"]["speculative_algorithm"] is None
    assert ns["dflash2"]["speculative_algorithm"] == "DFLASH"
    assert ns["dflash2"]["speculative_draft_model_path"] == "/models/dflash2"
    assert ns["dflash2-dp-off"]["enable_dp_attention"] is False and ns["dflash2-dp-off"]["dp_size"] == 1
    assert (ns["dp4-deepep-ep8"]["dp_size"], ns["dp4-deepep-ep8"]["ep_size"]) == (4, 8)
    assert ns["dp4-deepep-ep8"]["moe_a2a_backend"] == "deepep" and ns["dp4-deepep-ep8"]["enable_dp_attention"]
    assert ns["dp-off"]["moe_a2a_backend"] == "deepep" and ns["dp-off"]["max_running_requests"] == 256
    assert (ns["cp"]["attn_cp_size"], ns["cp"]["enable_prefill_cp"], ns["cp"]["cp_strategy"]) == (8, True, "interleave")
    assert ns["cp-layer-split-pd"]["enable_dsa_cache_layer_split"] is True
    assert ns["cp-layer-split-pd"]["disaggregation_mode"] == "prefill"
    assert ns["hicache"]["enable_hierarchical_cache"] and ns["hicache"]["hicache_write_policy"] == "write_through"
    assert ns["hicache-file"]["hicache_storage_backend"] == "mooncake"
    assert ns["hicache-file"]["hicache_mem_layout"] == "page_first_direct"
    assert (ns["kv-fp8"]["kv_cache_dtype"], ns["kv-fp8"]["dsa_prefill_backend"]) == ("fp8_e4m3", "flashmla_sparse_q8")
    assert ns["pd-prefill"]["disaggregation_bootstrap_port"] == 9000 and ns["pd-prefill"]["port"] == 30000
    assert ns["pd-decode-nixl"]["disaggregation_transfer_backend"] == "nixl" and ns["pd-decode-nixl"]["port"] == 30100
    assert ns["pd-decode-nixl"]["disaggregation_ib_device"] == "mlx5_0"
    assert ns["parsers-reasoning-only"]["tool_call_parser"] is None
    assert ns["model-path"]["served_model_name"] == "zai-org/GLM-5.3"
    assert ns["extra-remove"]["dist_timeout"] == 3600 and ns["extra-remove"]["chunked_prefill_size"] is None
    assert ns["amd-uv-hicache"]["dsa_decode_backend"] == "tilelang"
    assert ns["amd-uv-cuda-graph"]["cuda_graph_max_bs_decode"] == 64
    assert (ns["tp16-dp-attention"]["nnodes"], ns["tp16-dp-attention"]["node_rank"]) == (2, 1)
    assert ns["tp16-dp-attention"]["dist_init_addr"] == "10.0.0.1:20000"
    assert (ns["dsv4-ngram"]["speculative_algorithm"], ns["dsv4-ngram"]["speculative_num_draft_tokens"]) == ("NGRAM", 16)
    assert ns["dsv4-ngram"]["speculative_ngram_max_bfs_breadth"] == 10
    assert (ns["dsv4-cp"]["attn_cp_size"], ns["dsv4-cp"]["cp_strategy"]) == (8, "interleave")
    tp16 = ns["dsv4-h200-fp8-tp16"]
    assert (tp16["tp_size"], tp16["dp_size"], tp16["nnodes"], tp16["speculative_num_steps"]) == (16, 16, 2, 3)
    assert tp16["model_path"] == "sgl-project/DeepSeek-V4-Pro-FP8" and tp16["trust_remote_code"] is True
    assert ns["qwen-dspark"]["speculative_draft_model_path"] == "/models/dspark"
    assert ns["qwen-dspark"]["speculative_algorithm"] == "DSPARK" and ns["qwen-dspark"]["tool_call_parser"] == "qwen3_coder"
    assert (ns["qwen-mtp-h200"]["speculative_num_draft_tokens"], ns["qwen-mtp-h200"]["tp_size"]) == (4, 1)


def test_router_commands_parse(parsed: dict) -> None:
    pd, plain = parsed["router"]["example-pd"], parsed["router"]["plain"]
    assert pd["ok"], pd["error"]
    assert plain["ok"], plain["error"]
    assert pd["ns"]["pd_disaggregation"] is True
    assert pd["ns"]["prefill"] == [["http://10.0.0.1:30000", "9000"]]
    assert pd["ns"]["decode"] == [["http://10.0.0.2:30100"]]
    assert plain["ns"]["worker_urls"] == ["http://a:30000", "http://b:30000"]


@pytest.mark.parametrize("release", sorted(IMAGE_RELEASES))
def test_committed_flag_table_is_what_the_parser_accepts(release: str) -> None:
    if not PARSER_PY:
        pytest.skip("SGLANG_PARSER_PYTHON is not set")
    python = parser_python(release)
    assert python, f"no parser venv for SGLang {release}"
    proc = subprocess.run([python, str(ROOT / "tools" / "sglang_flag_table.py"), "--from-parser"],
                          capture_output=True, text=True, check=True, timeout=300)
    committed = (ROOT / "data" / "sglang" / f"flags-{release}.yml").read_text(encoding="utf-8")
    assert yaml.safe_load(proc.stdout) == yaml.safe_load(committed), \
        f"data/sglang/flags-{release}.yml is stale: regenerate it with tools/sglang_flag_table.py --from-parser"


# --- the fixture site's imported pages (issue 38): every imported cell means the page's command to its release ----

SITE_CELLS = [(model, cell) for model in sorted(site_models()) for cell in site_cells(model)]


@pytest.fixture(scope="module")
def site_parsed() -> dict[str, Any]:
    """Every imported cell of tests/fixtures/cookbook-site rendered as the page writes it (metrics off, the page's
    parsers where the cell names them) beside the page's own command, both parsed by the release that runs it."""
    if not PARSER_PY:
        pytest.skip("SGLANG_PARSER_PYTHON is not set (make slow sets it)")
    by_release: dict[str, dict[str, list[str]]] = {}
    for model, cell in SITE_CELLS:
        sel, _tokens, _variant = page_selection(model, cell)
        release = recipe_engine.recipe(sel)["sglang_version"]
        batch = by_release.setdefault(release, {})
        for rank in range(cell["nodes"]):
            key = f"{model}-{cell['gpu']}-{cell['quant']}-{cell['strategy']}-{cell['nodes']}#{rank}"
            batch[f"ours:{key}"] = recipe_engine.serve_args(sel, rank, "10.0.0.1" if cell["nodes"] > 1 else None)
            theirs = page_tokens_at(model, cell, rank)
            batch[f"page:{key}"] = [UPSTREAM_FOR_0523.get(t, t) for t in theirs] if release == PINNED else theirs
    missing = sorted(r for r in by_release if not parser_python(r))
    assert not missing, f"no parser venv for SGLang {', '.join(missing)}"
    out: dict[str, Any] = {}
    for release, batch in by_release.items():
        out.update(parse(parser_python(release), batch)["serve"])
    return out


def test_every_imported_page_cell_is_read_as_the_pages_command(site_parsed: dict[str, Any]) -> None:
    pairs = [k[len("ours:"):] for k in site_parsed if k.startswith("ours:")]
    assert len(SITE_CELLS) == 97 and len(pairs) >= 97
    for key in pairs:
        ours, page = site_parsed[f"ours:{key}"], site_parsed[f"page:{key}"]
        assert page["ok"], (key, page["error"])
        assert ours["ok"], (key, ours["error"])
        assert ours["ns"] == page["ns"], key
    print(f"\n{len(pairs)} command lines of {len(SITE_CELLS)} cells of {len(site_models())} imported models read by "
          "their release's parser exactly as the pages' own commands")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
