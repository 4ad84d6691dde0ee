"""Import one revision of the SGLang cookbook's GLM-5.3 page into data/.

Input: a folder with the page's two upstream files exactly as published at one commit
(glm-5.3.jsx, glm-5.3-benchmarks.jsx) and our note of where they come from (source.yml:
repository, path, commit of each file, when and how they were read). Output: a folder
data/models/glm-5.3/cookbook/<short commit>/ with
  cells.yml       the revision's images and its cells (gpu x precision x strategy x node count)
  benchmarks.yml  its published numbers (cells upstream leaves pending are absent)

The cookbook writes each cell as `--flag value` strings wrapped by `--model-path {{MODEL_NAME}}` and
`--host {{HOST_IP}} --port {{PORT}}`. We store the flags between those as an ordered mapping under
their full names (argparse prefixes such as --tp become --tp-size); the engine adds model path,
host and port. Values are kept as written ("0.80" stays "0.80"), and so are published numbers.

Usage: python tools/import_cookbook_cells.py tests/fixtures/upstream/<short> data/models/glm-5.3/cookbook/<short>
A new upstream revision: put its two files, unedited, and a source.yml under tests/fixtures/upstream/<short>/,
run this, add <short> to `cookbook_revisions` in data/models/glm-5.3/model.yml (newest first) and review
the diff. tests/unit/test_cookbook_revisions.py re-runs the import of every shipped revision and
compares it with data/ byte for byte.
"""
from __future__ import annotations

import re
import sys
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
HEAD = "--model-path {{MODEL_NAME}}"
TAIL = ["--host {{HOST_IP}}", "--port {{PORT}}"]
CONFIG_FILE = "glm-5.3.jsx"
BENCHMARKS_FILE = "glm-5.3-benchmarks.jsx"
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
  | (?P<punct>[{}\[\]:,;=])
