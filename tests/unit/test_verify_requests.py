"""verify.yml asks each model for reasoning its own way (issue 38): the plan's target for a host carries the request
fields its model's data (or its release's parser table) names, playbooks/files/verify_endpoint.py sends them, and a
TEST DOUBLE of the server (tests/doubles/openai_double.py) answers reasoning only to the fields the real model
needs. Those come from SGLang 0.5.23's own code, not from the collection's data: Glm45Detector and Qwen3Detector have
reasoning_default "enable_thinking", DeepSeekV4Detector "explicit_thinking" (serving_chat._get_reasoning_toggle_param
strips "explicit_"), and serving_chat._get_reasoning_from_request reads MiniMax-M3's thinking_mode == "enabled".
So a model whose data asks the wrong key or value fails the check here, as it would on a real server.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any, Iterator

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan
from ansible_collections.metalserve.sglang.tests.helpers import COOKBOOK_MODELS, ROOT

DOUBLE = ROOT / "tests" / "doubles" / "openai_double.py"
SCRIPT = ROOT / "playbooks" / "files" / "verify_endpoint.py"
SGLANG_SAYS = {"glm-5.3": {"chat_template_kwargs": {"enable_thinking": True}},
               "deepseek-v4-pro": {"chat_template_kwargs": {"thinking": True}},
               "qwen3.8-27b": {"chat_template_kwargs": {"enable_thinking": True}},
               "minimax-m3": {"chat_template_kwargs": {"thinking_mode": "enabled"}}}
HOSTS = {"glm-5.3": {"sglang_gpu": "h200", "sglang_strategy": "high-throughput"},
         "deepseek-v4-pro": {"sglang_gpu": "b200", "sglang_strategy": "balanced"},
         "qwen3.8-27b": {"sglang_gpu": "h200", "sglang_quant": "bf16"},
         "minimax-m3": {"sglang_gpu": "b300", "sglang_recipes": [str(COOKBOOK_MODELS)]}}


def target_of(model: str) -> dict[str, Any]:
    hv = {"sglang_model": model, "ansible_host": "10.0.0.1", **HOSTS[model]}
    return verify.targets(host_plan("n", {"n": hv}, {"all": ["n"]}))[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def double() -> Iterator[Any]:
    procs = []

    def start(served: str, wants: dict[str, Any]) -> str:
        port = _free_port()
        procs.append(subprocess.Popen([sys.executable, str(DOUBLE), "--port", str(port), "--model", served,
                                       "--tpot-ms", "0", "--reasoning-request", json.dumps(wants)]))
        url = f"http://127.0.0.1:{port}"
        for _attempt in range(100):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)  # noqa: S310 - the local double
                return url
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the double did not start")
    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def ask(target: dict[str, Any], url: str) -> list[dict[str, Any]]:
    """What verify.yml does on the node: the script with the target's arguments, judged on the controller."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--url", url, "--model", target["served_model_name"],
                           "--timeout", "10", *target["ask"]], capture_output=True, text=True, check=True)
    return verify.rows("n", target, json.loads(proc.stdout), 10)


@pytest.mark.parametrize("model", sorted(SGLANG_SAYS))
def test_each_model_is_asked_its_own_way_and_passes(model: str, double: Any) -> None:
    target = target_of(model)
    rows = ask(target, double(target["served_model_name"], SGLANG_SAYS[model]))
    assert [r["problem"] for r in rows if not r["ok"]] == []
    assert target["verify"]["requests"]["reasoning"] == SGLANG_SAYS[model]


def test_asking_another_models_way_fails_the_reasoning_check(double: Any) -> None:
    """GLM-5.3's data asks enable_thinking; a server that reasons only on DeepSeek's `thinking` leaves GLM's request
    without reasoning_content, and the check says what it sent."""
    target = target_of("glm-5.3")
    rows = ask(target, double(target["served_model_name"], SGLANG_SAYS["deepseek-v4-pro"]))
    [failed] = [r for r in rows if not r["ok"]]
    assert failed["check"] == "reasoning"
    assert failed["problem"] == ('no reasoning_content in the reply (asked with {"chat_template_kwargs": '
                                 '{"enable_thinking": true}}); the server runs --reasoning-parser glm45. '
                                 "GLM-5.3 needs glm45: check sglang_parsers")


def test_a_value_not_only_a_key_is_part_of_the_shape(double: Any) -> None:
    """MiniMax-M3 turns reasoning on with thinking_mode: "enabled" (not true): the shape comes from SGLang 0.5.23's
    parser table for the parser `auto` resolves to from the page's architecture, and a true would not do."""
    target = target_of("minimax-m3")
    assert (target["verify"]["reasoning_parser"], target["verify"]["tool_call_parser"]) == ("minimax-m3", "minimax-m3")
    wrong = {**target, "ask": verify.ask_args({**target["verify"], "requests": {
        "reasoning": {"chat_template_kwargs": {"thinking_mode": True}}}})}
    rows = ask(wrong, double(target["served_model_name"], SGLANG_SAYS["minimax-m3"]))
    assert [r["check"] for r in rows if not r["ok"]] == ["reasoning"]


def test_an_auto_parser_the_release_cannot_resolve_is_marked_not_applicable() -> None:
    """Hy3's `auto` is resolved from the checkpoint's chat template at start (SGLang 0.5.23's _is_hunyuan rule):
    without requests.reasoning in its data the check is n/a, with why; its tool-call check still runs."""
    hv = {"sglang_model": "hy3", "sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced",
          "sglang_recipes": [str(COOKBOOK_MODELS)], "ansible_host": "10.0.0.1"}
    target = verify.targets(host_plan("n", {"n": hv}, {"all": ["n"]}))[0]
    assert list(target["not_applicable"]) == ["reasoning"]
    assert "resolves `auto` for HYV3ForCausalLM from the checkpoint's chat template" in target["not_applicable"]["reasoning"]
