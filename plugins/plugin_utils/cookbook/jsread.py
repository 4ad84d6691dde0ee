# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A reader for the JavaScript object literal an SGLang cookbook page exports (`export const config = {...}`).

The page is a JavaScript module whose `config` may hold playground callbacks (arrow functions, methods, getters,
spreads) beside the literal data. Literals are read as Python values (integers as int, decimals as Decimal with
their written digits); anything else becomes an Opaque holding its source text, refused only where the importer
reads it (`literal`). Pure; controller only.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any


class JsLiteralError(ValueError):
    pass


_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<template>`(?:[^`\\]|\\.)*`)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct>[{}\[\]():,;])
  | (?P<op>=>|\.\.\.|[=!<>]=?=?|&&|\|\||\?\?|[-+*%&|^~?.])
  | (?P<slash>/)
""", re.S | re.X)
_REGEX = re.compile(r"/(?:[^/\\\n\[]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")
#: after these a `/` starts a regular expression literal, elsewhere it divides
_REGEX_AFTER = {"(", ",", "=", ":", "[", "!", "&&", "||", "??", "?", "{", "}", ";", "=>", "return"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


class Opaque(str):
    """The source text of a value that is not a plain literal (a callback, an expression): kept, never read."""


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
            continue
        if nxt == "\n":  # a line continuation
            i += 2
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise JsLiteralError(f"unexpected character {text[pos]!r} at offset {pos}")
        kind = m.lastgroup or ""
        if kind == "slash":
            regex = _REGEX.match(text, pos) if not out or out[-1][1] in _REGEX_AFTER else None
            if regex:
                out.append(("regex", regex.group(), pos))
                pos = regex.end()
                continue
            kind = "op"
        if kind != "space":
            out.append((kind, m.group(), pos))
        pos = m.end()
    return out


def _number(text: str) -> int | Decimal:
    """Integers stay int; decimals keep their written digits (14.20 is not 14.2 when we write it back)."""
    return int(text) if re.fullmatch(r"-?\d+", text) else Decimal(text)


class _Reader:
    """Reads literals; a value that is anything else (an arrow function, a method, a getter, `a + b`) becomes
    an Opaque holding its source text, so the literal data around the page's callbacks can still be read."""

    def __init__(self, text: str, tokens: list[tuple[str, str, int]]) -> None:
        self.text, self.tokens, self.i = text, tokens, 0

    def peek(self) -> tuple[str, str, int]:
        if self.i >= len(self.tokens):
            raise JsLiteralError("unexpected end of file")
        return self.tokens[self.i]

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise JsLiteralError(f"expected {value!r} at offset {tok[2]}, found {tok[1]!r}")
        self.i += 1
        return tok

    def _ends_value(self) -> bool:
        return self.i >= len(self.tokens) or self.peek()[1] in (",", "}", "]", ";")

    def _skip_expression(self, start: int) -> Opaque:
        """From token `start`, skip to the `,` `;` `}` or `]` that ends the value at depth 0."""
        self.i, depth = start, 0
        while self.i < len(self.tokens):
            kind, text, _pos = self.tokens[self.i]
            if kind == "punct" and text in "([{":
                depth += 1
            elif kind == "punct" and text in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and text in (",", ";"):
                break
            self.i += 1
        if self.i == start:
            raise JsLiteralError(f"expected a value at offset {self.tokens[start][2]}")
        first, last = self.tokens[start], self.tokens[self.i - 1]
        return Opaque(self.text[first[2]:last[2] + len(last[1])])

    def value(self) -> Any:
        start = self.i
        try:
            out = self._literal()
        except JsLiteralError:
            return self._skip_expression(start)
        if not self._ends_value():  # a literal that an expression continues: "a" + "b", x ? y : z
            return self._skip_expression(start)
        return out

    def _literal(self) -> Any:
        kind, text, pos = self.take()
        if text == "{":
            return self.object()
        if text == "[":
            return self.array()
        if kind == "string":
            return _unescape(text[1:-1])
        if kind == "template":
            if "${" in text:
                raise JsLiteralError(f"template literal with a substitution at offset {pos}: not a plain literal")
            return _unescape(text[1:-1])
        if kind == "number":
            return _number(text)
        if kind == "name" and text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        raise JsLiteralError(f"unexpected {text!r} at offset {pos}: only literals are read")

    def object(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while self.peek()[1] != "}":
            kind, text, pos = self.take()
            if kind == "name" and text in ("get", "set", "async") and self.peek()[0] == "name":
                kind, text, pos = self.take()  # an accessor, `get name() { ... }`: read as a method
            if kind == "string":
                key = _unescape(text[1:-1])
            elif kind in ("name", "number"):
                key = text
            else:
                raise JsLiteralError(f"unexpected object key {text!r} at offset {pos}")
            if self.peek()[1] == "(":  # a method, `name(args) { body }`
                out[key] = self._skip_expression(self.i)
            else:
                self.take(":")
                out[key] = self.value()
            if self.peek()[1] == ",":
                self.take(",")
        self.take("}")
        return out

    def array(self) -> list[Any]:
        out = []
        while self.peek()[1] != "]":
            out.append(self.value())
            if self.peek()[1] == ",":
                self.take(",")
        self.take("]")
        return out


def read_js_export(text: str, name: str) -> Any:
    """The value of `export const <name> = ...;` in a JS module: literals as Python values, anything else inside
    it (a playground callback, say) as an Opaque with its source text. A value that is itself not a literal raises."""
    tokens = _tokens(text)
    for i in range(len(tokens) - 3):
        if [t[1] for t in tokens[i:i + 4]] == ["export", "const", name, "="]:
            value = _Reader(text, tokens[i + 4:]).value()
            if isinstance(value, Opaque):
                raise JsLiteralError(f"`export const {name}` is not a literal: {value[:60]!r}")
            return value
    raise JsLiteralError(f"no `export const {name} =` in the file")


def literal(value: Any, where: str) -> Any:
    """The value itself, refused when the page computes it (an Opaque) anywhere inside."""
    if isinstance(value, Opaque):
        raise JsLiteralError(f"{where}: the page computes this value ({value[:60]!r}); only literals are imported")
    if isinstance(value, dict):
        for key, item in value.items():
            literal(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            literal(item, f"{where}[{i}]")
    return value
