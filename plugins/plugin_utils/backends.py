# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU vendor's kernels a backend value of `sglang serve` names (data/sglang/vendors.yml backend_words): the
planner asks before it adds one (recipe/knobs.py), the site checker of every backend flag a command holds
(checks/site.py). Pure."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

DATA = Path(__file__).resolve().parents[2] / "data"


@functools.lru_cache(maxsize=1)
def _words() -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    doc = yaml_read.safe_load((DATA / "sglang" / "vendors.yml").read_text(encoding="utf-8"))
    return tuple((str(vendor), tuple(tuple(str(w).split("_")) for w in (facts.get("backend_words") or [])))
                 for vendor, facts in doc.items())


@functools.lru_cache(maxsize=1024)
def backend_vendor(value: Any) -> str:
    """The vendor whose kernels a backend value names (flashinfer_cutlass: nvidia, aiter: amd), '' for a value that
    runs on both (triton, tilelang) or names no kernels. A value is split at '_'; a word matches whole parts."""
    if not isinstance(value, str):
        return ""
    tokens = tuple(value.lower().split("_"))
    for vendor, words in _words():
        for parts in words:
            if any(tokens[i:i + len(parts)] == parts for i in range(len(tokens))):
                return vendor
    return ""
