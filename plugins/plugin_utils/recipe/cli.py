# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A command line read the way one SGLang (or sglang-router) release's argparse parser reads it, from its flag
table alone (data/sglang/flags-<release>.yml, written from the real parser by tools/sglang_flag_table.py). Pure.

    table = Table.of(flag_table_doc("0.5.23"))
    parsed = parse(["--model-path", "m", "--tp", "8"], table)   # or raises CliError, worded as argparse words it
    parsed.namespace["tp_size"] == 8                             # every dest, as the release's namespace holds it
    parsed.occurrences                                           # what the argv set, in order, by dest

What argparse does and this does too (Python 3.11's argparse, the parser venvs' and the images' family):
`--flag=value`; unique-prefix abbreviations (allow_abbrev) and the refusal of ambiguous ones, naming the matches
in the parser's order; aliases resolved to their dest; nargs (None, '?', '*', '+', N); switches, store_const,
append and --no- (BooleanOptionalAction) forms; values converted by the flag's type (int('1e3') fails as it
fails there: "invalid int value: '1e3'") and checked against choices; the required flags; and the order argparse
reports problems in (an ambiguous prefix first, then each flag in turn, then missing required flags, then
unrecognized arguments). Types the table records as other:<function> are kept as text; tests/slow compares this
module with the real parsers over every shipped command and a set of tricky ones.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Optional

HELP = ("-h", "--help")
#: argparse (3.11): a token that looks like a negative number is a value while no flag looks like one
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


class TypeMessage(ValueError):
    """A converter's own refusal (argparse's ArgumentTypeError): its text replaces "invalid <type> value"."""


class CliError(ValueError):
    """A refusal worded as argparse words it; `option` is the option string it is about (None: the whole line)."""

    def __init__(self, message: str, option: Optional[str] = None, dest: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.option = option
        self.dest = dest


@dataclasses.dataclass(frozen=True)
class Table:
    """One release's flags: {option string: entry} in the parser's order, and the namespace's defaults."""

    prog: str
    release: str
    flags: dict[str, dict[str, Any]]
    defaults: dict[str, Any]

    @classmethod
    def of(cls, doc: dict[str, Any]) -> "Table":
        return cls(prog=str(doc.get("prog") or "sglang serve"),
                   release=str(doc.get("sglang_version") or doc.get("router_version") or ""),
                   flags=dict(doc["flags"]), defaults=dict(doc.get("defaults") or {}))

    def entry(self, option: str) -> dict[str, Any]:
        return self.flags[option]

    def dest(self, option: str) -> str:
        return str(self.flags[option]["dest"])

    def dests(self) -> list[str]:
        return list(self.dest_list)

    def names(self, option: str) -> list[str]:
        """Every option string of the action `option` belongs to (argparse names an action by all of them)."""
        return list(self.flags[option].get("names") or [option])

    def options_of(self, dest: str) -> list[str]:
        return [o for o, e in self.flags.items() if e["dest"] == dest]

    @functools.cached_property
    def _order(self) -> tuple[tuple[str, ...], frozenset[str]]:
        every = (*HELP, *self.flags)
        return every, frozenset(every)

    def order(self) -> tuple[str, ...]:
        """Every option string the parser knows, help first (ArgumentParser adds -h/--help before anything)."""
        return self._order[0]

    def known(self, option: str) -> bool:
        return option in self._order[1]

    @functools.cached_property
    def dest_list(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e["dest"] for e in self.flags.values()))


@dataclasses.dataclass(frozen=True)
class Occurrence:
    """One flag of an argv: the option string it resolved to, as written, its dest and the value it stored."""

    option: str
    written: str
    dest: str
    value: Any
    index: int


@dataclasses.dataclass(frozen=True)
class Parsed:
    namespace: dict[str, Any]
    occurrences: tuple[Occurrence, ...]

    def given(self, dest: str) -> bool:
        return any(o.dest == dest for o in self.occurrences)

    def written(self, dest: str) -> list[str]:
        return [o.written for o in self.occurrences if o.dest == dest]

    def repeated(self, table: Table) -> dict[str, list[Occurrence]]:
        """Dests that a store action set more than once (the last one wins, so a spelling can hide another)."""
        out: dict[str, list[Occurrence]] = {}
        for occ in self.occurrences:
            kind = table.entry(occ.option).get("action", "store")
            if kind not in ("append", "append_const", "count"):
                out.setdefault(occ.dest, []).append(occ)
        return {d: o for d, o in out.items() if len(o) > 1}


# --- which option a token is ------------------------------------------------------------------------

