# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn a host's plan into its systemd unit, environment file and docker command.

Thin: plugins/plugin_utils/site/units.py holds the logic (and render.yml uses the same functions).
"""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import firewall

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import units as serving_units
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap as _wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def server_unit(plan: dict[str, Any], runtime: dict[str, Any], settings: dict[str, Any]) -> str:
    return serving_units.server_unit(plan, runtime, settings)


def router_unit(plan: dict[str, Any], runtime: dict[str, Any], settings: dict[str, Any]) -> str:
    return serving_units.router_unit(plan, runtime, settings)


def env_file(env: dict[str, str], header: str = "Managed by metalserve.sglang") -> str:
    return serving_units.env_file(env, header)


def instance_firewall(plan: dict[str, Any], addresses: dict[str, Any]) -> str:
    ports = load_catalog().ports
    try:
        return firewall.ruleset(plan, {k: list(v or []) for k, v in addresses.items()}, int(ports["internal_offset"]),
                                int(ports["internal_count"]))
    except ValueError as exc:
        raise RecipeError(f"sglang_server_firewall: {exc}") from exc


def server_argv(plan: dict[str, Any], runtime: dict[str, Any]) -> list[str]:
    return serving_units.server_argv(plan, runtime)


class FilterModule:
    """metalserve.sglang serving filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {name: _wrap(func) for name, func in (("server_unit", server_unit), ("router_unit", router_unit),
                                                     ("env_file", env_file), ("server_argv", server_argv),
                                                     ("instance_firewall", instance_firewall))}
