"""recipe/cli.py reads a command line as the real parser of the release reads it: same namespace, or the same refusal.

The expectations come from SGLang's and sglang-router's own argparse parsers (tests/slow/parse_with_sglang.py in
the parser venvs), never from cli.py: every shipped cell's default and plain render under the release that runs it,
every knob combination and bad-input render of test_sglang_parser.py, the routers' command lines, and hand-written
tricky command lines (aliases, prefixes, `=`, ambiguous prefixes, bad numbers, choices, nargs, switches).

A refusal must read the same, word for word, except where the value's type is one of SGLang's own converters
(human_int, json, other:<function>): those messages are SGLang's text, and only their "argument --flag:" part
must match.
"""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import flag_table_doc, router_flag_table_doc
from ansible_collections.metalserve.sglang.tests.helpers import ROOT, selection_of, upstream_nodes
from ansible_collections.metalserve.sglang.tests.slow.test_sglang_parser import (
    CELLS, KNOB_COMBOS, PARSER_PY, PINNED, cell_id, example_router_argv, parse, parser_python)

pytestmark = pytest.mark.slow
M = ["--model-path", "zai-org/GLM-5.3"]

#: hand-written command lines for `sglang serve` 0.5.23 (what an operator might type in sglang_extra_args)
TRICKY: dict[str, list[str]] = {
    "alias-tensor-parallel-size": M + ["--tensor-parallel-size", "8"],
    "prefix-tp": M + ["--tp", "8"],
    "prefix-tp-equals": M + ["--tp=8"],
    "equals": M + ["--tp-size=8", "--dp-size=8", "--enable-dp-attention"],
    "alias-nccl-init-addr": M + ["--nnodes", "2", "--node-rank", "1", "--nccl-init-addr", "10.0.0.1:20000"],
    "prefix-dist-init": M + ["--dist-init=10.0.0.1:20000"],
    "ambiguous-dist": M + ["--dist", "10.0.0.1:20000"],
    "ambiguous-enable-dp": M + ["--enable-dp", "--dp", "8"],
    "ambiguous-cuda-graph-max-bs": M + ["--cuda-graph-max-bs", "8"],
    "alias-model": ["--model", "zai-org/GLM-5.3", "--ep", "4"],
    "alias-expert-parallel-size": M + ["--expert-parallel-size", "8"],
    "alias-data-parallel-size": M + ["--data-parallel-size", "8"],
    "two-spellings-of-tp": M + ["--tp-size", "16", "--tensor-parallel-size", "8"],
    "int-1e3": M + ["--max-running-requests", "1e3"],
    "int-float": M + ["--tp-size", "8.0"],
    "int-underscore": M + ["--max-running-requests", "1_000"],
    "int-plus-and-spaces": M + ["--tp-size", " +8 "],
    "int-negative": M + ["--max-running-requests", "-1"],
    "float-exponent": M + ["--mem-fraction-static", "8.5e-1"],
    "float-bad": M + ["--mem-fraction-static", "85%"],
    "human-int-k": M + ["--context-length", "128k", "--max-total-tokens", "1Ki"],
    "human-int-bad": M + ["--context-length", "1e3"],
    "json": M + ["--json-model-override-args", '{"rope_scaling": null}', "--preferred-sampling-params", '{"top_p": 0.95}'],
    "json-bad": M + ["--preferred-sampling-params", "{top_p: 0.95}"],
    "nullable-str": M + ["--quantization-param-path", "None"],
    "choice-bad": M + ["--kv-cache-dtype", "fp8"],
    "choice-int": M + ["--log-requests-level", "2"],
    "choice-int-bad": M + ["--log-requests-level", "9"],
    "switch-with-value": M + ["--enable-metrics=true"],
    "switch-prefix": M + ["--enable-metric"],
    "boolean-optional-no": M + ["--no-enable-tf32-matmul"],
    "boolean-optional-yes": M + ["--enable-tf32-matmul"],
    "deprecated-store-true": M + ["--enable-dp-attention", "--dp-size", "8"],
    "deprecated-store-const": M + ["--monokernel-backend", "amd"],
    "optional-value-bare": M + ["--model-checksum"],
    "optional-value-given": M + ["--model-checksum", "abc"],
    "nargs-plus": M + ["--cuda-graph-bs-decode", "1", "2", "4", "8"],
    "nargs-plus-empty": M + ["--cuda-graph-bs-decode", "--tp-size", "8"],
    "nargs-star": M + ["--lora-paths", "a", "b"],
    "value-missing": M + ["--tp-size"],
    "value-looks-like-a-flag": M + ["--served-model-name", "-x"],
    "required-missing": ["--tp-size", "8"],
    "unknown": M + ["--tp-szie", "8"],
    "stray-value": M + ["8"],
    "double-dash": M + ["--", "--tp-size", "8"],
    "hicache-alias": M + ["--enable-hicache", "--hicache-ratio", "2"],
    "api-key": M + ["--api-key", "sk-not-a-real-key"],
    "repeated-flag": M + ["--port", "30000", "--port", "30001"],
}
#: hand-written command lines for `sglang serve` 0.5.13.post1 (the ROCm images' release: other dests, retired flags)
TRICKY_0513: dict[str, list[str]] = {
    "tp-size-is-tensor-parallel-size": M + ["--tp-size", "8"],
    "prefix-tp": M + ["--tp", "8", "--dp", "8"],
    "old-cuda-graph-max-bs": M + ["--cuda-graph-max-bs", "64"],
    "new-cuda-graph-max-bs-decode": M + ["--cuda-graph-max-bs-decode", "64"],
    "retired-flag-warns-and-stores-nothing": M + ["--enable-piecewise-cuda-graph"],
    "deprecated-alias-stores": M + ["--nsa-prefill-backend", "tilelang"],
    "deprecated-store-true": M + ["--stream-output"],
    "int-1e3": M + ["--watchdog-timeout", "1e3"],
    "ambiguous-dist": M + ["--dist", "x"],
}
#: hand-written command lines for sglang-router 0.3.2
TRICKY_ROUTER: dict[str, list[str]] = {
    "pd-two-prefill": ["--pd-disaggregation", "--prefill", "http://10.0.0.1:30000", "9000", "--prefill",
                       "http://10.0.0.2:30000", "--decode", "http://10.0.0.3:30100", "--host", "0.0.0.0"],
    "plain-workers": ["--worker-urls", "http://a:30000", "http://b:30000", "--policy", "power_of_two"],
    "host-prefix-with-port": ["--worker-urls", "http://a:30000", "--hos", "0.0.0.0:8000"],
    "port-bad": ["--worker-urls", "http://a:30000", "--port", "8k"],
    "ambiguous-pre": ["--prefill", "http://a:30000", "--decode", "http://b:30100", "--pre", "x"],
    "policy-bad": ["--worker-urls", "http://a:30000", "--policy", "least_load"],
    "selector-pairs": ["--service-discovery", "--selector", "app=sglang", "tier=gpu"],
    "api-key": ["--worker-urls", "http://a:30000", "--api-key", "sk-not-a-real-key"],
}
CONVERTED_BY_SGLANG = ("human_int", "json", "nullable_str")


