"""Ask one SGLang endpoint the questions of playbooks/verify.yml and print every answer as JSON
(status, body, elapsed seconds); metalserve.sglang's verify_rows judges them on the controller.
Runs on the node with the standard library only. The API key comes from VERIFY_API_KEY (never argv).
Usage: verify_endpoint.py --url http://127.0.0.1:30000 --model NAME [--timeout 120] [--max-tokens 512]
       [--reasoning-request JSON] [--tool-call-request JSON] [--skip CHECK,...]
The two JSON objects are the served model's request shapes (its data: what turns reasoning and tool calls on, e.g.
{"chat_template_kwargs": {"thinking_mode": "enabled"}}), merged into the bodies of those two requests.
"""
import argparse
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"]}}}


def call(url, body=None, headers=None, timeout=120.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the node's own endpoint
            status, text = resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read().decode("utf-8", "replace")
    except (socket.timeout, TimeoutError):
        return {"status": -1, "msg": f"timed out after {timeout:g} s", "elapsed": time.perf_counter() - start}
    except (urllib.error.URLError, OSError) as exc:
        return {"status": -1, "msg": f"connection failed: {getattr(exc, 'reason', exc)}",
                "elapsed": time.perf_counter() - start}
    elapsed = time.perf_counter() - start
    out = {"status": status, "content": text[:20000], "elapsed": elapsed}
    try:
        out["json"] = json.loads(text)
    except ValueError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--skip", default="")
    # the fields that turn the served model's reasoning and tool calls on (its data; recipe/parsers.py)
    ap.add_argument("--reasoning-request", type=json.loads, default={})
    ap.add_argument("--tool-call-request", type=json.loads, default={})
    a = ap.parse_args()
    key = os.environ.get("VERIFY_API_KEY", "")
    auth = {"Authorization": f"Bearer {key}", "x-api-key": key} if key else {}

    def chat(content, **extra):
        body = {"model": a.model, "messages": [{"role": "user", "content": content}], "max_tokens": a.max_tokens,
                **extra}
        return call(f"{a.url}/v1/chat/completions", body, auth, a.timeout)

    checks = {
        "health": lambda: call(f"{a.url}/health", timeout=a.timeout),
        "models": lambda: call(f"{a.url}/v1/models", headers=auth, timeout=a.timeout),
        "chat": lambda: chat("Reply with one short greeting."),
        "reasoning": lambda: chat("What is 17 * 23? Think it through, then answer.",
                                  **{"separate_reasoning": True, **a.reasoning_request}),
        "tool_call": lambda: chat("What is the weather in Paris right now? Use the tool.",
                                  **{"tools": [WEATHER_TOOL], "tool_choice": "auto", **a.tool_call_request}),
        "messages": lambda: call(f"{a.url}/v1/messages", {
            "model": a.model, "max_tokens": a.max_tokens,
            "messages": [{"role": "user", "content": "Reply with one short greeting."}]},
            {**auth, "anthropic-version": "2023-06-01"}, a.timeout),
    }
    skip = set(filter(None, a.skip.split(",")))
    json.dump({name: ({"skipped": True} if name in skip else fn()) for name, fn in checks.items()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
