"""TEST DOUBLE of an SGLang server's HTTP API (tests only; not part of the collection).

It stands in for `sglang serve` where no GPU exists, so that playbooks/verify.yml and
playbooks/benchmark.yml can run end to end: /health, /v1/models, /v1/chat/completions (plain,
reasoning, tool calls; streaming and not), /v1/completions, /generate (the streaming format
sglang.bench_serving's `sglang` backend reads), /v1/messages (Anthropic), /flush_cache, /server_info.
It generates no text worth reading: tokens are the word "tok" repeated.

It answers as the served model named by --model (a site of several models runs one per server port, e.g. the
lab's mixed shape). Modes reproduce deployment mistakes the verify playbook must catch:
  good             the model's parsers are on (e.g. GLM-5.3 with --reasoning-parser glm45 --tool-call-parser glm47):
                   reasoning_content apart from content, tool calls parsed
  no-reasoning     no reasoning parser: the thinking stays inside content as <think>...</think>
  raw-tool-call    wrong tool parser (e.g. glm45 for GLM-5.3): the call stays in content, finish_reason stop
  slow             every answer waits --delay seconds first
  unhealthy        /health and /health_generate answer 503 (a release that never becomes healthy)
--reasoning-request is the request fields (JSON) that turn the served model's reasoning on, as the real model's chat
template and SGLang's reasoning parser read them (e.g. {"chat_template_kwargs": {"thinking_mode": "enabled"}} for
MiniMax-M3): a chat request without those exact fields and values gets no reasoning_content, so verify.yml's reasoning
check fails unless it asks each model its own way. Empty ({}): the model always reasons.
/v1/loads counts the requests it is answering (num_running_reqs) as SGLang's does, so a drain can wait for zero;
/server_info reports --version (the release a launcher started it for).
Usage: openai_double.py --port 30000 --model zai-org/GLM-5.3 [--mode good] [--tpot-ms 1] [--ttft-ms 0] [--api-key-file F]
                        [--reasoning-request '{"chat_template_kwargs": {"enable_thinking": true}}']
"""
from __future__ import annotations

import argparse
import json
import signal
import socket
import sys
import threading
import time
from itertools import chain
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

THINK = "The user wants a short answer; answer plainly."
TOOL_ARGS = {"city": "Paris", "unit": "celsius"}


