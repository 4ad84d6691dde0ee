# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An ordered list of command-line flags that remembers who asked for each one.

An Arg is (name, value, origin): value None is a switch, a str one value, a tuple several values;
origin names the variable or cell that put it there, so errors can point at what to change.
All functions return new lists; none mutates its input.
"""
from __future__ import annotations

from typing import NamedTuple, Union

Value = Union[None, str, tuple]


class Arg(NamedTuple):
    name: str
    value: Value
    origin: str


Args = list[Arg]


def as_value(raw: object) -> Value:
    """Data value -> Arg value: True is a switch, lists are several values, the rest a string."""
    if raw is True or raw is None:
        return None
    if isinstance(raw, (list, tuple)):
        return tuple(str(v) for v in raw)
    return str(raw)


def find(args: Args, name: str) -> int:
    for i, arg in enumerate(args):
        if arg.name == name:
            return i
    return -1


def has(args: Args, name: str) -> bool:
    return find(args, name) >= 0


def get(args: Args, name: str, default: Value = None) -> Value:
    i = find(args, name)
    return args[i].value if i >= 0 else default


def put(args: Args, name: str, value: Value, origin: str) -> Args:
    """Set a flag: replace its value where it stands, or append it."""
    i = find(args, name)
    if i >= 0:
        return args[:i] + [Arg(name, value, origin)] + args[i + 1:]
    return args + [Arg(name, value, origin)]


def drop(args: Args, *names: str) -> Args:
    return [a for a in args if a.name not in names]


def drop_prefix(args: Args, prefix: str) -> Args:
    return [a for a in args if not a.name.startswith(prefix)]


def insert_after(args: Args, anchor: str, new: Args) -> Args:
    i = find(args, anchor)
    if i < 0:
        raise KeyError(anchor)
    return args[: i + 1] + new + args[i + 1:]


def rename(args: Args, old: str, new: str) -> Args:
    return [Arg(new, a.value, a.origin) if a.name == old else a for a in args]


def tokens(args: Args) -> list[str]:
    out: list[str] = []
    for arg in args:
        out.append(arg.name)
        if isinstance(arg.value, tuple):
            out.extend(arg.value)
        elif arg.value is not None:
            out.append(arg.value)
    return out