""", re.S | re.X)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


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
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise JsLiteralError(f"unexpected character {text[pos]!r} at offset {pos}")
        kind = m.lastgroup or ""
        if kind != "space":
            out.append((kind, m.group(), pos))
        pos = m.end()
    return out


def _number(text: str) -> int | Decimal:
    """Integers stay int; decimals keep their written digits (14.20 is not 14.2 when we write it back)."""
    return int(text) if re.fullmatch(r"-?\d+", text) else Decimal(text)


class _Reader:
    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.tokens, self.i = tokens, 0

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

    def value(self) -> Any:
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
            if kind == "string":
                key = _unescape(text[1:-1])
            elif kind in ("name", "number"):
                key = text
            else:
                raise JsLiteralError(f"unexpected object key {text!r} at offset {pos}")
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
    """The value of `export const <name> = <literal>;` in a JS module made only of literals."""
    tokens = _tokens(text)
    for i in range(len(tokens) - 3):
        if [t[1] for t in tokens[i:i + 4]] == ["export", "const", name, "="]:
            reader = _Reader(tokens[i + 4:])
            return reader.value()
    raise JsLiteralError(f"no `export const {name} =` in the file")


# --- page -> our data --------------------------------------------------------------------------------

def upstream_nodes(value: str) -> int:
    if value == "single":
        return 1
    if value.startswith("multi-"):
        return int(value.split("-", 1)[1])
    raise ValueError(f"unknown upstream nodes value {value!r}")


def scalar(text: str) -> Any:
    """Keep integers as integers; everything else as the exact string upstream wrote."""
    return int(text) if text.isdigit() else text


def convert_cell(cell: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    flags = list(cell["flags"])
    match = cell["match"]
    where = f"{match}"
    if match.get("variant", "default") != "default":
        raise ValueError(f"{where}: only the default variant is imported")
    if flags[0] != HEAD or flags[-2:] != TAIL:
        raise ValueError(f"{where}: expected {HEAD!r} first and {TAIL} last, got {flags}")
    mapping: dict[str, Any] = {}
    for item in flags[1:-2]:
        name, _sep, value = item.partition(" ")
        name = aliases.get(name, name)
        if name in mapping:
            raise ValueError(f"{where}: {name} appears twice")
        mapping[name] = scalar(value) if value else True
    env = {}
    for item in cell.get("env") or []:
        key, _sep, value = item.partition("=")
        env[key] = value
    return {
        "gpu": match["hw"],
        "quant": match["quant"],
        "strategy": match["strategy"],
        "nodes": upstream_nodes(match["nodes"]),
        "verified": bool(cell["verified"]),
        "env": env,
        "flags": mapping,
    }


def model_names(config: dict[str, Any]) -> dict[str, str]:
    """{quant: checkpoint} of the default variant."""
    return {key.split("|", 1)[1]: value for key, value in config["modelNames"].items()
            if key.split("|", 1)[0] == "default"}


def images(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    """{gpu: {ref, sglang_version when the tag names the release}} from dockerImages."""
    out: dict[str, dict[str, str]] = {}
    for gpu, ref in config["dockerImages"].items():
        tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
        match = _RELEASE_IN_TAG.search(tag)
        out[gpu] = {"ref": ref, **({"sglang_version": match.group(1)} if match else {})}
    return out


def benchmark_entries(benchmarks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells with published numbers; bare match stubs (pending upstream) are left out."""
    out = []
    for entry in benchmarks:
        if not entry.get("speed") and not entry.get("accuracy"):
            continue
        m = entry["match"]
        if m.get("variant", "default") != "default":
            continue
        row: dict[str, Any] = {"gpu": m["hw"], "quant": m["quant"], "strategy": m["strategy"],
                               "nodes": upstream_nodes(m["nodes"]), "sglang": entry.get("sglang_version")}
        row.update(entry.get("accuracy") or {})
        pinned = _ACCEPT_LENGTH.search(entry.get("notes") or "")
        if pinned:
            row["simulated_accept_length"] = Decimal(pinned.group(1))
        speed = []
        for s in entry.get("speed") or []:
            w = s["workload"]
            if (w["dataset"], w["isl"], w["osl"]) != ("random", 8192, 1024):
                raise ValueError(f"{m}: workload {w} is not the random 8192/1024 one this file describes")
            speed.append({"concurrency": w["max_concurrency"], "ttft_ms": s["ttft_ms"], "tpot_ms": s["tpot_ms"],
                          "tok_s_per_gpu": s["tokens_per_sec_per_gpu"]})
        row["speed"] = speed
        out.append(row)
    return out


def workload(config: dict[str, Any]) -> dict[str, Any]:
    """The bench_serving options of the page's speed command that our benchmark playbook repeats."""
    command = config["benchmarkCommands"]["speed"]

    def option(name: str) -> str:
        found = re.search(rf"--{name} (\S+)", command)
        if not found:
            raise ValueError(f"the speed command has no --{name}: {command!r}")
        return found.group(1)

    return {"dataset": "random", "isl": 8192, "osl": 1024, "range_ratio": Decimal(option("random-range-ratio")),
            "warmup_requests": int(option("warmup-requests"))}


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


def _header(kind: str, source: dict[str, Any], file: str, commit: str) -> list[str]:
    short = source["revision"]
    url = f"https://github.com/{source['repository']}/blob/{commit}/{source['path']}{file}"
    return [
        "---",
        f"# {kind} of the SGLang cookbook's GLM-5.3 page at upstream revision {short}.",
        "# Generated by tools/import_cookbook_cells.py from the unedited upstream file",
        f"# tests/fixtures/upstream/{short}/{file}; regenerate rather than edit (a unit test compares).",
        f'revision: "{short}"',
        f"commit: {commit}",
        f"source: {url}",
        *(f"# {line}" for line in textwrap.wrap(f"read: {source['read']}", 100)),
    ]


