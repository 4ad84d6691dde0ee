"""SGLang's and sglang-router's own parsers over every command of many rendered sites (tests/validators.py: the
inventories, the lab shapes, the option sites, generated sites), each server argv by the parser of the release that
runs it, each router argv by sglang-router's; and the plan held to them where one flag is planted in one host: the plan
refuses the host exactly when the release's parser refuses the command it would run (the host's rendered argv when
the plan accepts it, else the base argv with the planted flag, as the node would have had it).

Needs the parser venvs (`make slow` passes them: SGLANG_PARSER_PYTHON for 0.5.23, SGLANG_PARSER_PYTHON_<release> for
the others); all commands of one release go through one subprocess.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.tests import validators as v

pytestmark = pytest.mark.slow
PINNED = recipe_engine.load_catalog().versions["pinned"]
HELPER = Path(__file__).with_name("parse_with_sglang.py")


def parser_python(release: str) -> str:
    if release in (PINNED, "router"):
        return os.environ.get("SGLANG_PARSER_PYTHON", "")
    return os.environ.get("SGLANG_PARSER_PYTHON_" + re.sub(r"[^0-9A-Za-z]", "_", release).upper(), "")


def parse(release: str, argvs: list[list[str]], router: bool = False) -> list[dict[str, Any]]:
    python = parser_python(release)
    if not python:
        pytest.skip(f"no parser venv for {release} (make slow builds them)")
    request = {"serve": [] if router else argvs, "router": argvs if router else []}
    proc = subprocess.run([python, str(HELPER)], input=json.dumps(request), capture_output=True, text=True,
                          check=False, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    return result["router" if router else "serve"]


@functools.lru_cache(maxsize=1)
def rendered() -> list[v.Rendered]:
    return [v.plan_and_render(name, site) for name, site in v.every_site().items()]


def test_every_server_command_is_read_by_its_releases_parser() -> None:
    commands = v.argvs(rendered(), "server")
    assert len(commands) >= 40
    refused = {}
    for release in sorted({r for r, _a in commands}):
        mine = [(argv, where) for (r, argv), where in commands.items() if r == release]
        for (argv, where), result in zip(mine, parse(release, [list(a) for a, _w in mine])):
            if not result["ok"]:
                refused[f"{release} {where[0]}"] = result["error"]
    assert refused == {}, refused


def test_every_router_command_is_read_by_sglang_routers_parser() -> None:
    commands = v.argvs(rendered(), "router")
    assert len(commands) >= 15
    results = parse("router", [list(a) for _r, a in commands], router=True)
    refused = {where[0]: r["error"] for ((_r, _a), where), r in zip(commands.items(), results) if not r["ok"]}
    assert refused == {}, refused


M = v.Mutation
MUTATIONS = [
    M("int-written-as-1e3", "parser", "options-docker", "h1", (("sglang_extra_args", {"--max-running-requests": "1e3"}),)),
    M("int-as-a-float", "parser", "options-docker", "h1", (("sglang_extra_args", {"--dist-timeout": "1.5"}),)),
    M("float-with-a-percent", "parser", "options-docker", "h1", (("sglang_extra_args", {"--mem-fraction-static": "85%"}),)),
    M("choice-it-lacks", "parser", "options-docker", "h1", (("sglang_extra_args", {"--attention-backend": "fa99"}),)),
    M("a-switch-given-a-value", "parser", "options-docker", "h1", (("sglang_extra_args", ["--enable-mixed-chunk", "yes"]),)),
    M("unknown-flag", "parser", "options-docker", "h1", (("sglang_extra_args", {"--max-runing-requests": 8}),)),
    M("float-in-range", "parser", "options-docker", "h1", (("sglang_extra_args", {"--mem-fraction-static": "0.9"}),)),
    M("negative-int", "parser", "options-docker", "h1", (("sglang_extra_args", {"--chunked-prefill-size": "-1"}),)),
    M("prefix-of-a-flag", "parser", "options-docker", "h1", (("sglang_extra_args", ["--max-running=256"]),)),
    M("a-switch", "parser", "options-uv", "h1", (("sglang_extra_args", {"--enable-mixed-chunk": True}),)),
    M("agreeing-metrics", "parser", "options-docker", "h1", (("sglang_extra_args", {"--enable-metrics": True}),)),
    M("agreeing-port", "parser", "options-docker", "h1", (("sglang_extra_args", {"--port": 30000}),)),
    M("router-int-it-refuses", "router-parser", "options-docker", "r1",
      (("sglang_router_extra_args", ["--max-payload-size", "abc"]),)),
    M("router-choice-it-lacks", "router-parser", "options-docker", "r1",
      (("sglang_router_extra_args", ["--log-level", "verbose"]),)),
    M("router-int", "router-parser", "options-docker", "r1", (("sglang_router_extra_args", ["--max-payload-size", "1024"]),)),
    M("router-agreeing-policy", "router-parser", "options-docker", "r1",
      (("sglang_router_extra_args", ["--policy", "cache_aware"]),)),
]


def planted(m: v.Mutation, base: list[str]) -> list[str]:
    """The base command with the planted flag appended, as the node would run it had the plan let it through."""
    values = dict(m.values)
    given = values.get("sglang_extra_args", values.get("sglang_router_extra_args"))
    if isinstance(given, dict):
        tokens = []
        for flag, value in given.items():
            tokens += [flag] + ([] if value is True else [str(value)])
        return base + tokens
    return base + [str(t) for t in given]


@functools.lru_cache(maxsize=1)
def judged() -> dict[str, tuple[list[str], dict[str, Any], list[str], str]]:
    """{mutation: (the plan's refusals, the parser's result, the argv it read, the release)}, every release's argvs
    in one parser call."""
    asked: dict[str, tuple[list[str], list[str], str, bool]] = {}
    for m in MUTATIONS:
        site = v.every_site()[m.site]
        before = v.plan_and_render("base", site).plans[m.host]
        after = v.plan_and_render(m.name, m.apply(site))
        checker = after.errors.get(m.host, [])
        router = m.domain == "router-parser"
        release = "router" if router else str(before["recipe"]["sglang_version"])
        argv = planted(m, list(before["argv"])) if checker else list(after.plans[m.host]["argv"])
        asked[m.name] = (checker, argv, release, router)
    out = {}
    for release, router in sorted({(r, ro) for _c, _a, r, ro in asked.values()}):
        names = [n for n, (_c, _a, r, ro) in asked.items() if (r, ro) == (release, router)]
        for name, result in zip(names, parse(release, [asked[n][1] for n in names], router=router)):
            out[name] = (asked[name][0], result, asked[name][1], release)
    return out


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: f"{m.domain}-{m.name}")
def test_the_plan_refuses_what_the_parser_refuses(mutation: v.Mutation) -> None:
    checker, result, argv, release = judged()[mutation.name]
    assert bool(checker) == (not result["ok"]), (
        f"{mutation.name}: the plan {'refuses' if checker else 'accepts'} it, the {release} parser "
        f"{'accepts' if result['ok'] else 'refuses'} it\nplan: {checker}\nparser: {result['error']}\nargv: {argv}")


def test_the_parsers_are_given_commands_they_refuse_and_commands_they_take() -> None:
    """The agreement above can fail either way."""
    seen = {(m.domain, judged()[m.name][1]["ok"]) for m in MUTATIONS}
    assert seen == {(d, ok) for d in ("parser", "router-parser") for ok in (True, False)}, seen


H200_HT = {"gpu": "h200", "quant": "fp8", "strategy": "high-throughput"}
H200_LL = {"gpu": "h200", "quant": "fp8", "strategy": "low-latency"}
#: flags the collection sets, given again: (selection, the tokens given); the plan calls them agreement or contradiction
CLAIMS = [
    (H200_HT, ["--enable-metrics"]),
    (H200_HT, ["--port", "30000"]),
    (H200_HT, ["--port=30000"]),
    (H200_HT, ["--host", "0.0.0.0"]),
    (H200_HT, ["--data-parallel-size", "8"]),
    (H200_HT, ["--model", "zai-org/GLM-5.3"]),
    ({**H200_HT, "model_path": "/nvme/glm"}, ["--model-path", "/nvme/glm"]),
    (H200_HT, ["--port", "31000"]),
    (H200_HT, ["--dp-size", "4"]),
    ({**H200_HT, "metrics": False}, ["--enable-metrics"]),
    (H200_LL, ["--enable-dp-attention"]),
    (H200_HT, ["--served-model-name", "glm"]),
]


def test_agreement_is_what_the_release_reads_the_same() -> None:
    """The plan's agreement (a warning) and contradiction (a refusal) of a flag it sets, against SGLang 0.5.23's own
    parser: the command with the flag given again holds the same namespace exactly when the plan agrees."""
    verdicts, pairs = [], []
    for selection, tokens in CLAIMS:
        base = recipe_engine.serve_args(selection)
        try:
            recipe_engine.serve_args({**selection, "extra_args": tokens})
            agrees = True
        except RecipeError:
            agrees = False
        verdicts.append(agrees)
        pairs += [base, base + tokens]
    results = parse(PINNED, pairs)
    for (selection, tokens), agrees, before, after in zip(CLAIMS, verdicts, results[::2], results[1::2]):
        assert before["ok"] and after["ok"], (tokens, before["error"], after["error"])
        assert agrees == (before["ns"] == after["ns"]), (
            f"{tokens} on {selection}: the plan {'agrees' if agrees else 'refuses'}, SGLang reads "
            f"{'the same' if before['ns'] == after['ns'] else 'another'} namespace")
    assert set(verdicts) == {True, False}
