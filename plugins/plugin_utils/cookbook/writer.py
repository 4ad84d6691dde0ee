# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The text of cells.yml, benchmarks.yml and a new model's model.yml, written the way people read them: one cell per
block, flags in the page's order, numbers as the page wrote them ("0.80" stays "0.80", 14.20 stays 14.20).
Pure; controller only."""
from __future__ import annotations

import json
import textwrap
from decimal import Decimal
from typing import Any, Iterable

WRAP = 100


def quoted(value: Any) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def plain(value: Any) -> str:
    """A YAML scalar as upstream wrote it: numbers bare, strings quoted, None as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    return quoted(value)


def comment(text: str, indent: str = "") -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(text, WRAP, subsequent_indent=indent)]


def header(kind: str, page: dict[str, Any], file: str, commit: str) -> list[str]:
    """The head every imported file carries: what, from which page at which revision, and where it was read."""
    url = f"https://github.com/{page['repository']}/blob/{commit}/{page['path']}{file}"
    return ["---", f"# {kind} of the SGLang cookbook's {page['name']} page at upstream revision {page['revision']}.",
            f"# Imported by {page['generator']} from the unedited upstream file",
            f"# {page['origin']}{file}; regenerate rather than edit (a unit test compares).",
            f'revision: "{page["revision"]}"', f"commit: {commit}", f"source: {url}",
            *comment(f"read: {page['read']}")]


def left_out_comment(left_out: list[dict[str, str]]) -> list[str]:
    if not left_out:
        return []
    by_reason: dict[str, list[str]] = {}
    for item in left_out:
        by_reason.setdefault(item["reason"], []).append(item["cell"])
    lines = ["# Left out (the import report lists the same):"]
    for reason, cells in by_reason.items():
        lines += comment(f"- {', '.join(cells)}: {reason}", "  ")
    return lines


def _flag_value(value: Any) -> str:
    return "true" if value is True else (str(value) if isinstance(value, int) else quoted(value))


def cell_lines(cell: dict[str, Any]) -> list[str]:
    lines = [f"  - gpu: {cell['gpu']}", f"    quant: {cell['quant']}", f"    strategy: {cell['strategy']}",
             f"    nodes: {cell['nodes']}", f"    verified: {str(cell['verified']).lower()}"]
    if cell["env"]:
        lines += ["    env:"] + [f"      {k}: {quoted(v)}" for k, v in cell["env"].items()]
    else:
        lines.append("    env: {}")
    lines.append("    flags:" if cell["flags"] else "    flags: {}")
    lines += [f"      {name}: {_flag_value(value)}" for name, value in cell["flags"].items()]
    return lines


def _inline(mapping: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {quoted(v)}" for k, v in mapping.items()) + "}"


def cells_text(page: dict[str, Any], data: dict[str, Any]) -> str:
    """cells.yml: checkpoints, checkpoints_by_gpu, images and cells of one revision of one variant."""
    lines = header("Serving cells", page, page["config_file"], page["config_commit"])
    lines += left_out_comment(data["left_out"])
    lines += ["# The engine adds --model-path first and --host/--port last; site changes belong in `sglang_recipes`.",
              "checkpoints:" if data["checkpoints"] else "checkpoints: {}"]
    lines += [f"  {quant}: {quoted(ref)}" for quant, ref in data["checkpoints"].items()]
    if data["checkpoints_by_gpu"]:
        lines += ["# The checkpoint some GPUs need instead (the page's `hw|variant|quant` model names)",
                  "checkpoints_by_gpu:"]
        lines += [f"  {gpu}: " + _inline(refs) for gpu, refs in data["checkpoints_by_gpu"].items()]
    lines += ["# Container image per GPU; sglang_version is the release the tag names (a floating tag names none)",
              "images:" if data["images"] else "images: {}"]
    lines += [f"  {gpu}: " + _inline(image) for gpu, image in data["images"].items()]
    lines.append("cells:" if data["cells"] else "cells: []")
    for cell in data["cells"]:
        lines += cell_lines(cell)
    return "\n".join(lines) + "\n"


