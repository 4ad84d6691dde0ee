# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a secret looks like (data/secrets.yml): tokens, keys, URLs with a password, secret-named variables. Pure.

The planner refuses such values in its inputs, the site checker in what the nodes get; both say which kind of
secret was found and where, never the value itself.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

DATA = Path(__file__).resolve().parents[2] / "data" / "secrets.yml"


@functools.lru_cache(maxsize=1)
def _rules() -> tuple[tuple[tuple[str, re.Pattern[str]], ...], re.Pattern[str], re.Pattern[str]]:
    doc = yaml_read.safe_load(DATA.read_text(encoding="utf-8"))
    patterns = tuple((str(p["kind"]), re.compile(p["regex"])) for p in doc["patterns"])
    return patterns, re.compile(doc["env_name"]), re.compile(doc["placeholder"])


def secret_kind(text: object) -> Optional[str]:
    """The kind of secret a text holds ('a Hugging Face token (hf_...)'), or None."""
    return _secret_kind(str(text))


@functools.lru_cache(maxsize=65536)
def _secret_kind(value: str) -> Optional[str]:
    """secret_kind of one string (a site's hosts repeat their lines and tokens: each is searched once)."""
    for kind, pattern in _rules()[0]:
        if pattern.search(value):
            return kind
    return None


def secret_env_name(name: object) -> bool:
    """Whether an environment variable's value is a secret by its name (HF_TOKEN, WANDB_API_KEY)."""
    return bool(_rules()[1].search(str(name)))


def placeholder(value: object) -> bool:
    """Whether a value is the plan's placeholder for a secret the serving role fills on the node."""
    return bool(_rules()[2].match(str(value)))


def exposed(doc: object, path: str = "") -> Optional[tuple[str, str, str]]:
    """The first secret-shaped string in a plan (nested dicts and lists), as (where, kind, the string): what the
    plan artifact, rendered/ and --diff would show. A file entry of mode 0600 is private and skipped."""
    found = _first(doc)
    if found is None:
        return None
    keys, kind, text = found
    where = ".".join(str(k) for k in reversed(keys))
    return (f"{path}.{where}" if path and where else path or where), kind, text


def _first(doc: object) -> Optional[tuple[list[object], str, str]]:
    """exposed()'s walk: the keys to the string (innermost first, built only on the way back from a find), its kind
    and the string. A plan of a 2,048-server site holds about 1.2 million values; each string is judged once per
    distinct text (_string_kind), and no path is built for the values that hold nothing."""
    if isinstance(doc, str):
        kind = _string_kind(doc)
        return ([], kind, doc) if kind else None
    if isinstance(doc, dict):
        if doc.get("mode") == "0600" and "content" in doc:
            return None
        items: object = doc.items()
    elif isinstance(doc, (list, tuple)):
        items = enumerate(doc)
    else:
        return None
    for key, value in items:  # type: ignore[attr-defined]
        if isinstance(value, (str, dict, list, tuple)):
            found = _first(value)
            if found:
                found[0].append(key)
                return found
    return None


@functools.lru_cache(maxsize=262144)
def _string_kind(value: str) -> Optional[str]:
    """The kind of secret one string of a plan holds, None for the plan's own placeholders."""
    return None if placeholder(value) else _secret_kind(value)


def masked(value: Any) -> str:
    """repr() of a value a refusal quotes, with what holds a secret hidden: a string of a secret's shape, an item
    NAME=VALUE or a mapping's entry whose name is a secret's (HF_TOKEN, WANDB_API_KEY)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(masked(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: " + ("'<hidden>'" if secret_env_name(k) else masked(v))
                               for k, v in value.items()) + "}"
    if isinstance(value, str):
        name, sep, _rest = value.partition("=")
        if sep and secret_env_name(name):
            return repr(f"{name}=<hidden>")
        if secret_kind(value):
            return "'<hidden>'"
    return repr(value)
