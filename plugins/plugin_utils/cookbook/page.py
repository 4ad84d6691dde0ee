# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The structure of an SGLang cookbook page (sglang/docs/src/snippets/configs/<org>/<page>.jsx), in both of its formats.

Older pages list their dimensions as `variants`, `quantizations`, `strategies` and `nodesOptions`; newer ones as
`matchDims` (any ids) with `overlayDims`: rows that rewrite every cell's command. An overlay strips the flags named
by its `stripPrefixes` and adds the chosen option's flags. A "Serving Strategy" overlay (id `strategy` or `tier`)
is the strategy dimension: each of its options is one cell per page cell. Every other overlay contributes its
default option, as the page's deployment panel shows it. Pure; controller only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.jsread import Opaque, literal

#: the strategy a page without a strategy dimension (one operating point) is imported as
SINGLE_STRATEGY = "balanced"
#: the match dimensions that map onto a collection setting; others must have one value across the page
KNOWN_DIMS = ("hw", "variant", "quant", "strategy", "nodes")
STRATEGY_OVERLAYS = ("strategy", "tier")


@dataclass(frozen=True)
class PageCell:
    """One cell of one variant as the page's deployment panel composes it (overlays applied)."""
    gpu: str
    quant: str
    strategy: str
    nodes_text: str
    verified: bool
    env: tuple[str, ...]
    flags: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)  # why the badge or a value was read as it was
    problem: str = ""  # a reason the cell cannot be imported, found while reading the page

    @property
    def label(self) -> str:
        return f"{self.gpu}/{self.quant}/{self.strategy}/{self.nodes_text}"


def variants(config: dict[str, Any]) -> list[str]:
    """The page's variant ids, in page order (`variants`, or the `variant` match dimension), else `default`."""
    listed = config.get("variants")
    if not listed:
        dim = next((d for d in config.get("matchDims") or [] if isinstance(d, dict) and d.get("id") == "variant"),
                   None)
        listed = (dim or {}).get("options") or []
    ids = [str(literal(v, "variants")["id"]) for v in listed if isinstance(v, dict)]
    return ids or ["default"]


def variant_label(config: dict[str, Any], variant: str) -> str:
    for entry in config.get("variants") or []:
        if isinstance(entry, dict) and entry.get("id") == variant:
            return str(entry.get("label") or variant)
    return variant


def cell_variant(cell: dict[str, Any]) -> str:
    return str(literal(cell.get("match") or {}, "cell.match").get("variant", "default"))