def option_tuples(token: str, table: Table) -> list[tuple[str, Optional[str]]]:
    """(option string, explicit value) for every option a token may abbreviate, in the parser's order."""
    out: list[tuple[str, Optional[str]]] = []
    if len(token) < 2 or token[0] != "-":
        return out
    if token[1] == "-":
        prefix, sep, explicit = token.partition("=")
        return [(o, explicit if sep else None) for o in table.order() if o.startswith(prefix)]
    short, rest = token[:2], token[2:]
    for option in table.order():
        if option == short:
            out.append((option, rest))
        elif option.startswith(token):
            out.append((option, None))
    return out


def classify(token: str, table: Table) -> Optional[tuple[Optional[str], str, Optional[str]]]:
    """argparse's _parse_optional: None for a value, else (option or None if unknown, as written, explicit value)."""
    if not token or token[0] != "-":
        return None
    if table.known(token):
        return token, token, None
    if len(token) == 1:
        return None
    if "=" in token:
        name, explicit = token.split("=", 1)
        if table.known(name):
            return name, name, explicit
    matches = option_tuples(token, table)
    if len(matches) > 1:
        raise CliError(f"ambiguous option: {token} could match {', '.join(o for o, _e in matches)}")
    if len(matches) == 1:
        option, explicit = matches[0]
        return option, token.partition("=")[0] if token[1] == "-" else token, explicit
    if _NEGATIVE_NUMBER.match(token):
        return None
    if " " in token:
        return None
    return None, token, None


def resolve(name: str, table: Table) -> str:
    """The option string a flag name stands for (a prefix or alias as argparse reads it), or CliError."""
    found = classify(name, table)
    if found is None or found[0] is None:
        raise CliError(f"unrecognized arguments: {name}", option=name)
    if found[0] in HELP:
        raise CliError(f"{name} asks for the help text", option=found[0])
    return found[0]


# --- values ----------------------------------------------------------------------------------------

def human_int(text: str) -> int:
    """sglang.srt.utils.common.human_readable_int: an int, or SI (1k, 25.6k) / IEC (1Ki) suffixes."""
    value = text.strip()
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _IEC:
            if "." in number:
                raise TypeMessage(f"decimals are not allowed with IEC suffixes like '{suffix}'")
            return int(number) * _IEC[suffix]
        try:
            return int(Decimal(number) * _SI[suffix])
        except InvalidOperation:
            pass
    try:
        return int(value)
    except ValueError:
        raise TypeMessage(f"invalid integer value: '{value}'; use a plain integer, SI suffixes (1k, 1M) or IEC "
                          "suffixes (1Ki, 1Mi)") from None


def nullable_str(text: str) -> Optional[str]:
    return None if not text or text == "None" else text


#: table type kind -> (converter, the name argparse uses in "invalid <name> value")
CONVERTERS: dict[str, tuple[Callable[[str], Any], str]] = {
    "int": (int, "int"),
    "float": (float, "float"),
    "str": (str, "str"),
    "json": (json.loads, "loads"),
    "human_int": (human_int, "human_readable_int"),
    "nullable_str": (nullable_str, "nullable_str"),
}


def convert(entry: dict[str, Any], text: str) -> Any:
    """One value as the flag's type converts it (ValueError when the release would refuse it)."""
    kind = str(entry.get("type") or "str")
    func = CONVERTERS.get(kind, (str, kind))[0]
    return func(text)


def _action_name(option: str, table: Table) -> str:
    return "/".join(table.names(option)) if option not in HELP else "-h/--help"


def _value(option: str, table: Table, text: str) -> Any:
    entry = table.entry(option)
    kind = str(entry.get("type") or "str")
    func, name = CONVERTERS.get(kind, (str, kind))
    try:
        value = func(text)
    except TypeMessage as exc:
        raise CliError(f"argument {_action_name(option, table)}: {exc}", option, entry["dest"]) from None
    except (TypeError, ValueError):
        raise CliError(f"argument {_action_name(option, table)}: invalid {name} value: {text!r}", option,
                       entry["dest"]) from None
    choices = entry.get("choices")
    if choices is not None and value not in choices:
        raise CliError(f"argument {_action_name(option, table)}: invalid choice: {value!r} (choose from "
                       f"{', '.join(map(repr, choices))})", option, entry["dest"])
    return value


def _values(option: str, table: Table, texts: list[str]) -> Any:
    """argparse's _get_values for an optional."""
    entry = table.entry(option)
    nargs = entry["nargs"]
    if nargs == "?" and not texts:
        const = entry.get("const")
        return _value(option, table, const) if isinstance(const, str) else const
    if len(texts) == 1 and (nargs == "?" or (nargs == 1 and not entry.get("as_list"))):
        return _value(option, table, texts[0])
    return [_value(option, table, t) for t in texts]


