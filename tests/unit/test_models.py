"""What differs per model is data (data/models/<id>/model.yml), and the knobs read it: DeepSeek-V4-Pro and
Qwen3.8-27B against what their cookbook pages say (tests/fixtures/upstream/<page>/<revision>/), beside GLM-5.3.
"""
from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import checkpoint_of, load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

DSV4 = {"model": "deepseek-v4-pro"}
QWEN = {"model": "qwen3.8-27b"}


def refuses(selection: dict[str, Any], pattern: str) -> None:
    with pytest.raises(RecipeError, match=pattern):
        recipe_engine.recipe(selection)


def ns(args: list[str]) -> dict[str, Any]:
    """--flag value pairs of a rendered command (switches as True)."""
    out: dict[str, Any] = {}
    for i, token in enumerate(args):
        if token.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[token] = True if nxt is None or nxt.startswith("--") else nxt
    return out


def test_unset_precision_is_the_models_default() -> None:
    """DeepSeek-V4-Pro: the page's FP4 checkpoint (cells on every NVIDIA GPU); Qwen3.8-27B and GLM-5.3: fp8."""
    assert recipe_engine.recipe({**DSV4, "gpu": "b200", "strategy": "low-latency"})["checkpoint"] == \
        "deepseek-ai/DeepSeek-V4-Pro"
    assert recipe_engine.recipe({**QWEN, "gpu": "h200"})["checkpoint"] == "Qwen/Qwen3.8-27B-FP8"
    assert recipe_engine.recipe({"gpu": "h200", "strategy": "low-latency"})["quant"] == "fp8"
    refuses({**DSV4, "gpu": "b200", "quant": "bf16"},
            r"sglang_quant: deepseek-v4-pro has no bf16 checkpoint; it has fp4, fp8, nvfp4")


def test_a_gpu_can_need_another_checkpoint_of_the_precision() -> None:
    """The page: "H200 FP8 needs the sgl-project repackaging (Hopper can't run FP4-mixed Instruct)"."""
    model = load_catalog().models["deepseek-v4-pro"]
    assert checkpoint_of(model, "h200", "fp8")["id"] == "sgl-project/DeepSeek-V4-Pro-FP8"
    assert checkpoint_of(model, "b200", "fp8")["id"] == "deepseek-ai/DeepSeek-V4-Pro"
    rec = recipe_engine.recipe({**DSV4, "gpu": "h200", "quant": "fp8", "strategy": "balanced", "nodes": 2,
                                "model_path": "/models/dsv4"})
    assert rec["served_model_name"] == "sgl-project/DeepSeek-V4-Pro-FP8"
    with pytest.raises(RecipeError, match=r"sglang_recipes\[0\].checkpoints.fp8.gpus.h200: expected \{id:"):
        load_catalog([{"id": "x", "checkpoints": {"fp8": {"id": "a/b", "gpus": {"h200": "c/d"}}}}])


def test_the_two_node_h200_fp8_cell_runs_tp16_over_both() -> None:
    args = recipe_engine.serve_args({**DSV4, "gpu": "h200", "quant": "fp8", "strategy": "high-throughput",
                                     "nodes": 2}, 1, "10.0.0.1")
    flags = ns(args)
    assert (flags["--tp-size"], flags["--dp-size"], flags["--nnodes"], flags["--node-rank"]) == ("16", "16", "2", "1")
    assert args.index("--nnodes") == args.index("--enable-dp-attention") + 1
    assert flags["--dist-init-addr"] == "10.0.0.1:20000" and flags["--trust-remote-code"] is True


def test_parsers_are_the_models() -> None:
    flags = ns(recipe_engine.serve_args({**DSV4, "gpu": "gb300", "strategy": "balanced"}))
    assert (flags["--reasoning-parser"], flags["--tool-call-parser"]) == ("deepseek-v4", "deepseekv4")
    plain = ns(recipe_engine.serve_args({**DSV4, "gpu": "gb300", "strategy": "balanced", "parsers": False}))
    assert "--reasoning-parser" not in plain and "--tool-call-parser" not in plain
    qwen = ns(recipe_engine.serve_args({**QWEN, "gpu": "h200", "quant": "bf16"}))
    assert (qwen["--reasoning-parser"], qwen["--tool-call-parser"]) == ("qwen3", "qwen3_coder")


def test_a_shell_quoted_value_reaches_the_command_as_one_token() -> None:
    """--deepep-config '{"normal_dispatch":...}' on the page: the JSON text, quotes removed, as one argv token."""
    args = recipe_engine.serve_args({**DSV4, "gpu": "gb300", "strategy": "balanced"})
    assert args[args.index("--deepep-config") + 1] == \
        '{"normal_dispatch":{"num_sms":96},"normal_combine":{"num_sms":96}}'


