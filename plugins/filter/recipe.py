# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the recipe engine (GLM-5.3, DeepSeek-V4-Pro, Qwen3.8-27B and site models): recipe, serve_args,
router_args.

Thin by design: they call plugins/plugin_utils/recipe/engine.py and turn its RecipeError into
AnsibleFilterError with the engine's message unchanged. Docs live in the .yml sidecars.
"""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def recipe(selection: dict[str, Any]) -> dict[str, Any]:
    return recipe_engine.recipe(selection)


def serve_args(selection: dict[str, Any], node_rank: int = 0, head_address: str | None = None) -> list[str]:
    return recipe_engine.serve_args(selection, node_rank, head_address)


def router_args(spec: dict[str, Any]) -> list[str]:
    return recipe_engine.router_args(spec)


def gpu_platform(gpu: str, gpu_platforms: dict[str, Any] | None = None) -> dict[str, Any]:
    """The platform table entry of a GPU id (data/gpus.yml plus sglang_gpu_platforms)."""
    table = load_catalog(gpu_platforms=gpu_platforms).gpus
    if gpu not in table:
        raise RecipeError(f"sglang_gpu: {gpu!r} is not a GPU the recipes know; known: {', '.join(sorted(table))} "
                          "(add one with sglang_gpu_platforms)")
    return dict(table[gpu], id=gpu)


class FilterModule:
    """metalserve.sglang recipe filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {
            "recipe": _wrap(recipe),
            "serve_args": _wrap(serve_args),
            "router_args": _wrap(router_args),
            "gpu_platform": _wrap(gpu_platform),
        }
