"""Site recipes (sglang_recipes) and GPU platforms (sglang_gpu_platforms) are data, not code."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.engine import recipe, serve_args
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

TINY = {
    "id": "tiny-moe",
    "checkpoints": {"bf16": {"id": "example-org/Tiny-MoE", "size_gb": 30}},
    "images": {"h200": {"ref": "registry.local/sglang:v0.5.23-cu129"}},
    "cells": [{"gpu": "h200", "quant": "bf16", "strategy": "balanced", "nodes": 1, "verified": True,
               "flags": {"--tp-size": 2, "--mem-fraction-static": "0.7"}}],
}


def test_a_new_model_is_a_data_change() -> None:
    rec = recipe({"model": "tiny-moe", "gpu": "h200", "quant": "bf16", "recipes": [TINY]})
    assert rec["args"] == ["--model-path", "example-org/Tiny-MoE", "--tp-size", "2", "--mem-fraction-static", "0.7",
                           "--enable-metrics", "--host", "0.0.0.0", "--port", "30000"]
    assert rec["gpus_per_node"] == 2 and rec["origin"] == "site" and rec["sglang_version"] == "0.5.23"
    assert rec["warnings"] == []


def test_a_site_cell_replaces_the_cookbook_cell_and_keeps_the_rest() -> None:
    site = {"id": "glm-5.3", "cells": [{"gpu": "h200", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                                        "flags": {"--tp-size": 8, "--mem-fraction-static": "0.88"}}]}
    rec = recipe({"gpu": "h200", "quant": "fp8", "strategy": "balanced", "parsers": False, "recipes": [site]})
    assert rec["args"][2:6] == ["--tp-size", "8", "--mem-fraction-static", "0.88"]
    assert rec["origin"] == "site" and not rec["verified"]
    assert any("from sglang_recipes, marked unverified" in w for w in rec["warnings"])
    untouched = recipe({"gpu": "h200", "quant": "fp8", "strategy": "low-latency", "recipes": [site]})
    assert untouched["origin"] == "cookbook" and untouched["checkpoint"] == "zai-org/GLM-5.3"


def test_a_new_gpu_is_a_data_change() -> None:
    platforms = {"h100": {"vendor": "nvidia", "arch": "hopper", "gpus_per_node": 8, "vram_gb": 80}}
    site = {"id": "glm-5.3", "images": {"h100": {"ref": "lmsysorg/sglang:v0.5.23-cu129"}},
            "cells": [{"gpu": "h100", "quant": "fp8", "strategy": "balanced", "nodes": 2, "flags": {"--tp-size": 16}}]}
    args = serve_args({"gpu": "h100", "nodes": 2, "recipes": [site], "gpu_platforms": platforms}, 1, "10.0.0.5")
    assert args[:10] == ["--model-path", "zai-org/GLM-5.3", "--tp-size", "16", "--nnodes", "2", "--node-rank", "1",
                         "--dist-init-addr", "10.0.0.5:20000"]


def test_a_recipe_larger_than_the_node_is_refused() -> None:
    site = {"id": "glm-5.3", "cells": [{"gpu": "gb300", "quant": "fp8", "strategy": "balanced", "nodes": 1,
                                        "flags": {"--tp-size": 8}}]}
    with pytest.raises(RecipeError, match=r"^sglang_recipes \(cell gb300/fp8/balanced\): --tp-size 8 asks for 8 GPUs per "
                                          r"node in glm-5.3 gb300/fp8/balanced/1 node; a gb300 node has 4"):
        recipe({"gpu": "gb300", "strategy": "balanced", "recipes": [site]})


@pytest.mark.parametrize("recipes,message", [
    ("glm", r"sglang_recipes\[0\]: 'glm' is a relative path; write the folder absolutely"),
    (3, r"sglang_recipes: expected a list of model documents, got int"),
    ([{"cells": []}], r"sglang_recipes\[0\]: missing 'id'"),
    ([{"id": "x", "cells": {"gpu": "h200"}}], r"sglang_recipes\[0\].cells: expected a list of cells"),
    ([{"id": "x", "cells": [{"quant": "fp8", "strategy": "s"}]}], r"sglang_recipes\[0\].cells\[0\]: missing 'gpu'"),
    ([{"id": "x", "cells": [{"gpu": "h200", "quant": "fp8", "strategy": "s", "flags": {"tp-size": 2}}]}],
     r"sglang_recipes\[0\].cells\[0\].flags: 'tp-size' must be written with its leading '--'"),
    ([{"id": "x", "cells": [{"gpu": "h200", "quant": "fp8", "strategy": "s", "nodes": "2"}]}],
     r"sglang_recipes\[0\].cells\[0\].nodes: expected a positive integer, got '2'"),
    ([{"id": "x", "checkpoints": {"fp8": "org/x"}}], r"sglang_recipes\[0\].checkpoints.fp8: expected \{id:"),
])
def test_bad_site_recipes(recipes: object, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        recipe({"gpu": "h200", "recipes": recipes})


def test_bad_gpu_platform() -> None:
    with pytest.raises(RecipeError, match=r"sglang_gpu_platforms.h100: needs 'gpus_per_node'"):
        recipe({"gpu": "h100", "gpu_platforms": {"h100": {"vendor": "nvidia", "vram_gb": 80}}})


def test_a_retired_model_field_is_read_as_before_and_warns() -> None:
    """verify.reasoning_toggle (the key alone; issue 38 made request shapes whole values) is still read, as
    requests.reasoning {chat_template_kwargs: {<key>: true}}, and every host serving the model is told to move on:
    the developers' guide has a retired option warn for a minor release before it is refused."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import catalog
    old = {**TINY, "verify": {"reasoning_toggle": "thinking"}}
    rec = recipe({"model": "tiny-moe", "gpu": "h200", "quant": "bf16", "recipes": [old]})
    assert rec["warnings"] == ["sglang_recipes[0]: verify.reasoning_toggle is retired and will be refused in a later "
                               "minor release; write requests: {reasoning: {chat_template_kwargs: {thinking: true}}} "
                               "instead (what it is read as now)"]
    model = catalog.load_catalog([old]).models["tiny-moe"]
    assert model.requests["reasoning"] == {"chat_template_kwargs": {"thinking": True}}
