"""Import one revision of an SGLang cookbook model page into data/.

Input: a folder tests/fixtures/upstream/<page>/<short commit>/ with the page's two upstream files exactly as
published at one commit (their names are in source.yml: config_file, e.g. glm-5.3.jsx, and benchmarks_file,
e.g. glm-5.3-benchmarks.jsx) and our note of where they come from (source.yml: repository, path, commit of each
file, when and how they were read). Which page and which of its variants a model is comes from the model's
data/models/<id>/model.yml (`cookbook: {page, variant}`). Output: data/models/<id>/cookbook/<short commit>/ with
  cells.yml       the revision's images, checkpoints and cells (gpu x precision x strategy x node count) of the
                  model's variant, on the GPUs data/gpus.yml knows (the others are named in a comment)
  benchmarks.yml  its published numbers for those cells (cells upstream leaves pending are absent)

The cookbook writes each cell as `--flag value` strings with `--model-path {{MODEL_NAME}}` among them and
`--host {{HOST_IP}} --port {{PORT}}` last. We store the other flags as an ordered mapping under their full names
(argparse prefixes such as --tp become --tp-size); the engine adds model path (first), host and port. A value is
read as the shell reads the copied command (`'{"a": 1}'` is the JSON text without the quotes); otherwise values
are kept as written ("0.80" stays "0.80"), and so are published numbers.

The page is a JavaScript module whose `config` may hold playground callbacks (arrow functions, methods, getters)
beside the literal data. The reader keeps those as Opaque and refuses one only where the import reads it.

Usage: python tools/import_cookbook_cells.py <model id> <short commit>
A new upstream revision: put its two files, unedited, and a source.yml under tests/fixtures/upstream/<page>/<short>/,
run this, add <short> to `cookbook_revisions` in data/models/<id>/model.yml (newest first) and review the diff.
A new model: a data/models/<id>/model.yml with `cookbook: {page: <page>, variant: <variant id>}` first.
tests/unit/test_cookbook_revisions.py re-runs the import of every shipped revision of every model and compares it
with data/ byte for byte.
"""
from __future__ import annotations

import re
import shlex
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable

import yaml

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "tests" / "fixtures" / "upstream"
MODEL_PATH = "--model-path {{MODEL_NAME}}"
TAIL = ["--host {{HOST_IP}}", "--port {{PORT}}"]
_RELEASE_IN_TAG = re.compile(r"(?:^|[:@/-])v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?=$|[-_])")
_ACCEPT_LENGTH = re.compile(r"SGLANG_SIMULATE_ACC_LEN=([0-9.]+)")


# --- a reader for the JavaScript object literal the page exports -----------------------------------

class JsLiteralError(ValueError):
    pass


