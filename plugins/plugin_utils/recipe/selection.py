# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a selection dict (the sglang_* inventory variables without their prefix) into checked values.

Types, defaults and fixed choices come from data/variables.yml; choices that depend on the recipe
data (GPU ids, models) are checked by the engine, which knows what exists.
"""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import secret_shapes
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import Mistakes, RecipeError

PREFIX = "sglang_"
TRUE_WORDS = {"true", "yes", "on", "1"}
FALSE_WORDS = {"false", "no", "off", "0"}


def variable_name(key: str, schema: dict[str, dict[str, Any]]) -> str:
    for name, spec in schema.items():
        if spec.get("key") == key:
            return name
    return PREFIX + key


def coerce(value: Any, kind: str, name: str) -> Any:
    """Coerce like Ansible's argument specs do: '8' is an int, 'yes' a bool; 'eight' is an error."""
    if value is None or kind == "any":
        return value
    if kind == "int":
        if isinstance(value, bool):
            raise RecipeError(f"{name}: expected an integer, got the boolean {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        raise RecipeError(f"{name}: expected an integer, got {type(value).__name__} {secret_shapes.masked(value)}")
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in TRUE_WORDS | FALSE_WORDS:
            return value.lower() in TRUE_WORDS
        raise RecipeError(f"{name}: expected true or false, got {type(value).__name__} {secret_shapes.masked(value)}")
    if kind == "str":
        if isinstance(value, bool):
            # YAML 1.1 reads an unquoted off/no as false: the one string knob value that means it
            return "off" if value is False else "on"
        if isinstance(value, (str, int, float)):
            return str(value)
        raise RecipeError(f"{name}: expected a string, got {type(value).__name__} {secret_shapes.masked(value)}")
    if kind == "dict":
        if isinstance(value, dict):
            return value
        raise RecipeError(f"{name}: expected a mapping (key: value), got {type(value).__name__} {secret_shapes.masked(value)}")
    if kind == "list":
        if isinstance(value, (list, tuple)):
            return list(value)
        raise RecipeError(f"{name}: expected a list, got {type(value).__name__} {secret_shapes.masked(value)}")
    raise ValueError(f"variables.yml: unknown type {kind!r} for {name}")


def normalize(selection: Any, schema: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Checked selection: every known key present (defaults filled), unknown keys refused; every value of the wrong
    type or outside its choices is named at once."""
    out, mistakes = checked_selection(selection, schema)
    mistakes.raise_any()
    return out


def checked_selection(selection: Any, schema: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], Mistakes]:
    """(selection with defaults filled, the mistakes found): a value that is refused stands at its default, so the
    engine can go on and name the other mistakes of the same host in the same run."""
    if not isinstance(selection, dict):
        raise RecipeError(f"selection: expected a mapping such as {{gpu: h200, quant: fp8}}, got {type(selection).__name__}")
    keys = {spec["key"]: (name, spec) for name, spec in schema.items() if "key" in spec}
    unknown = sorted(set(selection) - set(keys))
    if unknown:
        raise RecipeError(
            f"selection: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(keys))}"
        )
    out: dict[str, Any] = {}
    mistakes = Mistakes()
    for key, (name, spec) in keys.items():
        out[key] = mistakes.attempt(_checked, selection.get(key), name, spec, fallback=spec.get("default"))
    for port_key in ("port", "dist_port"):
        port = out[port_key]
        if port is not None and not 1 <= port <= 65535:
            mistakes.add(f"{variable_name(port_key, schema)}: {port} is not a TCP port (1-65535)")
            out[port_key] = spec_default(schema, port_key)
    if out["nodes"] < 1:
        mistakes.add(f"sglang_nodes: {out['nodes']} must be 1 or more")
        out["nodes"] = spec_default(schema, "nodes")
    return out, mistakes


def spec_default(schema: dict[str, dict[str, Any]], key: str) -> Any:
    return schema[variable_name(key, schema)].get("default")


def _checked(raw: Any, name: str, spec: dict[str, Any]) -> Any:
    value = spec.get("default") if raw is None else coerce(raw, spec["type"], name)
    choices = spec.get("choices")
    if value is not None and choices and value not in choices:
        raise RecipeError(f"{name}: {value!r} is not one of {', '.join(map(str, choices))}")
    return value