def dump_cells(source: dict[str, Any], config: dict[str, Any], aliases: dict[str, str]) -> str:
    cells = [convert_cell(c, aliases) for c in config["cells"]]
    lines = _header("Serving cells", source, CONFIG_FILE, source["config_commit"])
    lines += ["# The engine adds --model-path first and --host/--port last; site changes belong in `sglang_recipes`.",
              "checkpoints:"]
    lines += [f"  {quant}: {_quoted(ref)}" for quant, ref in model_names(config).items()]
    lines += ["# Container image per GPU; sglang_version is the release the tag names (a floating tag names none)",
              "images:"]
    for gpu, image in images(config).items():
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


def dump_benchmarks(source: dict[str, Any], config: dict[str, Any], benchmarks: list[dict[str, Any]]) -> str:
    lines = _header("Published benchmark numbers", source, BENCHMARKS_FILE, source["benchmarks_commit"])
    lines += [
        "# Cells without numbers upstream are pending there and absent here. tok_s_per_gpu is total (input +",
        "# output) tokens/s per GPU. simulated_accept_length: upstream pinned the speculative accept length",
        "# (SGLANG_SIMULATE_ACC_LEN) for the speed runs, so those are throughput-mechanism numbers, not",
        "# correctness evidence; a real deployment's accept length differs, and so will its numbers.",
        "# Workload (sglang.bench_serving, from the page's speed command) and --num-prompts per --max-concurrency:",
        "workload: {" + ", ".join(f"{k}: {_plain(v) if not isinstance(v, str) else v}"
                                  for k, v in workload(config).items()) + "}",
        "prompts_per_concurrency: {" + ", ".join(f"{k}: {v}" for k, v in
                                                 config["benchmarkCommands"]["numPromptsByConc"].items()) + "}",
        "cells:",
    ]
    for row in benchmark_entries(benchmarks):
        head = ", ".join(f"{k}: {row[k] if k != 'sglang' else _plain(row[k])}"
                         for k in ("gpu", "quant", "strategy", "nodes", "sglang"))
        extra = [f"{k}: {_plain(v)}" for k, v in row.items() if k not in
                 ("gpu", "quant", "strategy", "nodes", "sglang", "speed", "simulated_accept_length")]
        lines.append(f"  - {{{head}{''.join(', ' + e for e in extra)},")
        if "simulated_accept_length" in row:
            lines.append(f"     simulated_accept_length: {_plain(row['simulated_accept_length'])},")
        speeds = [("{" + ", ".join(f"{k}: {_plain(v)}" for k, v in s.items()) + "}") for s in row["speed"]]
        lines.append("     speed: [" + (",\n             ".join(speeds)) + "]}")
    return "\n".join(lines) + "\n"


def import_revision(fixture: Path, aliases: dict[str, str]) -> dict[str, str]:
    """{file name: text} for data/models/glm-5.3/cookbook/<short>/ from one fixture folder."""
    source = yaml.safe_load((fixture / "source.yml").read_text(encoding="utf-8"))
    if source["revision"] != fixture.name or not source["config_commit"].startswith(source["revision"]):
        raise ValueError(f"{fixture}/source.yml: revision {source['revision']!r} must be the folder name and the "
                         f"first characters of config_commit {source['config_commit']!r}")
    config = read_js_export((fixture / CONFIG_FILE).read_text(encoding="utf-8"), "config")
    benchmarks = read_js_export((fixture / BENCHMARKS_FILE).read_text(encoding="utf-8"), "benchmarks")
    return {"cells.yml": dump_cells(source, config, aliases),
            "benchmarks.yml": dump_benchmarks(source, config, benchmarks)}


def aliases_of(root: Path = ROOT) -> dict[str, str]:
    return yaml.safe_load((root / "data/sglang/versions.yml").read_text(encoding="utf-8"))["aliases"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    fixture, out = Path(argv[0]), Path(argv[1])
    files = import_revision(fixture, aliases_of())
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    cells = files["cells.yml"].count("\n  - gpu: ")
    print(f"wrote {cells} cells and {files['benchmarks.yml'].count(chr(10) + '  - {')} benchmark rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
