# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters plan_drift (role settings a role sees that differ from those its plan was made from), probe_files
(a plan's files as metalserve.sglang.node_state compares them) and plan_missing (does a host of the play lack the
site plan).

Thin: plugins/plugin_utils/site/runtime.py holds the logic.
"""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime


def plan_drift(inputs: dict[str, Any], seen: list[Any]) -> list[str]:
    return runtime.drift(inputs, list(seen))


def probe_files(files: dict[str, Any]) -> list[dict[str, Any]]:
    return runtime.probe_files(files)


def plan_missing(hosts: list[str], hostvars: Any) -> bool:
    # not wrapped: each host's metalserve_site holds the whole site's plans; only whether it is one is read
    views = [hostvars[str(h)] for h in hosts]
    return runtime.plan_missing(view["metalserve_site"] if "metalserve_site" in view else None for view in views)


class FilterModule:
    """metalserve.sglang site filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"plan_drift": _wrap(plan_drift), "probe_files": _wrap(probe_files), "plan_missing": plan_missing}
