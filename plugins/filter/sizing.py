# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/size.yml over plugins/plugin_utils/sizing/capacity.py (logic and tests there): capacity
and capacity_markdown. Docs live in the .yml sidecars."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import capacity as sizing


def capacity(request: dict[str, Any], measured: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    if measured is not None and not isinstance(measured, list):
        raise RecipeError(f"capacity: measured must be a list of benchmark runs (rendered/benchmark/<host>.json), "
                          f"got {type(measured).__name__}")
    return sizing.capacity(request, measured or [])


def capacity_markdown(result: dict[str, Any]) -> str:
    if not isinstance(result, dict) or "rows" not in result:
        raise RecipeError("capacity_markdown: expected the result of metalserve.sglang.capacity")
    return sizing.markdown(result)


class FilterModule:
    """metalserve.sglang sizing filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"capacity": _wrap(capacity), "capacity_markdown": _wrap(capacity_markdown)}