def raw_cells(config: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    cells = config.get("cells")
    if isinstance(cells, Opaque) or not isinstance(cells, list):
        raise ValueError("config.cells: the page computes its cells; only a literal list is imported")
    return [c for c in cells if cell_variant(c) == variant]


def overlays(config: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the strategy overlay or None, the other overlays), in page order."""
    strategy, other = None, []
    for dim in config.get("overlayDims") or []:
        if not isinstance(dim, dict):
            continue
        is_strategy = dim.get("id") in STRATEGY_OVERLAYS or str(dim.get("title", "")).lower() == "serving strategy"
        if is_strategy and strategy is None:
            strategy = dim
        else:
            other.append(dim)
    return strategy, other


def _flag_name(item: Any) -> str:
    return str(item).split(" ", 1)[0]


def apply_overlay(flags: list[Any], dim: dict[str, Any], option: dict[str, Any]) -> list[Any]:
    """The command after one overlay row: flags named by its stripPrefixes removed, the option's flags added."""
    prefixes = [str(p) for p in literal(dim.get("stripPrefixes") or [], f"overlayDims.{dim.get('id')}.stripPrefixes")]
    kept = [f for f in flags if not any(_flag_name(f).startswith(p) for p in prefixes)]
    added = option.get("flags") or []
    if isinstance(added, Opaque):
        return kept + [added]  # the page computes these flags per selection: the cell is left out below
    return kept + [f for f in added if f not in kept]


def _option(dim: dict[str, Any], wanted: Any) -> dict[str, Any]:
    for option in dim.get("options") or []:
        if isinstance(option, dict) and option.get("id") == wanted:
            return option
    return {}


def _split_tail(flags: list[Any]) -> tuple[list[Any], list[Any]]:
    """(flags, the --host/--port tail): overlays add their flags before the tail, where the page shows them."""
    tail = [f for f in flags if _flag_name(f) in ("--host", "--port")]
    return [f for f in flags if f not in tail], tail


def _badge(cell: dict[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """The cell's badge: `verified: true`, unless a verificationStatus other than "verified" says otherwise. A badge
    the page computes per selection is read as unverified, with a note."""
    verified, status = cell.get("verified", False), cell.get("verificationStatus", "verified")
    notes = []
    if isinstance(verified, Opaque) or isinstance(status, Opaque):
        notes.append("the page computes this cell's badge per selection; imported as unverified")
        return False, tuple(notes)
    return bool(verified) and status == "verified", tuple(notes)


def _extra_dims(cell: dict[str, Any], config: dict[str, Any]) -> str:
    """A problem when the page splits its cells by a dimension the collection has no setting for."""
    values: dict[str, set[Any]] = {}
    for other in config.get("cells") or []:
        for key, value in (other.get("match") or {}).items():
            values.setdefault(key, set()).add(str(value))
    split = sorted(k for k in (cell.get("match") or {}) if k not in KNOWN_DIMS and len(values.get(k, ())) > 1)
    return f"the page splits its cells by {', '.join(split)}, which the collection has no setting for" if split else ""


def _strategies(cell: dict[str, Any], strategy_dim: dict[str, Any] | None) -> Iterator[tuple[str, dict[str, Any]]]:
    match = cell.get("match") or {}
    if "strategy" in match:
        yield str(match["strategy"]), {}
    elif strategy_dim is None:
        yield SINGLE_STRATEGY, {}
    else:
        for option in strategy_dim.get("options") or []:
            if isinstance(option, dict):
                yield str(option.get("id")), option


def page_cells(config: dict[str, Any], variant: str) -> list[PageCell]:
    """Every cell of one variant as the page composes it: one per strategy of a strategy overlay, every other
    overlay at its default option."""
    strategy_dim, others = overlays(config)
    out = []
    for cell in raw_cells(config, variant):
        match = literal(cell.get("match") or {}, "cell.match")
        verified, notes = _badge(cell)
        for strategy, option in _strategies(cell, strategy_dim):
            flags, tail = _split_tail(list(cell.get("flags") or []))
            if option:
                flags = apply_overlay(flags, strategy_dim or {}, option)
            for dim in others:
                flags = apply_overlay(flags, dim, _option(dim, dim.get("default")))
            problem = _extra_dims(cell, config) or _computed(flags + tail, cell.get("env") or [])
            out.append(PageCell(gpu=str(match.get("hw")), quant=str(match.get("quant")), strategy=strategy,
                                nodes_text=str(match.get("nodes", "single")), verified=verified,
                                env=tuple(str(e) for e in cell.get("env") or [] if not isinstance(e, Opaque)),
                                flags=tuple(str(f) for f in flags + tail if not isinstance(f, Opaque)),
                                notes=notes, problem=problem))
    return out


def _computed(flags: list[Any], env: Any) -> str:
    if isinstance(env, Opaque) or any(isinstance(e, Opaque) for e in env):
        return "the page computes this cell's environment per selection"
    if any(isinstance(f, Opaque) for f in flags):
        return "the page computes some of this cell's flags per selection"
    return ""


def nodes_of(text: str) -> int:
    """The page's `single` / `multi-<n>` as a node count."""
    if text == "single":
        return 1
    if text.startswith("multi-") and text[6:].isdigit():
        return int(text[6:])
    raise ValueError(f"unknown nodes value {text!r} (expected single or multi-<n>)")


def model_names(config: dict[str, Any], variant: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """({quant: checkpoint}, {gpu: {quant: checkpoint}}) of one variant: modelNames is keyed `variant|quant`, and
    `hw|variant|quant` where one GPU needs another checkpoint (the page's lookup order is the reverse)."""
    names = literal(config.get("modelNames") or {}, "modelNames")
    base: dict[str, str] = {}
    per_gpu: dict[str, dict[str, str]] = {}
    for key, value in names.items():
        parts = str(key).split("|")
        if len(parts) == 2 and parts[0] == variant:
            base[parts[1]] = str(value)
        elif len(parts) == 3 and parts[1] == variant:
            per_gpu.setdefault(parts[0], {})[parts[2]] = str(value)
    return base, per_gpu


def checkpoint_of(config: dict[str, Any], variant: str, gpu: str, quant: str) -> str | None:
    base, per_gpu = model_names(config, variant)
    return per_gpu.get(gpu, {}).get(quant) or base.get(quant)


def parser_card(config: dict[str, Any]) -> dict[str, str]:
    """{reasoning, tool_call: parser} of the page's Parsers card (playgroundFeatures.parsers)."""
    items = ((config.get("playgroundFeatures") or {}).get("parsers") or {}).get("items") or []
    out = {}
    for item in items:
        flag = str(literal(item, "playgroundFeatures.parsers.items").get("flag", "")).split()
        if len(flag) == 2 and flag[0] in ("--reasoning-parser", "--tool-call-parser"):
            out["reasoning" if flag[0] == "--reasoning-parser" else "tool_call"] = flag[1]
    return out


def speculative_card(config: dict[str, Any]) -> dict[str, list[str]]:
    """{option id: flags} of the page's Speculative Decoding card, without `current` and `off` and without options
    the page computes."""
    options = ((config.get("playgroundFeatures") or {}).get("speculative") or {}).get("options") or []
    out = {}
    for option in options:
        if not isinstance(option, dict) or option.get("id") in ("current", "off", None):
            continue
        flags = option.get("flags")
        if isinstance(flags, list) and not any(isinstance(f, Opaque) for f in flags):
            out[str(option["id"])] = [str(f) for f in flags]
    return out
