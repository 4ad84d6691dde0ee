# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter env_file: a server plan's environment file with its secrets filled in.

Thin: plugins/plugin_utils/site/units.py holds the logic; the site plan carries the same file with
placeholders where the secrets go (what render.yml shows), so the two differ only in those values.
"""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import units


def env_file(plan: dict[str, Any], secrets: dict[str, Any] | None = None) -> str:
    return units.env_file(plan, {str(k): str(v) for k, v in (secrets or {}).items() if v not in (None, "")})


class FilterModule:
    """metalserve.sglang serving filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"env_file": _wrap(env_file)}
