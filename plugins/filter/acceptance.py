# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of roles/node_acceptance over plugins/plugin_utils/checks/acceptance.py (logic and tests there)."""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import acceptance
from ansible_collections.metalserve.sglang.plugins.plugin_utils.filter_wrap import wrap
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.units import docker_forms


def acceptance_node_summary(node: dict[str, Any], plan: dict[str, Any] | None = None,
                            skip_busy: bool = True) -> dict[str, Any]:
    return acceptance.node_summary(node, plan, bool(skip_busy))


def acceptance_bench_result(out: dict[str, Any]) -> dict[str, Any]:
    return acceptance.bench_result(out)


def acceptance_replay(paths: dict[str, Any]) -> dict[str, Any]:
    return acceptance.replay(paths)


def acceptance_launcher(how: dict[str, Any], probes: str, env: dict[str, str] | None = None) -> list[str]:
    return acceptance.launcher(str(how.get("method") or "uv"), str(how.get("vendor") or "nvidia"),
                               str(how.get("python") or ""), str(how.get("image") or ""), probes,
                               {str(k): str(v) for k, v in (env or {}).items()}, bool(how.get("rdma")), docker_forms())


class FilterModule:
    """metalserve.sglang node acceptance filters."""

    def filters(self) -> dict[str, Callable[..., Any]]:
        return {f.__name__: wrap(f) for f in (acceptance_node_summary, acceptance_bench_result, acceptance_replay,
                                              acceptance_launcher)}
