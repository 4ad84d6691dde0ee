"""The one wrapper every filter plugin uses: plain data in, AnsibleFilterError out, name and doc kept."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def refuse(value: str, *, variable: str = "sglang_gpu") -> str:
    """Refuses everything."""
    raise RecipeError(f"{variable}: {value!r} is not known")


def echo(value: object, *, extra: object = None) -> tuple:
    return type(value).__name__, type(extra).__name__


def test_a_recipe_error_becomes_a_filter_error_with_the_same_message() -> None:
    with pytest.raises(AnsibleFilterError, match="sglang_server_gpu: 'x' is not known"):
        wrap(refuse)("x", variable="sglang_server_gpu")


def test_positional_and_keyword_arguments_arrive_as_plain_data() -> None:
    class Tagged(str):
        pass
    assert wrap(echo)(Tagged("a"), extra=Tagged("b")) == ("str", "str")


def test_name_and_doc_are_kept() -> None:
    wrapped = wrap(refuse)
    assert wrapped.__name__ == "refuse" and wrapped.__doc__ == "Refuses everything."
