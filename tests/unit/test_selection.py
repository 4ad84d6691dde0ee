"""Selection input: types, defaults and the messages for YAML type mistakes."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.engine import recipe
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import normalize

SCHEMA = load_catalog().variables["recipe"]


def test_defaults() -> None:
    sel = normalize({"gpu": "h200"}, SCHEMA)
    # quant: the model's default_quant (the engine fills it); strategy: required where there is a choice
    assert (sel["model"], sel["quant"], sel["strategy"], sel["nodes"], sel["host"]) == (
        "glm-5.3", None, None, 1, "0.0.0.0")
    assert sel["parsers"] is True and sel["speculative"] == "inherit" and sel["env"] == {}


def test_numeric_strings_are_accepted_like_extra_vars() -> None:
    # -e sglang_nodes=2 arrives as a string
    sel = normalize({"gpu": "h200", "nodes": "2", "port": "31000", "kv_cache_fp8": "yes"}, SCHEMA)
    assert sel["nodes"] == 2 and sel["port"] == 31000 and sel["kv_cache_fp8"] is True


@pytest.mark.parametrize("selection,message", [
    ({"gpu": "h200", "nodes": "two"}, r"sglang_nodes: expected an integer, got str 'two'"),
    ({"gpu": "h200", "nodes": True}, r"sglang_nodes: expected an integer, got the boolean True"),
    ({"gpu": "h200", "port": -1}, r"sglang_port: -1 is not a TCP port \(1-65535\)"),
    ({"gpu": "h200", "port": "30000a"}, r"sglang_port: expected an integer, got str '30000a'"),
    ({"gpu": "h200", "port": 70000}, r"sglang_port: 70000 is not a TCP port"),
    ({"gpu": "h200", "env": ["A=1"]}, r"sglang_env: expected a mapping \(key: value\), got list"),
    ({"gpu": "h200", "remove_args": "--x"}, r"sglang_remove_args: expected a list, got str"),
    ({"gpu": "h200", "strategy": ["fast"]}, r"sglang_strategy: expected a string, got list"),
    ({"gpu": "h200", "install_method": "pip"}, r"sglang_install_method: 'pip' is not one of docker, uv"),
    ({"gpu": "h200", "nodes": 0}, r"sglang_nodes: 0 must be 1 or more"),
    ({"gpu": "h200", "kv_cache_fp8": "maybe"}, r"sglang_kv_cache_fp8: expected true or false"),
    ({"gpu": "h200", "tp": 8}, r"selection: unknown key\(s\) tp; known keys:"),
    ("h200", r"selection: expected a mapping such as"),
])
def test_type_mistakes_name_the_variable(selection: object, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        normalize(selection, SCHEMA)


@pytest.mark.parametrize("selection,message", [
    ({"gpu": "h100"}, r"sglang_gpu: 'h100' is not a GPU the recipes know; known: b200, b300, gb300, h200, mi300x, "
                      r"mi325x, mi355x \(add one with sglang_gpu_platforms\)"),
    ({}, r"sglang_gpu: not set; glm-5.3 has recipes for b200, b300, gb300, h200, mi300x, mi325x, mi355x"),
    ({"gpu": "h200", "model": "glm-6"}, r"sglang_model: 'glm-6' has no recipes; known models: deepseek-v4-pro, glm-5.3, qwen3.8-27b"),
    ({"gpu": "h200", "quant": "bf16"}, r"sglang_nodes: bf16 on h200 needs sglang_nodes: 2 \(TP16 over two 8-GPU "
                                       r"nodes\); single-node h200 offers: fp8 x low-latency/high-throughput"),
    ({"gpu": "b300", "quant": "bf16", "nodes": 2}, r"sglang_nodes: bf16 on b300 needs sglang_nodes: 1 \(TP8 on one "
                                                   r"8-GPU node\); b300 has no 2-node recipe"),
    ({"gpu": "h200", "nodes": 3}, r"sglang_nodes: fp8 on h200 needs sglang_nodes: 1"),
    ({"gpu": "mi300x", "quant": "bf16"}, r"sglang_quant: bf16 on mi300x is not in the glm-5.3 recipes \(the ~1510 GB "
                                         r"bf16 weights leave no KV-cache room in one mi300x node's 1536 GB\)"),
    ({"gpu": "h200", "quant": "nvfp4"}, r"nvfp4 on h200 is not in the glm-5.3 recipes \(nvfp4 needs blackwell GPUs; "
                                        r"h200 is hopper\)"),
])
def test_outside_the_matrix(selection: dict, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        recipe(selection)
