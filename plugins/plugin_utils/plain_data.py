# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible hands plugins its own str/dict/list subclasses (tagged, lazy); the engine wants plain data."""
from __future__ import annotations

from typing import Any


def to_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def var_or_none(view: Any, key: str) -> Any:
    """A host's variable as plain data, or None when it is unset or cannot be templated."""
    try:
        return to_plain(view[key]) if key in view else None
    except Exception:  # noqa: BLE001 - an undefined or broken var reads as absent
        return None