def read(argv: list[str], table: cli.Table) -> dict[str, Any]:
    try:
        parsed = cli.parse(argv, table)
    except cli.CliError as exc:
        return {"ok": False, "error": exc.message, "ns": {}}
    return {"ok": True, "error": "", "ns": json.loads(json.dumps(parsed.namespace))}


def own_converter(error: str, table: cli.Table) -> bool:
    """Whether a refusal is about a value one of SGLang's own type functions converts (its words, not argparse's)."""
    head = error.split(":", 1)[0]
    if not head.startswith("argument "):
        return False
    option = head[len("argument "):].split("/", 1)[0]
    kind = str(table.flags.get(option, {}).get("type") or "str")
    return kind in CONVERTED_BY_SGLANG or kind.startswith("other:")


def agree(mine: dict[str, Any], real: dict[str, Any], table: cli.Table) -> str:
    """'' when the emulation reads the line as the real parser does, else what differs."""
    if mine["ok"] != real["ok"]:
        return f"real parser {'accepts' if real['ok'] else 'refuses: ' + real['error']}; cli.py " \
               f"{'accepts' if mine['ok'] else 'refuses: ' + mine['error']}"
    if not real["ok"]:
        if own_converter(real["error"], table):
            same = mine["error"].split(":", 1)[0] == real["error"].split(":", 1)[0]
        else:
            same = mine["error"] == real["error"]
        return "" if same else f"real: {real['error']!r}; cli.py: {mine['error']!r}"
    diff = {k: (mine["ns"].get(k, "(absent)"), real["ns"].get(k, "(absent)"))
            for k in sorted(set(mine["ns"]) | set(real["ns"])) if mine["ns"].get(k, "(absent)") != real["ns"].get(k, "(absent)")}
    return f"namespaces differ (cli.py, real): {diff}" if diff else ""


