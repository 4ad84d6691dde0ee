# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The schema of a model's data: model.yml, cookbook/<revision>/cells.yml and benchmarks.yml, and the source.yml
note beside an imported page (docs/recipes.md describes every field). The catalog checks every shipped model, every
site folder and every sglang_recipes entry against it before planning, so a malformed file is refused with its file
and field named, every mistake at once. Pure; controller only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


class SchemaError(RecipeError):
    pass


@dataclass(frozen=True)
class Spec:
    kind: str  # str | bool | int | number | any | list | map | record | scalar
    item: Any = None  # list/map: the Spec of each item; record: {key: Spec}
    required: tuple[str, ...] = ()


STR, BOOL, INT, NUMBER, ANY, SCALAR = Spec("str"), Spec("bool"), Spec("int"), Spec("number"), Spec("any"), Spec("scalar")
OPTSTR = Spec("optstr")  # a string or null
OPTINT = Spec("optint")  # an integer or null
STRS = Spec("list", STR)
FLAGS = Spec("map", SCALAR)  # --flag: value (true for a switch)
BODY = Spec("map", ANY)  # fields merged into a request body
CHECKPOINT = Spec("record", {"id": STR, "size_gb": NUMBER, "architectures": STRS, "experimental": BOOL, "note": STR,
                             "gpus": Spec("map", Spec("record", {"id": STR, "size_gb": NUMBER}, ("id",)))}, ("id",))
PRESET = Spec("record", {"flags": FLAGS, "vendors": STRS, "min_sglang": STR, "rejects_dp_attention": BOOL,
                         "draft_model": STR, "note": STR}, ("flags",))
IMAGE = Spec("record", {"ref": STR, "sglang_version": STR}, ("ref",))
CELL = Spec("record", {"gpu": STR, "quant": STR, "strategy": STR, "nodes": INT, "verified": BOOL,
                       "env": Spec("map", SCALAR), "flags": FLAGS}, ("gpu", "quant", "strategy"))
MODEL = Spec("record", {
    "id": STR, "display_name": STR, "source": STR, "min_sglang": STR, "default_quant": STR, "moe": BOOL,
    "architecture": STR,
    "cookbook": Spec("record", {"page": STR, "variant": STR}, ("page",)), "cookbook_revisions": STRS,
    "checkpoints": Spec("map", CHECKPOINT),
    "parsers": Spec("record", {"reasoning": STR, "tool_call": STR}),
    "requests": Spec("record", {"reasoning": BODY, "tool_call": BODY}),
    "verify": Spec("record", {"think_start": STR, "tool_call_start": STR, "reasoning_toggle": STR}),
    "speculative_presets": Spec("map", PRESET), "hopper_fp8_kv_flags": FLAGS,
    "context_parallel": Spec("record", {"strategies": STRS, "unavailable_strategies": Spec("map", STR),
                                        "layer_split": BOOL}),
    "image_check": Spec("map", ANY), "images": Spec("map", IMAGE), "cells": Spec("list", CELL)}, ("id",))
HEADER = {"revision": STR, "commit": STR, "source": STR}
CELLS_FILE = Spec("record", {**HEADER, "checkpoints": Spec("map", STR), "checkpoints_by_gpu": Spec("map", Spec("map", STR)),
                             "images": Spec("map", IMAGE), "cells": Spec("list", CELL)},
                  ("revision", "commit", "images", "cells"))
POINT = Spec("record", {"concurrency": INT, "ttft_ms": NUMBER, "tpot_ms": NUMBER, "tok_s_per_gpu": NUMBER,
                        "dataset": STR, "isl": INT, "osl": INT, "prompts": INT}, ("concurrency", "tok_s_per_gpu"))
WORKLOAD = Spec("record", {"dataset": STR, "isl": OPTINT, "osl": OPTINT, "range_ratio": NUMBER, "warmup_requests": INT,
                           "backend": STR, "extra_args": STRS})
ROW = Spec("row", {"gpu": STR, "quant": STR, "strategy": STR, "nodes": INT, "sglang": OPTSTR, "latency": STR,
                   "simulated_accept_length": NUMBER, "speed": Spec("list", POINT)}, ("gpu", "quant", "strategy"))
BENCHMARKS_FILE = Spec("record", {**HEADER, "workload": WORKLOAD, "prompts_per_concurrency": Spec("map", INT),
                                  "cells": Spec("list", ROW)}, ("revision", "commit", "cells"))
SOURCE = Spec("record", {"revision": STR, "repository": STR, "path": STR, "config_file": STR,
                         "benchmarks_file": STR, "config_commit": STR, "benchmarks_commit": STR, "config_chars": INT,
                         "benchmarks_chars": INT, "architecture": STR, "read": STR},
              ("revision", "repository", "path", "config_file", "benchmarks_file", "config_commit",
               "benchmarks_commit"))

_TYPES = {"str": (str,), "optstr": (str, type(None)), "optint": (int, type(None)), "bool": (bool,), "int": (int,),
          "number": (int, float), "scalar": (str, int, float, bool)}
_NAMES = {"str": "a string", "optstr": "a string or null", "optint": "an integer or null", "bool": "true or false", "int": "an integer", "number": "a number",
          "scalar": "a string, number or true", "list": "a list", "map": "a mapping", "record": "a mapping",
          "row": "a mapping"}


def _type_ok(value: Any, spec: Spec) -> bool:
    if spec.kind in ("any",):
        return True
    if spec.kind in ("list",):
        return isinstance(value, list)
    if spec.kind in ("map", "record", "row"):
        return isinstance(value, dict)
    if isinstance(value, bool) and spec.kind in ("int", "number", "optint"):
        return False
    return isinstance(value, _TYPES[spec.kind]) or value is None and spec.kind in ("number",)


def _at(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def problems(value: Any, spec: Spec, where: str = "") -> list[str]:
    """Every mistake of value against spec, each naming its field (where: the field path, '' for the whole file)."""
    if not _type_ok(value, spec):
        return [f"{where or 'the file'}: expected {_NAMES[spec.kind]}, got {type(value).__name__} {value!r:.60}"]
    if spec.kind == "list":
        return [p for i, item in enumerate(value) for p in problems(item, spec.item, f"{where}[{i}]")]
    if spec.kind == "map":
        return [p for key, item in value.items() for p in problems(item, spec.item, _at(where, key))]
    if spec.kind in ("record", "row"):
        return _record(value, spec, where)
    return []


def _record(value: dict[str, Any], spec: Spec, where: str) -> list[str]:
    out = [f"{where or 'the file'}: missing '{key}'" for key in spec.required if key not in value]
    for key, item in value.items():
        if key in spec.item:
            out += problems(item, spec.item[key], _at(where, key))
        elif spec.kind == "record":
            out.append(f"{_at(where, key)}: unknown field; known here: {', '.join(sorted(spec.item))}")
    return out


def check(value: Any, spec: Spec, where: str) -> Any:
    """value, or SchemaError naming every mistake: `<file>: <field>: <what is wrong>`."""
    found = problems(value, spec)
    if found:
        raise SchemaError("; ".join(f"{where}: {p}" for p in found))
    return value


def model_doc(doc: Any, where: str) -> dict[str, Any]:
    return check(doc, MODEL, where)


def cells_doc(doc: Any, where: str) -> dict[str, Any]:
    return check(doc, CELLS_FILE, where)


def benchmarks_doc(doc: Any, where: str) -> dict[str, Any]:
    return check(doc, BENCHMARKS_FILE, where)


def source_doc(doc: Any, where: str) -> dict[str, Any]:
    return check(doc, SOURCE, where)
