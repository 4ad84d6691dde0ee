# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of playbooks/verify.yml over plugins/plugin_utils/checks/verify.py (logic and tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import verify as verify_checks
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog


def verify_target(plan: dict[str, Any]) -> dict[str, Any] | None:
    """What verify.yml calls on this host: a server's head (not PD workers: their router answers) or a router."""
    plan = to_plain(plan) or {}
    if plan.get("role") == "router":
        router = load_catalog().router
        return {"instance": plan["instance"], "url": f"http://127.0.0.1:{plan['port']}",
                "served_model_name": plan.get("served_model_name"), "argv": plan.get("worker_argv") or [],
                "not_applicable": {check: router.get("routes_missing_reason", "")
                                   for check in router.get("routes_missing") or []}}
    if plan.get("role") == "server" and plan.get("rank") == 0 and not plan["recipe"].get("pd_role"):
        return {"instance": plan["instance"], "url": f"http://127.0.0.1:{plan['recipe']['port']}",
                "served_model_name": plan["recipe"].get("served_model_name"), "argv": plan.get("argv") or []}
    return None


def verify_rows(results: dict[str, Any], host: str, target: dict[str, Any], timeout: float) -> list[dict[str, Any]]:
    return verify_checks.rows(str(host), to_plain(target), to_plain(results), float(timeout))


def verify_table(rows: list[dict[str, Any]]) -> str:
    return verify_checks.table(to_plain(rows))


class FilterModule:
    """metalserve.sglang verify filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"verify_target": verify_target, "verify_rows": verify_rows, "verify_table": verify_table}