def _apply(namespace: dict[str, Any], option: str, table: Table, value: Any) -> Any:
    entry = table.entry(option)
    dest, kind = entry["dest"], str(entry.get("action") or "store")
    if kind == "store_const":
        stored = entry.get("const")
    elif kind == "boolean_optional":
        stored = not option.startswith("--no-")
    elif kind in ("append", "append_const"):
        current = namespace.get(dest)
        stored = (list(current) if isinstance(current, list) else []) + [
            entry.get("const") if kind == "append_const" else value]
    elif kind == "count":
        stored = (namespace.get(dest) or 0) + 1
    elif kind == "ignore":  # a retired flag: the parser warns and keeps the dest as it was
        return namespace.get(dest)
    else:  # store, and custom actions (read as a store of their values)
        stored = value
    namespace[dest] = stored
    return stored


# --- the whole line --------------------------------------------------------------------------------

def _count(nargs: Any, pattern: str) -> Optional[int]:
    """How many of the following 'A' (value) tokens an option takes, or None when nargs cannot be met."""
    run = len(pattern) - len(pattern.lstrip("A"))
    if nargs == 0:
        return 0
    if nargs == 1:
        return 1 if run >= 1 else None
    if nargs == "?":
        return min(run, 1)
    if nargs == "*":
        return run
    if nargs == "+":
        return run if run >= 1 else None
    return int(nargs) if run >= int(nargs) else None


def _nargs_error(nargs: Any) -> str:
    if nargs == 1:
        return "expected one argument"
    if nargs == "?":
        return "expected at most one argument"
    if nargs == "+":
        return "expected at least one argument"
    return f"expected {nargs} argument{'s' if int(nargs) != 1 else ''}"


def parse(argv: list[str], table: Table) -> Parsed:
    """The namespace the release's parser makes of argv, or CliError with the message argparse gives."""
    tokens = [str(t) for t in argv]
    found: dict[int, tuple[Optional[str], str, Optional[str]]] = {}
    pattern = ""
    rest_are_values = False
    for i, token in enumerate(tokens):
        if rest_are_values:
            pattern += "A"
        elif token == "--":
            rest_are_values = True
            pattern += "-"
        else:
            hit = classify(token, table)
            if hit is None:
                pattern += "A"
            else:
                found[i] = hit
                pattern += "O"
    namespace: dict[str, Any] = dict.fromkeys(table.dest_list)
    namespace.update(table.defaults)
    extras: list[str] = []
    occurrences: list[Occurrence] = []
    seen: set[str] = set()
    i = 0
    while i < len(tokens):
        if i not in found:
            extras.append(tokens[i])  # a value no flag took (argparse keeps a bare "--" among them too)
            i += 1
            continue
        option, written, explicit = found[i]
        if option is None:
            extras.append(tokens[i])
            i += 1
            continue
        if option in HELP:
            raise CliError(f"{written} asks for the help text (the real parser prints it and exits)", option)
        entry = table.entry(option)
        nargs = entry["nargs"]
        if explicit is not None:
            if nargs == 0 or (isinstance(nargs, int) and nargs > 1):
                msg = "ignored explicit argument" if nargs == 0 else _nargs_error(nargs)
                raise CliError(f"argument {_action_name(option, table)}: {msg}"
                               + (f" {explicit!r}" if nargs == 0 else ""), option, entry["dest"])
            texts, stop = [explicit], i + 1
        else:
            count = _count(nargs, pattern[i + 1:])
            if count is None:
                raise CliError(f"argument {_action_name(option, table)}: {_nargs_error(nargs)}", option, entry["dest"])
            texts, stop = tokens[i + 1:i + 1 + count], i + 1 + count
        value = _values(option, table, texts)
        stored = _apply(namespace, option, table, value)
        seen.add(entry["dest"] if "names" not in entry else "|".join(entry["names"]))
        occurrences.append(Occurrence(option, written, entry["dest"], stored, i))
        i = stop
    missing = []
    for option, entry in table.flags.items():
        if entry.get("required"):
            key = entry["dest"] if "names" not in entry else "|".join(entry["names"])
            name = _action_name(option, table)
            if key not in seen and name not in missing:
                missing.append(name)
    if missing:
        raise CliError(f"the following arguments are required: {', '.join(missing)}")
    if extras:
        raise CliError(f"unrecognized arguments: {' '.join(extras)}", extras[0] if extras[0].startswith("-") else None)
    return Parsed(namespace, tuple(occurrences))


def flag_values(parsed: Parsed, dest: str) -> Any:
    return parsed.namespace.get(dest)
