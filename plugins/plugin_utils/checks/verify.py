# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge a serving endpoint's answers (playbooks/verify.yml). Pure: takes what the HTTP calls returned
(the uri module's results) and the target made from the host's plan; returns one row per check with pass/fail,
latency and, on failure, what is wrong and which setting to look at.

What a right answer is comes from the served model's data (the plan's `verify`, recipe/parsers.py: model.yml's parsers,
requests and verify entries over the release's parser table), so a site of several models judges each instance by its
own model: the reasoning parser and the request fields that turn reasoning on (e.g. `chat_template_kwargs:
{thinking_mode: enabled}`), the tool-call parser and what opens a tool call left unparsed. A model whose data names no
reasoning (or tool-call) parser, or whose `auto` parser the collection cannot resolve and whose data names no request
shape, has that check marked not applicable, with the reason. Every target carries `ask`: the arguments that hand its
request shapes to playbooks/files/verify_endpoint.py, the one place verify.yml and upgrade.yml both read them."""
from __future__ import annotations

import json
import shlex
from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog

CHECKS = ("health", "models", "chat", "reasoning", "tool_call", "messages")


def targets(plan: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What verify.yml asks on a host: each serving instance it heads (every replica of a host with sglang_replicas;
    not PD workers: their router answers), or its router; [] for anything else."""
    plan = plan or {}
    if plan.get("role") == "router":
        return [through_router(plan["instance"], plan["health_url"].removesuffix("/health"),
                               plan.get("served_model_name"), plan.get("worker_argv") or [], plan.get("verify") or {})]
    out = []
    if plan.get("role") == "server" and plan.get("rank") == 0 and not plan["recipe"].get("pd_role"):
        for instance in plan.get("replicas") or [plan]:  # each replica's plan (sglang_replicas), or the host's own
            expect = instance.get("verify") or {}
            target = {"instance": instance["instance"], "url": instance["health_url"].removesuffix("/health"),
                      "served_model_name": instance["recipe"].get("served_model_name"),
                      "argv": instance.get("argv") or [], "verify": expect, "ask": ask_args(expect)}
            skip = not_applicable(expect)
            if skip:
                target["not_applicable"] = skip
            out.append(target)
    return out


def ask_args(expect: dict[str, Any]) -> list[str]:
    """verify_endpoint.py's arguments for the model's request shapes (JSON merged into the reasoning and tool-call
    requests' bodies)."""
    shapes = expect.get("requests") or {}
    return ["--reasoning-request", json.dumps(shapes.get("reasoning") or {}, sort_keys=True),
            "--tool-call-request", json.dumps(shapes.get("tool_call") or {}, sort_keys=True)]


def ask_line(target: dict[str, Any]) -> str:
    """ask_args as one shell-quoted string (the script module takes a command line)."""
    return " ".join(shlex.quote(a) for a in target.get("ask") or ask_args(target.get("verify") or {}))


def through_router(instance: str, url: str | None, served: str | None, argv: list[str],
                   expect: dict[str, Any]) -> dict[str, Any]:
    """What verify asks through a router (a site's, or the one upgrade.yml starts to measure a PD pair): the workers'
    expectations, less the checks of routes the pinned sglang-router lacks (data/sglang/router.yml routes_missing)."""
    router = load_catalog().router
    skip = {check: router.get("routes_missing_reason", "") for check in router.get("routes_missing") or []}
    return {"instance": instance, "url": url, "served_model_name": served, "argv": argv, "verify": expect,
            "ask": ask_args(expect), "not_applicable": {**not_applicable(expect), **skip}}


def not_applicable(expect: dict[str, Any]) -> dict[str, str]:
    """Checks the model's data rules out: no reasoning or tool-call parser named for it (model.yml parsers)."""
    if not expect:
        return {}
    name = expect.get("display_name") or expect.get("model")
    where = f"data/models/{expect.get('model')}/model.yml parsers (or its sglang_recipes entry)"
    out = {}
    if not expect.get("reasoning_parser"):
        out["reasoning"] = f"{name} names no reasoning parser in {where}"
    elif "reasoning" not in (expect.get("requests") or {}):
        why = (expect.get("unresolved") or {}).get("reasoning") or \
            f"the parser table of SGLang {expect.get('sglang_version')} says nothing of {expect['reasoning_parser']}"
        out["reasoning"] = (f"no request shape for {name}'s reasoning: {why}; state it as requests.reasoning in its "
                            "model.yml")
    if not expect.get("tool_call_parser"):
        out["tool_call"] = f"{name} names no tool-call parser in {where}"
    return out


def reasoning_request(target: dict[str, Any]) -> dict[str, Any]:
    return dict(((target.get("verify") or {}).get("requests") or {}).get("reasoning") or {})


def _needs(target: dict[str, Any], kind: str) -> str:
    """'. GLM-5.3 needs glm45: check sglang_parsers', from the model's data ('' when it names none)."""
    expect = target.get("verify") or {}
    parser = expect.get(f"{kind}_parser")
    if not parser:
        return ""
    return f". {expect.get('display_name') or expect.get('model')} needs {parser}: check sglang_parsers"


def flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None


def _http_problem(res: dict[str, Any], timeout: float) -> str | None:
    if res.get("skipped"):
        return "not run"
    status = res.get("status", -1)
    if status == -1:
        msg = str(res.get("msg", ""))
        if "timed out" in msg.lower():
            return f"no answer within {timeout:g} s (verify_timeout): the server is overloaded, still loading, or hung"
        return f"no HTTP answer: {msg[:200]}"
    if status == 401:
        return "401 unauthorized: the server wants an API key; set sglang_api_key for this host (vault it)"
    if status != 200:
        return f"HTTP {status}: {str(res.get('content') or res.get('msg', ''))[:200]}"
    return None


def body_of(res: dict[str, Any]) -> dict[str, Any]:
    """The JSON body; sglang-router 0.3.2 sends JSON as text/plain, which the uri module leaves unparsed."""
    if isinstance(res.get("json"), dict):
        return res["json"]
    try:
        parsed = json.loads(res.get("content") or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _message(res: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    body = body_of(res)
    choice = (body.get("choices") or [{}])[0]
    return choice.get("message") or {}, choice.get("finish_reason")


def judge_health(res: dict[str, Any], plan: dict[str, Any]) -> str | None:  # noqa: ARG001
    return None


def judge_models(res: dict[str, Any], plan: dict[str, Any]) -> str | None:
    served = plan.get("served_model_name")
    ids = [m.get("id") for m in body_of(res).get("data") or []]
    if served and served not in ids:
        return f"/v1/models lists {ids or 'nothing'}, not {served} (sglang_served_model_name)"
    return None


def judge_chat(res: dict[str, Any], plan: dict[str, Any]) -> str | None:  # noqa: ARG001
    message, _finish = _message(res)
    if not (message.get("content") or message.get("reasoning_content")):
        return "the chat completion came back empty"
    return None


def judge_reasoning(res: dict[str, Any], plan: dict[str, Any]) -> str | None:
    message, _finish = _message(res)
    content = message.get("content") or ""
    configured = flag(plan.get("argv") or [], "--reasoning-parser")
    where = f"the server runs --reasoning-parser {configured}" if configured else "the server runs no --reasoning-parser"
    start = str((plan.get("verify") or {}).get("think_start") or "<think>")
    end = start[:1] + "/" + start[1:] if start.startswith("<") else ""
    if start in content or (end and end in content):
        return f"the thinking stays inside content ({start}...{end}); {where}{_needs(plan, 'reasoning')}"
    if not message.get("reasoning_content"):
        return (f"no reasoning_content in the reply (asked with {json.dumps(reasoning_request(plan), sort_keys=True)}); "
                f"{where}{_needs(plan, 'reasoning')}")
    return None


def judge_tool_call(res: dict[str, Any], plan: dict[str, Any]) -> str | None:
    message, finish = _message(res)
    configured = flag(plan.get("argv") or [], "--tool-call-parser")
    where = f"the server runs --tool-call-parser {configured}" if configured else "the server runs no --tool-call-parser"
    calls = message.get("tool_calls") or []
    if finish != "tool_calls" or not calls:
        start = (plan.get("verify") or {}).get("tool_call_start") or "<tool_call>"
        raw = " and the call sits unparsed in content" if start in (message.get("content") or "") else ""
        return (f"finish_reason is {finish!r} with {len(calls)} parsed tool call(s){raw}; {where}"
                f"{_needs(plan, 'tool_call')}")
    try:
        args = json.loads(calls[0]["function"]["arguments"])
    except (KeyError, TypeError, ValueError):
        return f"the tool call's arguments are not JSON: {calls[0]!r:.200}"
    if not isinstance(args, dict) or "city" not in args:
        return f"the tool call's arguments lack the required 'city': {args!r:.200}"
    return None


def judge_messages(res: dict[str, Any], plan: dict[str, Any]) -> str | None:  # noqa: ARG001
    body = body_of(res)
    texts = [c for c in body.get("content") or [] if c.get("type") == "text" and c.get("text")]
    if body.get("type") != "message" or not texts:
        return f"/v1/messages did not return an Anthropic message with text: {json.dumps(body)[:200]}"
    return None


JUDGES: dict[str, Callable[[dict[str, Any], dict[str, Any]], str | None]] = {
    "health": judge_health, "models": judge_models, "chat": judge_chat, "reasoning": judge_reasoning,
    "tool_call": judge_tool_call, "messages": judge_messages}


def rows(host: str, target: dict[str, Any], results: dict[str, dict[str, Any]], timeout: float) -> list[dict[str, Any]]:
    """One row per check: host, instance, check, ok, latency_ms, problem."""
    out = []
    not_applicable = target.get("not_applicable") or {}
    for check in CHECKS:
        res = results.get(check) or {"skipped": True}
        row = {"host": host, "instance": target.get("instance"), "url": target.get("url"), "check": check}
        if check in not_applicable:
            out.append({**row, "ok": True, "latency_ms": None, "problem": None, "note": not_applicable[check]})
            continue
        problem = _http_problem(res, timeout) or JUDGES[check](res, target)
        elapsed = res.get("elapsed")
        out.append({**row, "ok": problem is None, "problem": problem,
                    "latency_ms": round(float(elapsed) * 1000) if elapsed is not None else None})
    return out


def table(all_rows: list[dict[str, Any]]) -> str:
    """The summary: one line per host and instance, a column per check."""
    lines = ["| host | instance | " + " | ".join(CHECKS) + " |", "| --- | --- | " + " | ".join("---" for _check in CHECKS) + " |"]
    by_host: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for row in all_rows:
        by_host.setdefault((row["host"], row["instance"]), {})[row["check"]] = row
    for (host, instance), checks in sorted(by_host.items()):
        cells = []
        for check in CHECKS:
            row = checks.get(check)
            mark = "-" if row is None else "n/a" if row.get("note") else ("pass" if row["ok"] else "FAIL")
            if row and row["latency_ms"] is not None:
                mark += f" ({row['latency_ms']} ms)"
            cells.append(mark)
        lines.append(f"| {host} | {instance} | " + " | ".join(cells) + " |")
    problems = [f"- {r['host']} {r['check']}: {r['problem']}" for r in all_rows if not r["ok"]]
    notes = sorted({f"- n/a on {r['host']} {r['check']}: {r['note']}" for r in all_rows if r.get("note")})
    extra = ([""] + problems if problems else []) + ([""] + notes if notes else [])
    return "\n".join(lines + extra) + "\n"