def _workload(workload: dict[str, Any]) -> str:
    def value(v: Any) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(quoted(x) for x in v) + "]"
        return plain(v) if not isinstance(v, str) else v
    items = [f"{k}: {value(v)}" for k, v in workload.items() if k != "extra_args"]
    if "extra_args" not in workload:
        return "workload: {" + ", ".join(items) + "}"
    return "workload: {" + ", ".join(items) + ",\n           extra_args: " + value(workload["extra_args"]) + "}"


def _row(row: dict[str, Any]) -> list[str]:
    head = ", ".join(f"{k}: {row[k] if k != 'sglang' else plain(row[k])}"
                     for k in ("gpu", "quant", "strategy", "nodes", "sglang"))
    extra = [f"{k}: {plain(v)}" for k, v in row.items()
             if k not in ("gpu", "quant", "strategy", "nodes", "sglang", "speed", "simulated_accept_length")]
    lines = [f"  - {{{head}{''.join(', ' + e for e in extra)},"]
    if len(lines[0]) > 150 and extra:  # a long release note: the numbers on a line of their own
        lines = [f"  - {{{head},", "     " + ", ".join(extra) + ","]
    if "simulated_accept_length" in row:
        lines.append(f"     simulated_accept_length: {plain(row['simulated_accept_length'])},")
    speeds = ["{" + ", ".join(f"{k}: {plain(v)}" for k, v in s.items()) + "}" for s in row["speed"]]
    lines.append("     speed: [" + (",\n             ".join(speeds)) + "]}")
    return lines


def benchmarks_text(page: dict[str, Any], data: dict[str, Any]) -> str:
    lines = header("Published benchmark numbers", page, page["benchmarks_file"], page["benchmarks_commit"])
    lines += [
        "# Cells without numbers upstream are pending there and absent here. tok_s_per_gpu is total (input +",
        "# output) tokens/s per GPU. simulated_accept_length: upstream pinned the speculative accept length",
        "# (SGLANG_SIMULATE_ACC_LEN) for the speed runs, so those are throughput-mechanism numbers, not",
        "# correctness evidence; a real deployment's accept length differs, and so will its numbers.",
        "# Workload (sglang.bench_serving, from the page's speed command) and --num-prompts per --max-concurrency;",
        "# a speed point measured at another shape or prompt count carries its own isl/osl/dataset/prompts:",
        _workload(data["workload"]),
        "prompts_per_concurrency: {" + ", ".join(f"{k}: {v}" for k, v in data["prompts_per_concurrency"].items())
        + "}",
        "cells:" if data["cells"] else "cells: []"]
    for row in data["cells"]:
        lines += _row(row)
    return "\n".join(lines) + "\n"


def _yaml_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, (bool, int)) else plain(value)


def _mapping(name: str, mapping: dict[str, Any], indent: str = "") -> list[str]:
    lines = [f"{indent}{name}:"]
    for key, value in mapping.items():
        if isinstance(value, dict):
            lines += _mapping(str(key), value, indent + "  ")
        else:
            lines.append(f"{indent}  {key}: {_yaml_value(value)}")
    return lines


def model_text(doc: dict[str, Any], notes: Iterable[str]) -> str:
    """model.yml of a newly imported model: the page's facts, every section named in docs/recipes.md's schema."""
    lines = ["---", *[f"# {n}" for note in notes for n in textwrap.wrap(note, WRAP)]]
    for key, value in doc.items():
        if isinstance(value, dict):
            lines += _mapping(key, value)
        elif isinstance(value, list):
            lines.append(f"{key}: [" + ", ".join(_yaml_value(v) for v in value) + "]")
        else:
            lines.append(f"{key}: {_yaml_value(value)}")
    return "\n".join(lines) + "\n"
