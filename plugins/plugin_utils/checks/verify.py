# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge a serving endpoint's answers (playbooks/verify.yml). Pure: takes what the HTTP calls returned
(the uri module's results) and the host's plan; returns one row per check with pass/fail, latency and,
on failure, what is wrong and which setting to look at."""
from __future__ import annotations

import json
from typing import Any, Callable

CHECKS = ("health", "models", "chat", "reasoning", "tool_call", "messages")


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
    if "<think>" in content or "</think>" in content:
        return (f"the thinking stays inside content (<think>...</think>); {where}. GLM-5.3 needs glm45: check "
                "sglang_parsers")
    if not message.get("reasoning_content"):
        return f"no reasoning_content in the reply; {where}. GLM-5.3 needs glm45: check sglang_parsers"
    return None


def judge_tool_call(res: dict[str, Any], plan: dict[str, Any]) -> str | None:
    message, finish = _message(res)
    configured = flag(plan.get("argv") or [], "--tool-call-parser")
    where = f"the server runs --tool-call-parser {configured}" if configured else "the server runs no --tool-call-parser"
    calls = message.get("tool_calls") or []
    if finish != "tool_calls" or not calls:
        raw = " and the call sits unparsed in content" if "<tool_call>" in (message.get("content") or "") else ""
        return (f"finish_reason is {finish!r} with {len(calls)} parsed tool call(s){raw}; {where}. GLM-5.3 needs "
                "glm47 (glm45 leaves GLM-5.3's calls unparsed): check sglang_parsers")
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
