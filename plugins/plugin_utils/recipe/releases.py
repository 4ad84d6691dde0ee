# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang release numbers: parse, compare, and read one from an image tag."""
from __future__ import annotations

import re

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?$")
_TAG_VERSION = re.compile(r"(?:^|[:@/-])v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?=$|[-_])")

Version = tuple[int, int, int, int]


def parse_version(text: str, variable: str = "sglang_version") -> Version:
    """'0.5.13.post1' -> (0, 5, 13, 1). Post releases sort after their base release."""
    match = _VERSION.match(str(text).strip())
    if not match:
        raise RecipeError(
            f"{variable}: {text!r} is not an SGLang release number; use the PyPI form, e.g. 0.5.23 or 0.5.13.post1"
        )
    major, minor, patch, post = match.groups()
    return int(major), int(minor), int(patch), int(post or 0)


def canonical_version(text: str, variable: str = "sglang_version") -> str:
    """The PyPI spelling of a release: 'v0.5.23' -> '0.5.23' (checked)."""
    parse_version(text, variable)
    return str(text).strip().lstrip("v")


def at_least(version: str, minimum: str) -> bool:
    return parse_version(version) >= parse_version(minimum)


def version_from_image(ref: str) -> str | None:
    """The SGLang release an image tag names (lmsysorg/sglang-rocm:v0.5.13.post1-rocm700-... -> 0.5.13.post1)."""
    if "@" in ref:  # a digest says nothing about the release
        ref = ref.split("@", 1)[0]
    tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
    match = _TAG_VERSION.search(tag)
    return match.group(1) if match else None