class Double(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cfg: argparse.Namespace
    key: str | None = None
    running = 0
    lock = threading.Lock()

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet
        return

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # stream token by token

    @property
    def route(self) -> str:
        return urlsplit(self.path).path

    # --- plumbing -----------------------------------------------------------------------------------
    def _authorized(self) -> bool:
        if not self.key or self.route in ("/health", "/health_generate"):
            return True
        given = self.headers.get("Authorization", "") or ""
        return given == f"Bearer {self.key}" or self.headers.get("x-api-key") == self.key

    def _json(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            data = f"data: {chunk}\n\n".encode() if not isinstance(chunk, bytes) else chunk
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _slow(self) -> None:
        if self.cfg.mode == "slow":
            time.sleep(self.cfg.delay)

    # --- routes -------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802
        if not self._authorized():
            return self._json(401, {"error": "unauthorized"})
        self._slow()
        if self.route in ("/health", "/health_generate"):
            return self._json(503 if self.cfg.mode == "unhealthy" else 200, {})
        if self.route == "/v1/loads":
            with Double.lock:
                running = Double.running
            return self._json(200, {"version": self.cfg.version, "loads": [
                {"dp_rank": 0, "num_running_reqs": running, "num_waiting_reqs": 0}]})
        if self.route == "/v1/models":
            # the fields of SGLang's ModelCard (sglang-router reads them when it discovers models)
            return self._json(200, {"object": "list", "data": [{
                "id": self.cfg.model, "object": "model", "created": int(time.time()), "owned_by": "sglang",
                "root": self.cfg.model, "max_model_len": 1048576}]})
        if self.route in ("/server_info", "/get_server_info", "/model_info"):
            return self._json(200, {"double": True, "model_path": self.cfg.model, "version": self.cfg.version})
        return self._json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._authorized():
            return self._json(401, {"error": "unauthorized"})
        body = self._body()
        self._slow()
        with Double.lock:
            Double.running += 1
        try:
            return self._post(body)
        finally:
            with Double.lock:
                Double.running -= 1

    def _post(self, body: dict[str, Any]) -> None:
        if self.route == "/flush_cache":
            return self._json(200, {})
        if self.route == "/generate":
            return self._generate(body)
        if self.route == "/v1/completions":
            return self._completions(body)
        if self.route == "/v1/chat/completions":
            return self._chat(body)
        if self.route == "/v1/messages":
            return self._messages(body)
        return self._json(404, {"error": "not found"})

    def _tokens(self, n: int) -> Any:
        time.sleep(self.cfg.ttft_ms / 1000.0)  # the prefill: the first token comes after it
        for i in range(n):
            time.sleep(self.cfg.tpot_ms / 1000.0)
            yield i + 1

    def _generate(self, body: dict[str, Any]) -> None:
        n = int((body.get("sampling_params") or {}).get("max_new_tokens") or 16)
        prompt_tokens = len(body.get("input_ids") or str(body.get("text", "")).split())
        if not body.get("stream"):
            return self._json(200, {"text": " tok" * n, "meta_info": {"completion_tokens": n,
                                                                      "prompt_tokens": prompt_tokens}})
        self._stream(chain((json.dumps({"text": " tok" * k, "meta_info": {"completion_tokens": k,
                                                                          "prompt_tokens": prompt_tokens}})
                            for k in self._tokens(n)), ["[DONE]"]))

    def _completions(self, body: dict[str, Any]) -> None:
        n = int(body.get("max_tokens") or 16)
        if not body.get("stream"):
            return self._json(200, {"id": "cmpl-double", "object": "text_completion", "model": self.cfg.model,
                                    "choices": [{"index": 0, "text": " tok" * n, "finish_reason": "length"}],
                                    "usage": {"completion_tokens": n}})
        self._stream(chain((json.dumps({"choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
                            for _token in self._tokens(n)), ["[DONE]"]))

    def _asks_reasoning(self, body: dict[str, Any]) -> bool:
        """The request carries every field (and nested key) of --reasoning-request with the same value."""
        def holds(want: dict[str, Any], got: Any) -> bool:
            return isinstance(got, dict) and all(
                holds(v, got.get(k)) if isinstance(v, dict) else (k in got and got[k] == v) for k, v in want.items())
        return holds(self.cfg.reasoning_request, body)

    def _chat(self, body: dict[str, Any]) -> None:
        tools = body.get("tools") or []
        mode = self.cfg.mode
        message: dict[str, Any] = {"role": "assistant"}
        finish = "stop"
        if tools and mode != "raw-tool-call":
            name = tools[0]["function"]["name"]
            message.update(content=None, reasoning_content=THINK, tool_calls=[{
                "id": "call_double_1", "type": "function",
                "function": {"name": name, "arguments": json.dumps(TOOL_ARGS)}}])
            finish = "tool_calls"
        elif tools:
            message["content"] = (f"<tool_call>{tools[0]['function']['name']}\n<arg_key>city</arg_key>"
                                  "<arg_value>Paris</arg_value>\n</tool_call>")
        elif mode == "no-reasoning":
            message["content"] = f"<think>{THINK}</think>Hello from the double."
        elif not self._asks_reasoning(body):
            message["content"] = "391."
        else:
            message.update(content="Hello from the double.", reasoning_content=THINK)
        if body.get("stream"):
            n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
            return self._stream(chain((json.dumps({"choices": [{"index": 0, "delta": {"content": " tok"},
                                                                "finish_reason": None}]}) for _token in self._tokens(n)),
                                      ["[DONE]"]))
        self._json(200, {"id": "chatcmpl-double", "object": "chat.completion", "model": self.cfg.model,
                         "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                         "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}})

    def _messages(self, body: dict[str, Any]) -> None:
        content: list[dict[str, Any]] = []
        if self.cfg.mode != "no-reasoning":
            content.append({"type": "thinking", "thinking": THINK})
        content.append({"type": "text", "text": "Hello from the double."})
        self._json(200, {"id": "msg_double", "type": "message", "role": "assistant", "model": body.get("model"),
                         "content": content, "stop_reason": "end_turn",
                         "usage": {"input_tokens": 12, "output_tokens": 8}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--model", default="zai-org/GLM-5.3")
    ap.add_argument("--mode", choices=["good", "no-reasoning", "raw-tool-call", "slow", "unhealthy"], default="good")
    ap.add_argument("--version", default="test-double")
    ap.add_argument("--delay", type=float, default=30.0)
    ap.add_argument("--tpot-ms", type=float, default=1.0)
    ap.add_argument("--ttft-ms", type=float, default=0.0)
    ap.add_argument("--api-key-file")
    ap.add_argument("--reasoning-request", type=json.loads, default={})
    cfg = ap.parse_args()
    Double.cfg = cfg
    if cfg.api_key_file:
        with open(cfg.api_key_file, encoding="utf-8") as handle:
            Double.key = handle.read().strip()
    # SIGTERM ends it, as it ends SGLang's server (uvicorn's handler): in a container the double is PID 1, and the
    # kernel ignores a signal PID 1 has no handler for, so `docker stop` would wait out its timeout
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(0))
    server = ThreadingHTTPServer((cfg.host, cfg.port), Double)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
