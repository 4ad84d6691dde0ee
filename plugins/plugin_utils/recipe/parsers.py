# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a model's parsers mean under the SGLang release that serves it, and how a request turns reasoning and tool
calls on (playbooks/verify.yml, benchmark.yml and upgrade.yml read it through the plan's `verify`).

A model's data names its parsers (model.yml `parsers`, the page's parser card), which may be `auto`. The release's
parser table (data/sglang/parsers-<release>.yml, tools/sglang_parser_table.py from the release's own code) says what
`auto` resolves to where the release decides by architecture (model.yml `architecture`), each reasoning parser's
think tokens and the request fields that turn it on, and what opens each tool-call parser's call. model.yml
`requests` and `verify` state the same per model and win over the table: a template can differ from its parser's
default. Pure; controller only.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, Model, read_yaml

KINDS = ("reasoning", "tool_call")


@functools.lru_cache(maxsize=None)
def table(release: str, data_dir: str = str(DATA_DIR)) -> dict[str, Any] | None:
    """The parser table of a release (data/sglang/versions.yml parser_tables), or None when none is shipped."""
    versions = read_yaml(Path(data_dir) / "sglang" / "versions.yml")
    name = (versions.get("parser_tables") or {}).get(release)
    return read_yaml(Path(data_dir) / "sglang" / name) if name else None


def _by_architecture(tab: dict[str, Any], architecture: str) -> dict[str, Any]:
    rules = tab.get("auto_by_architecture") or {}
    if architecture in rules and not rules[architecture].get("contains"):
        return rules[architecture]
    hits = sorted((name for name, r in rules.items() if r.get("contains") and name in architecture), key=len)
    return rules[hits[-1]] if hits else {}  # the longest name: DeepseekV41 before DeepseekV4


def resolve(parsers: dict[str, Any], architecture: str, release: str, model_id: str) -> dict[str, Any]:
    """{reasoning, tool_call: the parser the server runs, `auto` resolved where the release's table can;
    unresolved: {kind: why}}."""
    tab = table(release)
    out: dict[str, Any] = {"unresolved": {}}
    for kind in KINDS:
        name = parsers.get(kind)
        if name == "auto":
            found = _by_architecture(tab, architecture).get(kind) if tab and architecture else None
            if not found:
                out["unresolved"][kind] = _why_unresolved(model_id, architecture, release, tab)
            name = found or "auto"
        out[kind] = name
    return out


def resolved(model: Model, release: str) -> dict[str, Any]:
    return resolve(model.parsers, model.architecture, release, model.id)


def _why_unresolved(model_id: str, architecture: str, release: str, tab: dict[str, Any] | None) -> str:
    if tab is None:
        return f"the collection has no parser table for SGLang {release} (tools/sglang_parser_table.py)"
    if not architecture:
        return (f"SGLang {release} resolves `auto` from the checkpoint (architecture or chat template) at start; "
                f"{model_id} names no architecture (model.yml architecture)")
    return (f"SGLang {release} resolves `auto` for {architecture} from the checkpoint's chat template at start, "
            "which the collection cannot read")


def request_shapes(model: Model, parsers: dict[str, Any], release: str) -> dict[str, Any]:
    """{reasoning, tool_call: the fields a chat request carries to turn each on}: model.yml `requests`, else the
    release's table for the (resolved) reasoning parser; absent where neither says."""
    out: dict[str, Any] = {"tool_call": dict(model.requests.get("tool_call") or {})}
    if "reasoning" in model.requests:
        out["reasoning"] = dict(model.requests["reasoning"])
        return out
    entry = ((table(release) or {}).get("reasoning") or {}).get(parsers.get("reasoning") or "")
    if entry and "request" in entry:
        out["reasoning"] = dict(entry["request"])
    return out


def markers(model: Model, parsers: dict[str, Any], release: str) -> dict[str, str]:
    """think_start and tool_call_start: model.yml `verify`, else the release's table for the parsers."""
    tab = table(release) or {}
    reasoning = (tab.get("reasoning") or {}).get(parsers.get("reasoning") or "") or {}
    tool_call = (tab.get("tool_call") or {}).get(parsers.get("tool_call") or "") or {}
    out = {}
    start = model.verify.get("think_start") or reasoning.get("think_start")
    if start:
        out["think_start"] = str(start)
    call = model.verify.get("tool_call_start") or tool_call.get("start")
    if call:
        out["tool_call_start"] = str(call)
    return out


def expectations(model: Model, release: str) -> dict[str, Any]:
    """What a working server of the model answers under a release (playbooks/verify.yml judges it)."""
    parsers = resolved(model, release)
    out: dict[str, Any] = {"model": model.id, "display_name": model.display_name, "sglang_version": release,
                           "reasoning_parser": parsers["reasoning"], "tool_call_parser": parsers["tool_call"],
                           "requests": request_shapes(model, parsers, release), **markers(model, parsers, release)}
    if parsers["unresolved"]:
        out["unresolved"] = parsers["unresolved"]
    return out
