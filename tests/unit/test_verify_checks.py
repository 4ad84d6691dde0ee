"""verify.yml's judgement of an endpoint's answers: passes, each misconfiguration's message, the table."""
from __future__ import annotations

import json

import pytest

from ansible_collections.metalserve.sglang.plugins.filter.verify_target import verify_target
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify as vc
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan

H200 = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}


def target() -> dict:
    return verify_target(host_plan("n", {"n": dict(H200)}, {"all": ["n"]}))


def ok(body: dict, elapsed: float = 0.05) -> dict:
    return {"status": 200, "json": body, "elapsed": elapsed}


def chat(message: dict, finish: str = "stop") -> dict:
    return ok({"choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}]})


GOOD = {
    "health": ok({}),
    "models": ok({"data": [{"id": "zai-org/GLM-5.3"}]}),
    "chat": chat({"content": "Hello"}),
    "reasoning": chat({"content": "391", "reasoning_content": "17*23=391"}),
    "tool_call": chat({"content": None, "tool_calls": [{"function": {"name": "get_weather",
                                                                     "arguments": json.dumps({"city": "Paris"})}}]},
                      "tool_calls"),
    "messages": ok({"type": "message", "content": [{"type": "text", "text": "Hi"}]}),
}


def test_target_of_a_plain_server_has_its_port_name_and_parsers() -> None:
    t = target()
    assert t["url"] == "http://127.0.0.1:30000" and t["served_model_name"] == "zai-org/GLM-5.3"
    assert vc.flag(t["argv"], "--tool-call-parser") == "glm47"
    assert vc.flag(t["argv"], "--reasoning-parser") == "glm45"


def test_pd_workers_are_left_to_their_router_and_the_router_carries_the_decode_parsers() -> None:
    pd = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}
    hostvars = {"p": {**pd, "sglang_pd": {"role": "prefill"}, "ansible_host": "10.0.0.1"},
                "d": {**pd, "sglang_pd": {"role": "decode"}, "ansible_host": "10.0.0.2"},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "pd"}}
    groups = {"all": ["p", "d", "r"], "pd": ["p", "d"]}
    assert verify_target(host_plan("p", hostvars, groups)) is None
    router = verify_target(host_plan("r", hostvars, groups))
    assert router["url"] == "http://127.0.0.1:8000" and vc.flag(router["argv"], "--disaggregation-mode") == "decode"


def test_a_good_endpoint_passes_every_check_with_latencies() -> None:
    rows = vc.rows("n", target(), GOOD, 60)
    assert [r["check"] for r in rows] == list(vc.CHECKS)
    assert all(r["ok"] for r in rows) and {r["latency_ms"] for r in rows} == {50}


@pytest.mark.parametrize("check,answer,problem", [
    ("reasoning", chat({"content": "<think>17*23</think>391"}),
     "the thinking stays inside content (<think>...</think>); the server runs --reasoning-parser glm45"),
    ("reasoning", chat({"content": "391"}), "no reasoning_content in the reply"),
    ("tool_call", chat({"content": "<tool_call>get_weather\n<arg_key>city</arg_key></tool_call>"}),
     "finish_reason is 'stop' with 0 parsed tool call(s) and the call sits unparsed in content; the server runs "
     "--tool-call-parser glm47. GLM-5.3 needs glm47: check sglang_parsers"),
    ("tool_call", chat({"tool_calls": [{"function": {"name": "get_weather", "arguments": "{city"}}]}, "tool_calls"),
     "the tool call's arguments are not JSON"),
    ("tool_call", chat({"tool_calls": [{"function": {"name": "get_weather", "arguments": "{}"}}]}, "tool_calls"),
     "the tool call's arguments lack the required 'city'"),
    ("models", ok({"data": [{"id": "glm"}]}), "/v1/models lists ['glm'], not zai-org/GLM-5.3"),
    ("messages", ok({"type": "error"}), "/v1/messages did not return an Anthropic message with text"),
    ("chat", {"status": -1, "msg": "Status code was -1 and not [200]: Request failed: <urlopen error timed out>"},
     "no answer within 60 s (verify_timeout)"),
    ("chat", {"status": 401, "json": {}}, "401 unauthorized: the server wants an API key; set sglang_api_key"),
    ("health", {"status": 503, "content": "loading"}, "HTTP 503: loading"),
])
def test_each_misconfiguration_is_named(check: str, answer: dict, problem: str) -> None:
    rows = {r["check"]: r for r in vc.rows("n", target(), {**GOOD, check: answer}, 60)}
    assert not rows[check]["ok"]
    assert problem in rows[check]["problem"], rows[check]["problem"]
    assert all(r["ok"] for c, r in rows.items() if c != check)


def test_glm45_as_tool_parser_is_quoted_back() -> None:
    t = target()
    argv = list(t["argv"])
    argv[argv.index("--tool-call-parser") + 1] = "glm45"
    rows = {r["check"]: r for r in vc.rows("n", {**t, "argv": argv}, {**GOOD, "tool_call": chat({"content": "x"})}, 60)}
    assert "the server runs --tool-call-parser glm45. GLM-5.3 needs glm47" in rows["tool_call"]["problem"]


def test_table_has_a_row_per_host_and_lists_problems() -> None:
    rows = vc.rows("n1", target(), GOOD, 60) + vc.rows("n2", target(), {**GOOD, "tool_call": chat({"content": "x"})}, 60)
    text = vc.table(rows)
    lines = text.splitlines()
    assert lines[0] == "| host | instance | health | models | chat | reasoning | tool_call | messages |"
    assert lines[2].startswith("| n1 | glm-5.3 | pass (50 ms) |") and "FAIL (50 ms)" in lines[3]
    assert "- n2 tool_call: finish_reason is 'stop'" in text


def test_router_routes_the_pinned_router_lacks_are_not_applicable() -> None:
    pd = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}
    hostvars = {"p": {**pd, "sglang_pd": {"role": "prefill"}}, "d": {**pd, "sglang_pd": {"role": "decode"}},
                "r": {"sglang_role": "router", "sglang_router_workers_group": "pd"}}
    router = verify_target(host_plan("r", hostvars, {"all": ["p", "d", "r"], "pd": ["p", "d"]}))
    rows = {r["check"]: r for r in vc.rows("r", router, {**GOOD, "messages": {"status": 404, "json": {}}}, 60)}
    assert rows["messages"]["ok"] and "does not route /v1/messages" in rows["messages"]["note"]
    text = vc.table(list(rows.values()))
    assert "| n/a |" in text and "- n/a on r messages: sglang-router 0.3.2 does not route /v1/messages" in text


def test_json_sent_as_text_is_still_read() -> None:
    """sglang-router 0.3.2 answers /v1/models with JSON labelled text/plain (seen in molecule/operate)."""
    res = {"status": 200, "content": json.dumps({"object": "list", "data": [{"id": "zai-org/GLM-5.3"}]}), "elapsed": 0.01}
    assert vc.judge_models(res, target()) is None
    assert vc.body_of({"status": 200, "content": "not json"}) == {}
