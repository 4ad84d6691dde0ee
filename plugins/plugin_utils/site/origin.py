# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host as the stage-input checks see it, and where one of its variables comes from. Pure.

Ansible hands the plan every host's variables merged (site/inventory_vars.py), so which file set one is not
known. What is known: the groups whose every host has the same value. The largest of them is named as its setter
(group_vars/<group>.yml, or a parent group's); a value no other host shares is the host's own (host_vars).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime

_UNSET = object()
TRUE = ("true", "yes", "on", "1")


def sharing_groups(name: str, host: str, hostvars: dict[str, dict[str, Any]],
                   groups: dict[str, list[str]], same: bool = True) -> list[str]:
    """The groups of `host` (all and ungrouped aside) whose every host has the same value of `name` (same=False: has
    a value of it at all), largest first."""
    value = hostvars.get(host, {}).get(name, _UNSET)
    if value is _UNSET:
        return []
    found = []
    for group, members in groups.items():
        if group in ("all", "ungrouped") or host not in members or len(members) < 2:
            continue
        if all(hostvars.get(m, {}).get(name, _UNSET) == value if same else
               hostvars.get(m, {}).get(name, _UNSET) is not _UNSET for m in members):
            found.append(group)
    return sorted(found, key=lambda g: (-len(groups[g]), g))


def where_set(name: str, host: str, hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> str:
    """'set for group rack_a (4 hosts)', 'set for every host (group_vars/all)', 'set on host h1' (or its one-host
    group's)."""
    everyone = [h for h in hostvars if hostvars[h].get(name, _UNSET) is not _UNSET]
    if len(hostvars) > 1 and len(everyone) == len(hostvars) \
            and len({repr(hostvars[h][name]) for h in everyone}) == 1:
        return "set for every host (group_vars/all)"
    found = sharing_groups(name, host, hostvars, groups)
    if not found:
        each = sharing_groups(name, host, hostvars, groups, same=False)
        if each:
            return f"set for each host of group {each[0]} ({len(groups[each[0]])} hosts; their values differ)"
        alone = sorted(g for g, members in groups.items() if g not in ("all", "ungrouped") and list(members) == [host])
        return f"set on host {host}" + (f" or its one-host group {' / '.join(alone)}" if alone else "")
    size = len(groups[found[0]])
    largest = [g for g in found if len(groups[g]) == size]
    return f"set for group {' / '.join(largest)} ({size} hosts)"


def named(name: str, host: str, hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> str:
    """'name (set for group rack_a (2 hosts))': a variable with where it comes from, for a message."""
    return f"{name} ({where_set(name, host, hostvars, groups)})"


@dataclass
class Host:
    """One host as the checks see it: its plan, its variables and the site's, and where a variable comes from."""
    name: str
    plan: dict[str, Any]
    hostvars: dict[str, dict[str, Any]]
    groups: dict[str, list[str]]
    site_plans: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def hv(self) -> dict[str, Any]:
        return self.hostvars[self.name]

    def stage(self, name: str) -> dict[str, Any]:
        return (self.plan.get("stages") or {}).get(name) or {}

    def settings(self, role: str) -> dict[str, Any]:
        """The role's settings as the plan reads them ({} when one cannot be read: the plan says why)."""
        try:
            return runtime.settings(self.hv, role)
        except RecipeError:
            return {}

    def given(self, name: str) -> bool:
        return self.hv.get(name) not in (None, "", [], {})

    def var(self, name: str) -> str:
        return named(name, self.name, self.hostvars, self.groups)

    def platform(self) -> dict[str, Any]:
        gpu = (self.plan.get("recipe") or {}).get("gpu") or ""
        try:
            return dict(load_catalog(None, self.hv.get("sglang_gpu_platforms")).gpus.get(gpu) or {}, id=gpu)
        except RecipeError:
            return {"id": gpu}


def truthy(value: Any) -> bool:
    """A switch as Ansible's boolean reads it (true, yes, on, 1)."""
    return value is True or str(value).strip().lower() in TRUE