@pytest.fixture(scope="module")
def lines() -> dict[str, dict[str, Any]]:
    """{release: {"serve": {key: argv}, "router": {key: argv}}}: everything to compare, by the release that reads it."""
    if not PARSER_PY:
        pytest.skip("SGLANG_PARSER_PYTHON is not set (make slow sets it)")
    out: dict[str, dict[str, Any]] = {}
    for model, rev, cell in CELLS:
        selection = selection_of(cell, model=model, cookbook_revision=rev)
        release = recipe_engine.recipe(selection)["sglang_version"]
        serve = out.setdefault(release, {"serve": {}, "router": {}})["serve"]
        nodes = upstream_nodes(cell["match"]["nodes"])
        for rank in range(nodes):
            head = "10.0.0.1" if nodes > 1 else None
            key = f"{cell_id((model, rev, cell))}#{rank}"
            serve[f"default:{key}"] = recipe_engine.serve_args(selection, rank, head)
            serve[f"plain:{key}"] = recipe_engine.serve_args(
                selection_of(cell, model=model, cookbook_revision=rev, parsers=False, metrics=False), rank, head)
            uv = selection_of(cell, model=model, cookbook_revision=rev, sglang_version=PINNED, install_method="uv")
            out.setdefault(PINNED, {"serve": {}, "router": {}})["serve"][f"uv:{key}"] = \
                recipe_engine.serve_args(uv, rank, head)
    pinned = out.setdefault(PINNED, {"serve": {}, "router": {}})
    for name, selection in KNOB_COMBOS.items():
        nodes = selection.get("nodes", 1)
        pinned["serve"][f"knob:{name}"] = recipe_engine.serve_args(selection, nodes - 1, "10.0.0.1" if nodes > 1 else None)
    # (the parser layer of tests/bad_inputs.yml is, by definition, what only SGLang's parser judges: left out)
    pinned["serve"].update({f"tricky:{k}": v for k, v in TRICKY.items()})
    out.setdefault("0.5.13.post1", {"serve": {}, "router": {}})["serve"].update(
        {f"tricky:{k}": v for k, v in TRICKY_0513.items()})
    pinned["router"] = {"example-pd": example_router_argv(),
                        "plain": recipe_engine.router_args({"workers": ["http://a:30000"], "policy": "cache_aware"}),
                        **{f"tricky:{k}": v for k, v in TRICKY_ROUTER.items()}}
    return out


@pytest.fixture(scope="module")
def compared(lines: dict[str, dict[str, Any]]) -> dict[str, dict[str, str]]:
    """{release: {key: '' or what differs}} for every line, each read by the real parser and by cli.py."""
    missing = sorted(r for r in lines if not parser_python(r))
    assert not missing, f"no parser venv for SGLang {', '.join(missing)}"
    result: dict[str, dict[str, str]] = {}
    for release, batch in lines.items():
        real = parse(parser_python(release), batch["serve"], batch["router"] or None)
        assert real["version"] == release
        serve_table = cli.Table.of(flag_table_doc(release))
        router_table = cli.Table.of(router_flag_table_doc(recipe_engine.load_catalog().versions["router_pinned"]))
        verdicts = {f"serve {k}": agree(read(v, serve_table), real["serve"][k], serve_table) for k, v in batch["serve"].items()}
        verdicts.update({f"router {k}": agree(read(v, router_table), real["router"][k], router_table)
                         for k, v in batch["router"].items()})
        result[release] = verdicts
        refused = sum(1 for k in batch["serve"] if not real["serve"][k]["ok"]) + sum(
            1 for k in batch["router"] if not real["router"][k]["ok"])
        print(f"\nSGLang {release}: {len(verdicts)} command lines read by cli.py and by the real parser "
              f"({refused} refused by it)")
    return result


def test_every_line_reads_as_the_real_parser_reads_it(compared: dict[str, dict[str, str]]) -> None:
    differ = {f"{release} {key}": why for release, verdicts in compared.items() for key, why in verdicts.items() if why}
    assert not differ, "\n".join(f"{k}: {v}" for k, v in sorted(differ.items()))


def test_both_shipped_releases_and_the_router_were_compared(compared: dict[str, dict[str, str]]) -> None:
    assert set(compared) == {"0.5.23", "0.5.18", "0.5.13.post1"}  # 0.5.18: the DeepSeek-V4 page's ROCm images
    assert any(k.startswith("router ") for k in compared[PINNED])
    assert sum(1 for k in compared[PINNED] if k.startswith("serve tricky:")) == len(TRICKY)


def test_the_comparison_can_disagree(lines: dict[str, dict[str, Any]]) -> None:
    """A table that lost an alias reads a line differently from the real parser, and the comparison says so."""
    del lines
    doc = flag_table_doc(PINNED)
    broken = cli.Table.of({**doc, "flags": {k: v for k, v in doc["flags"].items() if k != "--tensor-parallel-size"}})
    real = parse(PARSER_PY, {"alias": TRICKY["alias-tensor-parallel-size"]})["serve"]["alias"]
    assert real["ok"] and real["ns"]["tp_size"] == 8
    assert agree(read(TRICKY["alias-tensor-parallel-size"], broken), real, broken)


def test_committed_router_table_is_what_the_router_parser_accepts() -> None:
    if not PARSER_PY:
        pytest.skip("SGLANG_PARSER_PYTHON is not set")
    release = recipe_engine.load_catalog().versions["router_pinned"]
    proc = subprocess.run([PARSER_PY, str(ROOT / "tools" / "sglang_flag_table.py"), "--from-parser", "--router"],
                          capture_output=True, text=True, check=True, timeout=300)
    assert yaml.safe_load(proc.stdout) == router_flag_table_doc(release), \
        f"data/sglang/flags-router-{release}.yml is stale: regenerate it with tools/sglang_flag_table.py --from-parser --router"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-s"]))
