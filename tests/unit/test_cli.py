"""recipe/cli.py reads command lines as argparse does, judged by Python's own argparse.

tests/slow/test_cli_emulation.py compares cli.py with SGLang's real parsers (in their venvs); this file needs none:
it builds a stdlib argparse parser from the same flag table (option strings in the parser's order, nargs, types,
actions, choices, defaults) and requires the same namespace or the same refusal, word for word, for hand-written
lines. Where argparse is not the oracle, the expectations are written by hand.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import flag_table_doc, router_flag_table_doc

SERVE = cli.Table.of(flag_table_doc("0.5.23"))
OLD = cli.Table.of(flag_table_doc("0.5.13.post1"))
ROUTER = cli.Table.of(router_flag_table_doc("0.3.2"))
TYPES: dict[str, Any] = {"int": int, "float": float, "str": None, "json": json.loads,
                         "human_int": cli.human_int, "nullable_str": cli.nullable_str}


class Refused(Exception):
    pass


class Ignore(argparse.Action):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise Refused(message)


def stdlib_parser(table: cli.Table) -> Parser:
    """argparse's own parser for a table: one add_argument per action, in the table's (the parser's) order."""
    parser = Parser(prog=table.prog)
    done: set[str] = set()
    for option, entry in table.flags.items():
        names = entry.get("names") or [option]
        if names[0] in done:
            continue
        done.update(names)
        kind = str(entry.get("action") or "store")
        kwargs: dict[str, Any] = {"dest": entry["dest"], "default": table.defaults.get(entry["dest"])}
        if entry.get("required"):
            kwargs["required"] = True
        if kind == "boolean_optional":
            longs = [n for n in names if not n.startswith("--no-")]
            parser.add_argument(*longs, action=argparse.BooleanOptionalAction, **kwargs)
            continue
        if kind == "store_const" and entry["nargs"] == 0:
            parser.add_argument(*names, action="store_const", const=entry.get("const"), **kwargs)
            continue
        if kind == "ignore":  # a retired flag (0.5.13.post1's DeprecatedAction): warns, stores nothing
            parser.add_argument(*names, action=Ignore, nargs=0, **kwargs)
            continue
        kwargs["type"] = TYPES.get(str(entry.get("type") or "str"))
        nargs = entry["nargs"]
        if nargs != 1 or entry.get("as_list"):
            kwargs["nargs"] = nargs
        if nargs == "?":
            kwargs["const"] = entry.get("const")
        if entry.get("choices") is not None:
            kwargs["choices"] = entry["choices"]
        parser.add_argument(*names, action="append" if kind == "append" else "store", **kwargs)
    return parser


def both(argv: list[str], table: cli.Table) -> tuple[Any, Any]:
    try:
        theirs: Any = json.loads(json.dumps(vars(stdlib_parser(table).parse_args(argv))))
    except Refused as exc:
        theirs = ("refused", str(exc))
    try:
        mine: Any = json.loads(json.dumps(cli.parse(argv, table).namespace))
    except cli.CliError as exc:
        mine = ("refused", exc.message)
    return mine, theirs


M = ["--model-path", "zai-org/GLM-5.3"]
LINES = {
    "alias": M + ["--tensor-parallel-size", "8"],
    "prefix": M + ["--tp", "8", "--dp", "8"],
    "equals": M + ["--tp-size=8", "--ep=4"],
    "prefix-equals": M + ["--dist-init=10.0.0.1:20000"],
    "ambiguous": M + ["--dist", "x"],
    "ambiguous-switch": M + ["--enable-dp", "--dp", "8"],
    "bad-int": M + ["--max-running-requests", "1e3"],
    "int-forms": M + ["--max-running-requests", " +1_000 ", "--tp-size", "-1"],
    "float-forms": M + ["--mem-fraction-static", "8.5e-1"],
    "bad-float": M + ["--mem-fraction-static", "85%"],
    "choice": M + ["--kv-cache-dtype", "fp9"],
    "int-choice": M + ["--log-requests-level", "9"],
    "switch-value": M + ["--enable-metrics=yes"],
    "switch-prefix": M + ["--enable-metric"],
    "bool-optional": M + ["--no-enable-tf32-matmul", "--enable-fused-qk-norm-rope"],
    "nargs-plus": M + ["--cuda-graph-bs-decode", "1", "2", "4"],
    "nargs-plus-empty": M + ["--cuda-graph-bs-decode", "--tp-size", "8"],
    "nargs-optional": M + ["--model-checksum"],
    "value-missing": M + ["--tp-size"],
    "value-is-a-flag": M + ["--served-model-name", "-x"],
    "required": ["--tp-size", "8"],
    "unknown": M + ["--tp-szie", "8", "extra"],
    "double-dash": M + ["--", "--tp-size", "8"],
    "json": M + ["--preferred-sampling-params", '{"top_p": 0.95}'],
    "bad-json": M + ["--preferred-sampling-params", "{top_p}"],
    "repeated": M + ["--tp-size", "16", "--tensor-parallel-size", "8"],
    "model-alias": ["--model", "x"],
}
ROUTER_LINES = {
    "pd": ["--pd-disaggregation", "--prefill", "http://a:30000", "9000", "--prefill", "http://b:30000",
           "--decode", "http://c:30100", "--host", "0.0.0.0", "--port", "8000"],
    "prefix": ["--worker-urls", "http://a:30000", "--hos", "1.2.3.4", "--pol", "round_robin"],
    "ambiguous": ["--pre", "x"],
    "bad-port": ["--port", "8k"],
}


@pytest.mark.parametrize("name", LINES)
def test_serve_lines_read_as_argparse_reads_them(name: str) -> None:
    mine, theirs = both(LINES[name], SERVE)
    assert mine == theirs


@pytest.mark.parametrize("name", LINES)
def test_the_older_release_too(name: str) -> None:
    mine, theirs = both(LINES[name], OLD)
    assert mine == theirs


@pytest.mark.parametrize("name", ROUTER_LINES)
def test_router_lines_read_as_argparse_reads_them(name: str) -> None:
    mine, theirs = both(ROUTER_LINES[name], ROUTER)
    assert mine == theirs


def test_what_the_lines_mean() -> None:
    """Hand-written: what SGLang 0.5.23 makes of them (its parser, tests/fixtures-free)."""
    ns = cli.parse(LINES["prefix"], SERVE).namespace
    assert (ns["tp_size"], ns["dp_size"], ns["model_path"]) == (8, 8, "zai-org/GLM-5.3")
    assert cli.parse(LINES["alias"], SERVE).namespace["tp_size"] == 8
    assert cli.parse(LINES["prefix-equals"], SERVE).namespace["dist_init_addr"] == "10.0.0.1:20000"
    assert cli.parse(M + ["--context-length", "128k"], SERVE).namespace["context_length"] == 128000
    assert cli.parse(M + ["--context-length", "1Ki"], SERVE).namespace["context_length"] == 1024
    with pytest.raises(cli.CliError, match=r"^argument --max-running-requests: invalid int value: '1e3'$"):
        cli.parse(LINES["bad-int"], SERVE)
    with pytest.raises(cli.CliError, match=r"^ambiguous option: --dist could match --dist-timeout, --dist-init-addr$"):
        cli.parse(LINES["ambiguous"], SERVE)
    # 0.5.13.post1 names the same flag's dest differently
    assert cli.parse(LINES["alias"], OLD).namespace["tensor_parallel_size"] == 8
    pd = cli.parse(ROUTER_LINES["pd"], ROUTER).namespace
    assert pd["prefill"] == [["http://a:30000", "9000"], ["http://b:30000"]] and pd["decode"] == [["http://c:30100"]]


def test_occurrences_say_what_set_each_dest() -> None:
    parsed = cli.parse(LINES["repeated"], SERVE)
    assert [(o.option, o.written, o.value) for o in parsed.occurrences if o.dest == "tp_size"] == [
        ("--tp-size", "--tp-size", 16), ("--tensor-parallel-size", "--tensor-parallel-size", 8)]
    assert list(parsed.repeated(SERVE)) == ["tp_size"]
    appended = cli.parse(ROUTER_LINES["pd"], ROUTER)
    assert appended.repeated(ROUTER) == {}
    assert cli.resolve("--dist-init", SERVE) == "--dist-init-addr" and cli.resolve("--nccl-init-addr", SERVE) == "--nccl-init-addr"
    with pytest.raises(cli.CliError, match="unrecognized arguments: --nope"):
        cli.resolve("--nope", SERVE)
