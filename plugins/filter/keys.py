# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Repository signing-key filters over plugins/plugin_utils/drivers/openpgp.py (logic and unit tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import openpgp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap


def openpgp_key_check(content: str, fingerprint: str, host: str = "this host", variable: str = "the fingerprint",
                      source: str = "the key URL", path: str = "") -> dict[str, Any]:
    return openpgp.check(content, fingerprint, host, variable, source, path)


class FilterModule:
    """metalserve.sglang signing-key filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"openpgp_key_check": _wrap(openpgp_key_check)}
