# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write data/sglang/parsers-<release>.yml: what each reasoning and tool-call parser of one SGLang release means, read
by running that release's own code (a full install of the release: `pip install sglang==<release>` in a venv of its
own; the parser venvs of tests/slow lack the serving modules).

- reasoning.<name>: the detector's think tokens and reasoning_default, and `request`: the fields a chat request
  carries to ask for reasoning, as the release's OpenAIServingChat.apply_reasoning_enabled writes them, checked by
  its _get_reasoning_from_request (a parser it special-cases, e.g. minimax-m3's thinking_mode: "enabled", is tried
  with the key and value that branch compares); `default_on` when a bare request already reasons.
- tool_call.<name>: the text that opens a call (the detector's bot_token).
- auto_by_architecture: what `--reasoning-parser auto` / `--tool-call-parser auto` resolve to where the release
  decides by the checkpoint's architecture (template_detection._architecture_auto_parsers, run on each name it
  tests); `contains` marks a name the release matches as a substring. Other checkpoints are resolved from their chat
  template at start, which the collection cannot read: the import report says so.

Usage (inside the release's venv): python tools/sglang_parser_table.py > data/sglang/parsers-<release>.yml
"""
from __future__ import annotations

import inspect
import json
import re
import sys
import types
from typing import Any

CANDIDATE_EFFORTS = ("high", "medium")


def _fake_server(name: str, detector: Any) -> Any:
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    fake = types.SimpleNamespace(reasoning_parser=name, _reasoning_detector=detector,
                                 template_manager=types.SimpleNamespace(reasoning_config=None))
    for method in ("_reasoning_default_mode", "_get_reasoning_toggle_param", "_thinking_requested"):
        if hasattr(OpenAIServingChat, method):
            setattr(fake, method, types.MethodType(getattr(OpenAIServingChat, method), fake))
    return fake


def _request(**fields: Any) -> Any:
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "x"}], **fields)


def _fields(request: Any) -> dict[str, Any]:
    out = {}
    if request.chat_template_kwargs:
        out["chat_template_kwargs"] = dict(request.chat_template_kwargs)
    if getattr(request, "reasoning_effort", None) is not None:
        out["reasoning_effort"] = request.reasoning_effort
    return out


def _candidates(name: str, fake: Any) -> list[dict[str, Any]]:
    """Requests to try: what apply_reasoning_enabled writes, then the key/value pairs the read side compares."""
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    out = []
    written = _request()
    try:
        OpenAIServingChat.apply_reasoning_enabled(fake, written, True)
        out.append(_fields(written))
    except ValueError:
        pass
    source = inspect.getsource(OpenAIServingChat._get_reasoning_from_request)
    branch = re.search(rf'self\.reasoning_parser == "{re.escape(name)}":(.*?)(?=\n        if |\Z)', source, re.S)
    for key, value in re.findall(r'\.get\(\s*"(\w+)"\s*\)\s*==\s*"(\w+)"', branch.group(1) if branch else ""):
        out.append({"chat_template_kwargs": {key: value}})
    out += [{"reasoning_effort": effort} for effort in CANDIDATE_EFFORTS]
    return out


def reasoning_entry(name: str) -> dict[str, Any]:
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    try:
        detector = ReasoningParser(name).detector
    except Exception as exc:  # noqa: BLE001 - e.g. response_template needs the tokenizer's configuration
        return {"note": f"the detector needs more than its name to build ({type(exc).__name__}: {exc})"}
    fake = _fake_server(name, detector)
    entry = {"think_start": detector.think_start_token, "think_end": detector.think_end_token,
             "reasoning_default": getattr(detector, "reasoning_default", None)}
    entry["default_on"] = bool(OpenAIServingChat._get_reasoning_from_request(fake, _request()))
    for fields in _candidates(name, fake):
        if OpenAIServingChat._get_reasoning_from_request(fake, _request(**fields)):
            entry["request"] = fields
            break
    return entry


def tool_call_entry(name: str) -> dict[str, Any]:
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    try:
        detector = FunctionCallParser.ToolCallParserEnum[name]()
    except Exception as exc:  # noqa: BLE001 - some detectors need a tokenizer: say so in the table
        return {"note": f"the detector needs more than defaults to build ({type(exc).__name__})"}
    start = getattr(detector, "bot_token", None)
    return {"start": start} if isinstance(start, str) and start else {}


def _architecture_names() -> list[str]:
    from sglang.srt.parser import template_detection
    source = inspect.getsource(template_detection._architecture_auto_parsers)
    try:
        from sglang.srt.entrypoints.openai import chat_encoding
        source += inspect.getsource(chat_encoding.is_deepseek_v41_arch)
    except (ImportError, AttributeError):
        pass
    return sorted(set(re.findall(r'"([A-Z][A-Za-z0-9_]+)"', source)))


def auto_by_architecture() -> dict[str, Any]:
    from sglang.srt.parser import template_detection
    out = {}
    for arch in _architecture_names():
        cfg = types.SimpleNamespace(architectures=[arch], model_type="")
        import sglang.srt.utils.hf_transformers_utils as hf
        original = hf.get_config
        hf.get_config = lambda *a, **k: cfg  # noqa: E731
        server_args = types.SimpleNamespace(model_path="x", trust_remote_code=False, revision=None)
        try:
            found = template_detection._architecture_auto_parsers(server_args, ("reasoning_parser", "tool_call_parser"))
        except Exception:  # noqa: BLE001 - a name the function cannot take alone
            found = {}
        finally:
            hf.get_config = original
        if found:
            exact = bool(re.search(rf'arch\s*(?:==|in)\s*[\("]*[^)]*"{arch}"', inspect.getsource(
                template_detection._architecture_auto_parsers)))
            out[arch] = {"reasoning": found.get("reasoning_parser"), "tool_call": found.get("tool_call_parser"),
                         **({} if exact else {"contains": True})}
    return out


def main() -> None:
    import sglang
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    table = {"release": sglang.__version__,
             "reasoning": {n: reasoning_entry(n) for n in sorted(ReasoningParser.DetectorMap)},
             "tool_call": {n: tool_call_entry(n) for n in sorted(FunctionCallParser.ToolCallParserEnum)},
             "auto_by_architecture": auto_by_architecture()}
    lines = ["---", f"# What each parser of SGLang {table['release']} means, read by running the release's own code",
             "# (tools/sglang_parser_table.py in a full install of it). Regenerate rather than edit.",
             f"release: \"{table['release']}\""]
    for section in ("reasoning", "tool_call", "auto_by_architecture"):
        lines.append(f"{section}:")
        lines += [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in table[section].items()]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
