# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One wrapper for every filter plugin of the collection (controller side only; no module imports it):
arguments become plain Python data, and a RecipeError becomes an AnsibleFilterError with its message unchanged."""
from __future__ import annotations

from typing import Any, Callable

from ansible.errors import AnsibleFilterError

from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
    def filter_func(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*(to_plain(a) for a in args), **{k: to_plain(v) for k, v in kwargs.items()})
        except RecipeError as exc:
            raise AnsibleFilterError(str(exc)) from exc
    filter_func.__name__ = func.__name__
    filter_func.__doc__ = func.__doc__
    return filter_func