def test_speculative_presets_are_the_models() -> None:
    mtp = ns(recipe_engine.serve_args({**DSV4, "gpu": "b200", "strategy": "low-latency", "speculative": "mtp-112"}))
    assert (mtp["--speculative-num-steps"], mtp["--speculative-num-draft-tokens"]) == ("1", "2")
    refuses({**DSV4, "gpu": "b200", "strategy": "low-latency", "speculative": "mtp-516"},
            r"sglang_speculative: 'mtp-516' is not a preset of deepseek-v4-pro; presets: inherit, off, mtp-314, "
            r"mtp-112, ngram")
    # NGRAM "is incompatible with DP-Attention" (the page); the balanced B200 cell runs DP8
    refuses({**DSV4, "gpu": "b200", "strategy": "balanced", "speculative": "ngram"},
            r"sglang_speculative: ngram rejects DP-attention, which the balanced cell turns on")
    ngram = ns(recipe_engine.serve_args({**DSV4, "gpu": "b200", "strategy": "low-latency", "speculative": "ngram"}))
    assert ngram["--speculative-algorithm"] == "NGRAM" and "--speculative-eagle-topk" not in ngram
    # MTP on AMD: the page's MI355X cells run EAGLE themselves
    amd = recipe_engine.recipe({**DSV4, "gpu": "mi355x", "strategy": "low-latency", "speculative": "mtp-112",
                                "install_method": "uv"})
    assert "--speculative-num-draft-tokens" in amd["args"]
    refuses({**DSV4, "gpu": "b200", "strategy": "low-latency", "draft_model_path": "/x"},
            r"sglang_draft_model_path: only a draft-model preset uses it \(sglang_speculative: none of "
            r"deepseek-v4-pro\)")


def test_qwen_dspark_takes_a_local_drafter() -> None:
    flags = ns(recipe_engine.serve_args({**QWEN, "gpu": "gb300", "strategy": "balanced", "speculative": "dspark",
                                         "draft_model_path": "/models/dspark"}))
    assert (flags["--speculative-algorithm"], flags["--speculative-draft-model-path"]) == ("DSPARK", "/models/dspark")
    refuses({**QWEN, "gpu": "gb300", "strategy": "balanced", "draft_model_path": "/x"},
            r"only a draft-model preset uses it \(sglang_speculative: dspark\)")


def test_a_dense_model_has_no_moe_knobs() -> None:
    refuses({**QWEN, "gpu": "h200", "moe_a2a": "deepep"},
            r"sglang_moe_a2a: qwen3.8-27b is a dense model \(no experts; model.yml moe: false\)")
    refuses({**QWEN, "gpu": "h200", "ep": 1}, r"sglang_ep: qwen3.8-27b is a dense model")
    ep = ns(recipe_engine.serve_args({**DSV4, "gpu": "b200", "strategy": "low-latency", "ep": 8}))
    assert ep["--ep-size"] == "8"


def test_context_parallel_follows_the_models_page() -> None:
    refuses({**QWEN, "gpu": "h200", "context_parallel": {"size": 1}},
            r"sglang_context_parallel: qwen3.8-27b has no prefill context parallelism")
    refuses({**DSV4, "gpu": "b200", "strategy": "low-latency", "context_parallel": {"size": 8, "strategy": "zigzag"}},
            r"sglang_context_parallel.strategy: zigzag: DeepSeek-V4 supports only interleave prefill CP")
    refuses({**DSV4, "gpu": "b200", "strategy": "low-latency",
             "context_parallel": {"size": 8, "layer_split": True}, "pd": {"role": "prefill"}},
            r"sglang_context_parallel.layer_split: deepseek-v4-pro does not support LayerSplit")
    cp = ns(recipe_engine.serve_args({**DSV4, "gpu": "b200", "strategy": "low-latency",
                                      "context_parallel": {"size": 8}}))
    assert (cp["--attn-cp-size"], cp["--cp-strategy"]) == ("8", "interleave")


def test_hopper_fp8_kv_is_glms_recipe_only() -> None:
    refuses({**DSV4, "gpu": "h200", "strategy": "balanced", "kv_cache_fp8": True},
            r"sglang_kv_cache_fp8: deepseek-v4-pro has no Hopper FP8 KV-cache recipe")
    refuses({**QWEN, "gpu": "h200", "kv_cache_fp8": True}, r"sglang_kv_cache_fp8: qwen3.8-27b has no Hopper FP8")
    glm = ns(recipe_engine.serve_args({"gpu": "h200", "strategy": "high-throughput", "kv_cache_fp8": True}))
    assert glm["--dsa-decode-backend"] == "flashmla_kv"


def test_a_one_gpu_cell_takes_one_gpu_of_the_node() -> None:
    for gpu in ("h200", "gb300"):
        rec = recipe_engine.recipe({**QWEN, "gpu": gpu, "strategy": "balanced"})
        assert (rec["gpus_per_node"], rec["nodes"]) == (1, 1)
