# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A page's published numbers (`<page>-benchmarks.jsx`) and its speed command, as benchmarks.yml holds them.

Each published speed point keeps its own workload: the page's most common (dataset, ISL, OSL) is the file's
`workload`, and a point measured at another shape, or with another --num-prompts than the page's table, says so
itself (`isl`, `osl`, `dataset`, `prompts`). The speed command gives the bench_serving settings: backend, range
ratio and warm-up requests where the page sets them (absent: bench_serving's default), and `extra_args`, the page's
other flags (e.g. `--request-rate inf`), which playbooks/benchmark.yml passes on. Stubs (no speed, no accuracy)
are pending upstream and left out. Pure; controller only.
"""
from __future__ import annotations

import re
import shlex
from collections import Counter
from decimal import Decimal
from typing import Any, Iterable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.jsread import literal
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.page import SINGLE_STRATEGY, nodes_of

_ACCEPT_LENGTH = re.compile(r"SGLANG_SIMULATE_ACC_LEN=([0-9.]+)")
#: bench_serving options the benchmark playbook sets itself (target, model, workload, output)
OURS = {"--backend", "--host", "--port", "--base-url", "--model", "--served-model-name", "--tokenizer",
        "--dataset-name", "--dataset-path", "--random-input-len", "--random-output-len", "--random-range-ratio",
        "--num-prompts", "--max-concurrency", "--warmup-requests", "--flush-cache", "--output-file"}
Key = tuple[str, str, str, int]


def _options(command: str) -> list[tuple[str, str | None]]:
    """(--option, value or None) of a shell command, in order; the program and module before the first option
    are skipped."""
    words = shlex.split(command.replace("\\\n", " "))
    out: list[tuple[str, str | None]] = []
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
        out.append((word, value))
    return out


def speed_settings(config: dict[str, Any]) -> dict[str, Any]:
    """{backend, range_ratio?, warmup_requests?, extra_args?} from the page's benchmarkCommands.speed."""
    command = (config.get("benchmarkCommands") or {}).get("speed")
    if not command:
        return {"backend": "sglang"}
    options = _options(str(literal(command, "benchmarkCommands.speed")))
    given = dict(options)
    out: dict[str, Any] = {}
    if given.get("--random-range-ratio") is not None:
        out["range_ratio"] = Decimal(str(given["--random-range-ratio"]))
    if given.get("--warmup-requests") is not None:
        out["warmup_requests"] = int(str(given["--warmup-requests"]))
    out["backend"] = given.get("--backend") or "sglang"
    extra: list[str] = []
    for name, value in options:
        if name in OURS or (value and "{{" in value):
            continue
        extra += [name] if value is None else [name, value]
    if extra:
        out["extra_args"] = extra
    return out


def entry_key(match: dict[str, Any]) -> Key:
    strategy = match.get("strategy") or match.get("tier") or SINGLE_STRATEGY
    return (str(match.get("hw")), str(match.get("quant")), str(strategy), nodes_of(str(match.get("nodes", "single"))))


def accuracy_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's accuracy numbers: `accuracy`, and `<metric>_pct` keys some pages write at the top level."""
    out = dict(entry.get("accuracy") or {})
    out.update({k: v for k, v in entry.items() if str(k).endswith("_pct") and k not in out})
    return out


def speed_points(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """An entry's speed points: the page's engine (docs/src/snippets/_deployment.jsx, normalizeSpeed) takes one
    measurement object or a list of them."""
    speed = entry.get("speed")
    if not speed:
        return []
    return [speed] if isinstance(speed, dict) else list(speed)


def _shape(point: dict[str, Any]) -> tuple[Any, Any, Any]:
    w = point.get("workload") or {}
    return (w.get("dataset", "random"), w.get("isl"), w.get("osl"))


def main_shape(entries: Iterable[dict[str, Any]]) -> tuple[Any, Any, Any]:
    """The (dataset, ISL, OSL) most of the published points ran at (the first seen on a tie)."""
    counts = Counter(_shape(p) for e in entries for p in speed_points(e))
    return counts.most_common(1)[0][0] if counts else ("random", None, None)


def prompts_table(config: dict[str, Any], entries: list[dict[str, Any]], shape: tuple[Any, Any, Any]) -> dict[int, int]:
    """--num-prompts per --max-concurrency: the page's numPromptsByConc, else what its main-shape points state."""
    table = (config.get("benchmarkCommands") or {}).get("numPromptsByConc")
    if table:
        return {int(k): int(v) for k, v in literal(table, "benchmarkCommands.numPromptsByConc").items()}
    out: dict[int, int] = {}
    for entry in entries:
        for point in speed_points(entry):
            w = point.get("workload") or {}
            if _shape(point) == shape and "num_prompts" in w:
                out.setdefault(int(w["max_concurrency"]), int(w["num_prompts"]))
    return dict(sorted(out.items()))


def point_of(point: dict[str, Any], shape: tuple[Any, Any, Any], prompts: dict[int, int]) -> dict[str, Any]:
    """One published speed point; its workload where it differs from the file's."""
    w = point.get("workload") or {}
    out: dict[str, Any] = {"concurrency": int(w["max_concurrency"]), "ttft_ms": point.get("ttft_ms"),
                           "tpot_ms": point.get("tpot_ms"), "tok_s_per_gpu": point.get("tokens_per_sec_per_gpu")}
    if _shape(point) != shape:
        out.update(dataset=w.get("dataset", "random"), isl=w.get("isl"), osl=w.get("osl"))
    if "num_prompts" in w and prompts.get(out["concurrency"]) != int(w["num_prompts"]):
        out["prompts"] = int(w["num_prompts"])
    return out


def row_of(entry: dict[str, Any], page_latency: Any, shape: tuple[Any, Any, Any],
           prompts: dict[int, int]) -> dict[str, Any]:
    gpu, quant, strategy, nodes = entry_key(entry["match"])
    row: dict[str, Any] = {"gpu": gpu, "quant": quant, "strategy": strategy, "nodes": nodes,
                           "sglang": entry.get("sglang_version")}
    row.update(accuracy_of(entry))
    latency = entry.get("latencyPercentile") or page_latency
    if latency:
        row["latency"] = latency
    pinned = _ACCEPT_LENGTH.search(str(entry.get("notes") or ""))
    if pinned:
        row["simulated_accept_length"] = Decimal(pinned.group(1))
    row["speed"] = [point_of(p, shape, prompts) for p in speed_points(entry)]
    return row


def published(config: dict[str, Any], benchmarks: list[dict[str, Any]], variant: str,
              cells: set[Key]) -> dict[str, Any]:
    """{workload, prompts_per_concurrency, cells} of the imported cells of one variant; stubs and other variants are
    left out."""
    entries = [literal(e, "benchmarks[]") for e in benchmarks
               if (speed_points(e) or accuracy_of(e)) and (e.get("match") or {}).get("variant", "default") == variant
               and entry_key(e["match"]) in cells]
    shape = main_shape(entries)
    prompts = prompts_table(config, entries, shape)
    workload = {"dataset": shape[0], "isl": shape[1], "osl": shape[2], **speed_settings(config)}
    return {"workload": workload, "prompts_per_concurrency": prompts,
            "cells": [row_of(e, config.get("latencyPercentile"), shape, prompts) for e in entries]}