_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<template>`(?:[^`\\]|\\.)*`)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct>[{}\[\]():,;])
  | (?P<op>=>|\.\.\.|[=!<>]=?=?|&&|\|\||\?\?|[-+*%&|^~?.])
  | (?P<slash>/)
""", re.S | re.X)
_REGEX = re.compile(r"/(?:[^/\\\n\[]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")
#: after these a `/` starts a regular expression literal, elsewhere it divides
_REGEX_AFTER = {"(", ",", "=", ":", "[", "!", "&&", "||", "??", "?", "{", "}", ";", "=>", "return"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


class Opaque(str):
    """The source text of a value that is not a plain literal (a callback, an expression): kept, never read."""


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
            continue
        if nxt == "\n":  # a line continuation
            i += 2
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise JsLiteralError(f"unexpected character {text[pos]!r} at offset {pos}")
        kind = m.lastgroup or ""
        if kind == "slash":
            regex = _REGEX.match(text, pos) if not out or out[-1][1] in _REGEX_AFTER else None
            if regex:
                out.append(("regex", regex.group(), pos))
                pos = regex.end()
                continue
            kind = "op"
        if kind != "space":
            out.append((kind, m.group(), pos))
        pos = m.end()
    return out


def _number(text: str) -> int | Decimal:
    """Integers stay int; decimals keep their written digits (14.20 is not 14.2 when we write it back)."""
    return int(text) if re.fullmatch(r"-?\d+", text) else Decimal(text)


class _Reader:
    """Reads literals; a value that is anything else (an arrow function, a method, a getter, `a + b`) becomes
    an Opaque holding its source text, so the literal data around the page's callbacks can still be read."""

    def __init__(self, text: str, tokens: list[tuple[str, str, int]]) -> None:
        self.text, self.tokens, self.i = text, tokens, 0

    def peek(self) -> tuple[str, str, int]:
        if self.i >= len(self.tokens):
            raise JsLiteralError("unexpected end of file")
        return self.tokens[self.i]

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise JsLiteralError(f"expected {value!r} at offset {tok[2]}, found {tok[1]!r}")
        self.i += 1
        return tok

    def _ends_value(self) -> bool:
        return self.i >= len(self.tokens) or self.peek()[1] in (",", "}", "]", ";")

    def _skip_expression(self, start: int) -> Opaque:
        """From token `start`, skip to the `,` `;` `}` or `]` that ends the value at depth 0."""
        self.i, depth = start, 0
        while self.i < len(self.tokens):
            kind, text, _pos = self.tokens[self.i]
            if kind == "punct" and text in "([{":
                depth += 1
            elif kind == "punct" and text in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and text in (",", ";"):
                break
            self.i += 1
        if self.i == start:
            raise JsLiteralError(f"expected a value at offset {self.tokens[start][2]}")
        first, last = self.tokens[start], self.tokens[self.i - 1]
        return Opaque(self.text[first[2]:last[2] + len(last[1])])

    def value(self) -> Any:
        start = self.i
        try:
            out = self._literal()
        except JsLiteralError:
            return self._skip_expression(start)
        if not self._ends_value():  # a literal that an expression continues: "a" + "b", x ? y : z
            return self._skip_expression(start)
        return out

    def _literal(self) -> Any:
        kind, text, pos = self.take()
        if text == "{":
            return self.object()
        if text == "[":
            return self.array()
        if kind == "string":
            return _unescape(text[1:-1])
        if kind == "template":
            if "${" in text:
                raise JsLiteralError(f"template literal with a substitution at offset {pos}: not a plain literal")
            return _unescape(text[1:-1])
        if kind == "number":
            return _number(text)
        if kind == "name" and text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        raise JsLiteralError(f"unexpected {text!r} at offset {pos}: only literals are read")

    def object(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while self.peek()[1] != "}":
            kind, text, pos = self.take()
            if kind == "name" and text in ("get", "set", "async") and self.peek()[0] == "name":
                kind, text, pos = self.take()  # an accessor, `get name() { ... }`: read as a method
            if kind == "string":
                key = _unescape(text[1:-1])
            elif kind in ("name", "number"):
                key = text
            else:
                raise JsLiteralError(f"unexpected object key {text!r} at offset {pos}")
            if self.peek()[1] == "(":  # a method, `name(args) { body }`
                out[key] = self._skip_expression(self.i)
            else:
                self.take(":")
                out[key] = self.value()
            if self.peek()[1] == ",":
                self.take(",")
        self.take("}")
        return out

    def array(self) -> list[Any]:
        out = []
        while self.peek()[1] != "]":
            out.append(self.value())
            if self.peek()[1] == ",":
                self.take(",")
        self.take("]")
        return out


def read_js_export(text: str, name: str) -> Any:
    """The value of `export const <name> = ...;` in a JS module: literals as Python values, anything else inside
    it (a playground callback, say) as an Opaque with its source text. A value that is itself not a literal raises."""
    tokens = _tokens(text)
    for i in range(len(tokens) - 3):
        if [t[1] for t in tokens[i:i + 4]] == ["export", "const", name, "="]:
            value = _Reader(text, tokens[i + 4:]).value()
            if isinstance(value, Opaque):
                raise JsLiteralError(f"`export const {name}` is not a literal: {value[:60]!r}")
            return value
    raise JsLiteralError(f"no `export const {name} =` in the file")


def literal(value: Any, where: str) -> Any:
    """The value itself, refused when the page computes it (an Opaque) anywhere inside."""
    if isinstance(value, Opaque):
        raise JsLiteralError(f"{where}: the page computes this value ({value[:60]!r}); only literals are imported")
    if isinstance(value, dict):
        for key, item in value.items():
            literal(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            literal(item, f"{where}[{i}]")
    return value


# --- page -> our data --------------------------------------------------------------------------------

def upstream_nodes(value: str) -> int:
    if value == "single":
        return 1
    if value.startswith("multi-"):
        return int(value.split("-", 1)[1])
    raise ValueError(f"unknown upstream nodes value {value!r}")


def scalar(text: str, where: str) -> Any:
    """One flag value as a shell reads the copied command (quotes removed); integers stay integers, everything
    else is the exact string upstream wrote."""
    words = shlex.split(text)
    if len(words) != 1:
        raise ValueError(f"{where}: the value {text!r} is {len(words)} shell words; expected one")
    word = words[0]
    return int(word) if word.isdigit() else word


def verified(cell: dict[str, Any], where: str) -> bool:
    """The cell's badge: `verified: true`, unless a verificationStatus other than "verified" says otherwise."""
    status = literal(cell.get("verificationStatus", "verified"), f"{where}.verificationStatus")
    return bool(literal(cell.get("verified", False), f"{where}.verified")) and status == "verified"


def convert_cell(cell: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    match = literal(cell["match"], "cell.match")
    where = f"{match}"
    flags = list(literal(cell["flags"], f"{where}.flags"))
    if flags.count(MODEL_PATH) != 1 or flags[-2:] != TAIL:
        raise ValueError(f"{where}: expected {MODEL_PATH!r} once and {TAIL} last, got {flags}")
    mapping: dict[str, Any] = {}
    for item in flags[:-2]:
        if item == MODEL_PATH:
            continue
        name, _sep, value = item.partition(" ")
        name = aliases.get(name, name)
        if name in mapping:
            raise ValueError(f"{where}: {name} appears twice")
        mapping[name] = scalar(value, f"{where} {name}") if value else True
    env = {}
    for item in literal(cell.get("env") or [], f"{where}.env"):
        key, _sep, value = item.partition("=")
        env[key] = value
    return {
        "gpu": match["hw"],
        "quant": match["quant"],
        "strategy": match["strategy"],
        "nodes": upstream_nodes(match["nodes"]),
        "verified": verified(cell, where),
        "env": env,
        "flags": mapping,
    }


def model_names(config: dict[str, Any], variant: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """({quant: checkpoint}, {gpu: {quant: checkpoint}}) of one variant: modelNames is keyed `variant|quant`, and
    `hw|variant|quant` where one GPU needs another checkpoint (the page's lookup order is the reverse)."""
    names = literal(config["modelNames"], "modelNames")
    base: dict[str, str] = {}
    per_gpu: dict[str, dict[str, str]] = {}
    for key, value in names.items():
        parts = key.split("|")
        if len(parts) == 2 and parts[0] == variant:
            base[parts[1]] = value
        elif len(parts) == 3 and parts[1] == variant:
            per_gpu.setdefault(parts[0], {})[parts[2]] = value
    return base, per_gpu


def images(config: dict[str, Any], gpus: Iterable[str]) -> dict[str, dict[str, str]]:
    """{gpu: {ref, sglang_version when the tag names the release}} from dockerImages, for the imported GPUs."""
    out: dict[str, dict[str, str]] = {}
    wanted = set(gpus)
    for key, ref in literal(config["dockerImages"], "dockerImages").items():
        if "|" in key:
            raise ValueError(f"dockerImages.{key}: images per precision or variant are not imported yet")
        if key not in wanted:
            continue
        tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
        match = _RELEASE_IN_TAG.search(tag)
        out[key] = {"ref": ref, **({"sglang_version": match.group(1)} if match else {})}
    return out


def _speed_point(s: dict[str, Any]) -> dict[str, Any]:
    return {"concurrency": s["workload"]["max_concurrency"], "ttft_ms": s["ttft_ms"], "tpot_ms": s["tpot_ms"],
            "tok_s_per_gpu": s["tokens_per_sec_per_gpu"]}


def benchmark_entries(config: dict[str, Any], benchmarks: list[dict[str, Any]], variant: str,
                      cells: set[tuple[str, str, str, int]]) -> list[dict[str, Any]]:
    """Published numbers of the imported cells; bare match stubs (pending upstream) and other variants are left
    out. latency: the percentile of TTFT/TPOT when the page says (the row's latencyPercentile, else the page's)."""
    out = []
    page_latency = config.get("latencyPercentile")
    for entry in benchmarks:
        if not entry.get("speed") and not entry.get("accuracy"):
            continue
        m = entry["match"]
        if m.get("variant", "default") != variant:
            continue
        key = (m["hw"], m["quant"], m["strategy"], upstream_nodes(m["nodes"]))
        if key not in cells:
            continue
        row: dict[str, Any] = {"gpu": m["hw"], "quant": m["quant"], "strategy": m["strategy"],
                               "nodes": upstream_nodes(m["nodes"]), "sglang": entry.get("sglang_version")}
        row.update(entry.get("accuracy") or {})
        latency = entry.get("latencyPercentile") or page_latency
        if latency:
            row["latency"] = latency
        pinned = _ACCEPT_LENGTH.search(entry.get("notes") or "")
        if pinned:
            row["simulated_accept_length"] = Decimal(pinned.group(1))
        row["speed"] = [_speed_point(s) for s in entry.get("speed") or []]
        row["_workloads"] = [s["workload"] for s in entry.get("speed") or []]
        out.append(row)
    return out


def workload(config: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The bench_serving workload of the page's published numbers: dataset, ISL and OSL from the rows (one for all
    of them), backend, range ratio and warm-up requests from the page's speed command."""
    command = literal(config["benchmarkCommands"]["speed"], "benchmarkCommands.speed")
    shapes = {(w["dataset"], w["isl"], w["osl"]) for row in rows for w in row["_workloads"]}
    if len(shapes) > 1:
        raise ValueError(f"the published numbers use several workloads {sorted(shapes)}; one per page is imported")
    dataset, isl, osl = shapes.pop() if shapes else ("random", None, None)

    def option(name: str) -> str | None:
        found = re.search(rf"--{name} (\S+)", command)
        return found.group(1) if found else None

    ratio = option("random-range-ratio")
    if ratio is None:
        raise ValueError(f"the speed command has no --random-range-ratio: {command!r}")
    out: dict[str, Any] = {"dataset": dataset, "isl": isl, "osl": osl, "range_ratio": Decimal(ratio)}
    warmup = option("warmup-requests")
    if warmup is not None:
        out["warmup_requests"] = int(warmup)
    out["backend"] = option("backend") or "sglang"
    return out


def prompts_per_concurrency(config: dict[str, Any], rows: list[dict[str, Any]]) -> dict[int, int]:
    """--num-prompts per --max-concurrency: the page's table, else the counts the published rows state."""
    table = literal(config["benchmarkCommands"].get("numPromptsByConc"), "benchmarkCommands.numPromptsByConc")
    if table:
        return {int(k): int(v) for k, v in table.items()}
    out: dict[int, int] = {}
    for row in rows:
        for w in row["_workloads"]:
            if "num_prompts" in w:
                if out.get(w["max_concurrency"], w["num_prompts"]) != w["num_prompts"]:
                    raise ValueError(f"rows disagree on --num-prompts at concurrency {w['max_concurrency']}")
                out[w["max_concurrency"]] = w["num_prompts"]
    return dict(sorted(out.items()))


# --- writing -----------------------------------------------------------------------------------------

def _quoted(value: Any) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _plain(value: Any) -> str:
    """A YAML scalar as upstream wrote it: numbers bare, strings quoted, None as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    return _quoted(value)


def _page_name(config: dict[str, Any], variant: str) -> str:
    return config["modelName"] + ("" if variant == "default" else f" (variant {variant})")


def _header(kind: str, source: dict[str, Any], page: str, name: str, file: str, commit: str) -> list[str]:
    short = source["revision"]
    url = f"https://github.com/{source['repository']}/blob/{commit}/{source['path']}{file}"
    return [
        "---",
        f"# {kind} of the SGLang cookbook's {name} page at upstream revision {short}.",
        "# Generated by tools/import_cookbook_cells.py from the unedited upstream file",
        f"# tests/fixtures/upstream/{page}/{short}/{file}; regenerate rather than edit (a unit test compares).",
        f'revision: "{short}"',
        f"commit: {commit}",
        f"source: {url}",
        *(f"# {line}" for line in textwrap.wrap(f"read: {source['read']}", 100)),
    ]


def _left_out(cells: list[dict[str, Any]], variant: str, gpus: set[str]) -> list[str]:
    others: dict[str, int] = {}
    for cell in cells:
        m = cell["match"]
        if m.get("variant", "default") == variant and m["hw"] not in gpus:
            others[m["hw"]] = others.get(m["hw"], 0) + 1
    if not others:
        return []
    listed = ", ".join(f"{gpu} ({n} cell{'s' if n > 1 else ''})" for gpu, n in others.items())
    return [f"# {line}" for line in textwrap.wrap(
        f"Left out: the page's cells on GPUs data/gpus.yml does not describe: {listed}. Add the GPU there (or in "
        "sglang_gpu_platforms for a site) and re-import to ship them.", 100)]


def selected_cells(config: dict[str, Any], variant: str, gpus: set[str]) -> list[dict[str, Any]]:
    cells = literal(config["cells"], "cells") if isinstance(config["cells"], Opaque) else config["cells"]
    return [c for c in cells
            if literal(c["match"], "cell.match").get("variant", "default") == variant and c["match"]["hw"] in gpus]


def dump_cells(source: dict[str, Any], page: str, config: dict[str, Any], aliases: dict[str, str], variant: str,
               gpus: set[str]) -> str:
    chosen = selected_cells(config, variant, gpus)
    cells = [convert_cell(c, aliases) for c in chosen]
    base, per_gpu = model_names(config, variant)
    imported = {c["gpu"] for c in cells}
    lines = _header("Serving cells", source, page, _page_name(config, variant), source["config_file"],
                    source["config_commit"])
    lines += _left_out(config["cells"], variant, gpus)
    lines += ["# The engine adds --model-path first and --host/--port last; site changes belong in `sglang_recipes`.",
              "checkpoints:"]
    lines += [f"  {quant}: {_quoted(ref)}" for quant, ref in base.items()]
    by_gpu = {gpu: refs for gpu, refs in per_gpu.items() if gpu in imported}
    if by_gpu:
        lines.append("# The checkpoint some GPUs need instead (the page's `hw|variant|quant` model names)")
        lines.append("checkpoints_by_gpu:")
        for gpu, refs in by_gpu.items():
            lines.append(f"  {gpu}: {{" + ", ".join(f"{q}: {_quoted(r)}" for q, r in refs.items()) + "}")
    lines += ["# Container image per GPU; sglang_version is the release the tag names (a floating tag names none)",
              "images:"]
    for gpu, image in images(config, imported).items():
        lines.append(f"  {gpu}: {{" + ", ".join(f"{k}: {_quoted(v)}" for k, v in image.items()) + "}")
    lines.append("cells:")
    for cell in cells:
        lines.append(f"  - gpu: {cell['gpu']}")
        for key in ("quant", "strategy", "nodes"):
            lines.append(f"    {key}: {cell[key]}")
        lines.append(f"    verified: {str(cell['verified']).lower()}")
        if cell["env"]:
            lines.append("    env:")
            lines.extend(f"      {k}: {_quoted(v)}" for k, v in cell["env"].items())
        else:
            lines.append("    env: {}")
        lines.append("    flags:")
        for name, value in cell["flags"].items():
            rendered = "true" if value is True else (str(value) if isinstance(value, int) else _quoted(value))
            lines.append(f"      {name}: {rendered}")
    return "\n".join(lines) + "\n"


def dump_benchmarks(source: dict[str, Any], page: str, config: dict[str, Any], benchmarks: list[dict[str, Any]],
                    aliases: dict[str, str], variant: str, gpus: set[str]) -> str:
    cells = {(c["gpu"], c["quant"], c["strategy"], c["nodes"])
             for c in (convert_cell(x, aliases) for x in selected_cells(config, variant, gpus))}
    rows = benchmark_entries(config, benchmarks, variant, cells)
    lines = _header("Published benchmark numbers", source, page, _page_name(config, variant),
                    source["benchmarks_file"], source["benchmarks_commit"])
    lines += [
        "# Cells without numbers upstream are pending there and absent here. tok_s_per_gpu is total (input +",
        "# output) tokens/s per GPU. simulated_accept_length: upstream pinned the speculative accept length",
        "# (SGLANG_SIMULATE_ACC_LEN) for the speed runs, so those are throughput-mechanism numbers, not",
        "# correctness evidence; a real deployment's accept length differs, and so will its numbers.",
        "# Workload (sglang.bench_serving, from the page's speed command) and --num-prompts per --max-concurrency:",
        "workload: {" + ", ".join(f"{k}: {_plain(v) if not isinstance(v, str) else v}"
                                  for k, v in workload(config, rows).items()) + "}",
        "prompts_per_concurrency: {" + ", ".join(f"{k}: {v}" for k, v in
                                                 prompts_per_concurrency(config, rows).items()) + "}",
        "cells:",
    ]
    for row in rows:
        head = ", ".join(f"{k}: {row[k] if k != 'sglang' else _plain(row[k])}"
                         for k in ("gpu", "quant", "strategy", "nodes", "sglang"))
        extra = [f"{k}: {_plain(v)}" for k, v in row.items() if k not in
                 ("gpu", "quant", "strategy", "nodes", "sglang", "speed", "simulated_accept_length", "_workloads")]
        lines.append(f"  - {{{head}{''.join(', ' + e for e in extra)},")
        if "simulated_accept_length" in row:
            lines.append(f"     simulated_accept_length: {_plain(row['simulated_accept_length'])},")
        speeds = [("{" + ", ".join(f"{k}: {_plain(v)}" for k, v in s.items()) + "}") for s in row["speed"]]
        lines.append("     speed: [" + (",\n             ".join(speeds)) + "]}")
    return "\n".join(lines) + "\n"


def import_revision(fixture: Path, aliases: dict[str, str], variant: str = "default",
                    gpus: Iterable[str] | None = None) -> dict[str, str]:
    """{file name: text} for data/models/<id>/cookbook/<short>/ from one fixture folder
    (tests/fixtures/upstream/<page>/<short>/), for one variant of the page and the GPUs given (default: every
    GPU of data/gpus.yml)."""
    source = yaml.safe_load((fixture / "source.yml").read_text(encoding="utf-8"))
    if source["revision"] != fixture.name or not source["config_commit"].startswith(source["revision"]):
        raise ValueError(f"{fixture}/source.yml: revision {source['revision']!r} must be the folder name and the "
                         f"first characters of config_commit {source['config_commit']!r}")
    known = set(gpus) if gpus is not None else gpu_ids()
    page = fixture.parent.name
    config = read_js_export((fixture / source["config_file"]).read_text(encoding="utf-8"), "config")
    benchmarks = read_js_export((fixture / source["benchmarks_file"]).read_text(encoding="utf-8"), "benchmarks")
    return {"cells.yml": dump_cells(source, page, config, aliases, variant, known),
            "benchmarks.yml": dump_benchmarks(source, page, config, benchmarks, aliases, variant, known)}


def aliases_of(root: Path = ROOT) -> dict[str, str]:
    return yaml.safe_load((root / "data/sglang/versions.yml").read_text(encoding="utf-8"))["aliases"]


def gpu_ids(root: Path = ROOT) -> set[str]:
    return set(yaml.safe_load((root / "data/gpus.yml").read_text(encoding="utf-8")))


def page_of(model_id: str, root: Path = ROOT) -> dict[str, str]:
    """The model's cookbook page and variant (data/models/<id>/model.yml `cookbook:`)."""
    doc = yaml.safe_load((root / "data" / "models" / model_id / "model.yml").read_text(encoding="utf-8"))
    page = doc.get("cookbook") or {}
    if not page.get("page"):
        raise ValueError(f"data/models/{model_id}/model.yml: no `cookbook: {{page, variant}}`; it is not imported")
    return {"page": str(page["page"]), "variant": str(page.get("variant", "default"))}


def import_model_revision(model_id: str, revision: str, root: Path = ROOT) -> dict[str, str]:
    page = page_of(model_id, root)
    return import_revision(root / "tests" / "fixtures" / "upstream" / page["page"] / revision, aliases_of(root),
                           page["variant"], gpu_ids(root))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    model_id, revision = argv
    files = import_model_revision(model_id, revision)
    out = ROOT / "data" / "models" / model_id / "cookbook" / revision
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    cells = files["cells.yml"].count("\n  - gpu: ")
    print(f"wrote {cells} cells and {files['benchmarks.yml'].count(chr(10) + '  - {')} benchmark rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
