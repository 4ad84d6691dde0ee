# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the RDMA and container runtime stages are given, judged on each host. Pure.

RDMA: module names as modules-load.d(5) reads them, DOCA's release number, the DOCA mirror, and the memlock limit
a node of a multi-node (or PD) instance needs. Container runtime: the Docker and NVIDIA Container Toolkit mirrors
as apt reads them, CDI without the toolkit that generates it, and a daemon.json whose default or named runtime
does not exist on the node (dockerd: "specified default runtime ... does not exist"). Called by
site/stage_inputs.py.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.origin import Host, truthy

#: runtimes dockerd has without a daemon.json `runtimes` entry (moby daemon/runtime_unix.go: the stock runc and
#: containerd's runc shim; and any name of containerd's form io.containerd.<name>.v<N>, isPermissibleC8dRuntimeName)
BUILT_IN_RUNTIMES = ("runc", "io.containerd.runc.v2")
CONTAINERD_NAME = re.compile(r"^io\.containerd\.[^.]+\.v\d+$")
NVIDIA_RUNTIME = "nvidia-container-runtime"


def rdma_inputs(h: Host) -> Iterator[str]:
    stage = h.stage("rdma")
    if h.plan["role"] != "server" or not stage.get("applies"):
        return
    s = h.settings("rdma")
    if not s:
        return
    for module in s["rdma_modules"] or []:
        why = grammars.module_name(module)
        if why:
            yield f"{h.var('rdma_modules')}: {why}"
    if str(s["rdma_stack"]) == "doca":
        url = str(s["rdma_doca_repo_url"] or "")
        why = grammars.repository_uri(url) if url else grammars.doca_version(s["rdma_doca_version"])
        if why:
            yield f"{h.var('rdma_doca_repo_url' if url else 'rdma_doca_version')}: {why}"
    settings = stage.get("settings") or {}
    if settings.get("networked") and not settings.get("memlock_unlimited", True):
        kind = "a PD worker" if (h.plan.get("recipe") or {}).get("pd_role") else "a member of a multi-node instance"
        yield (f"{h.var('rdma_memlock_unlimited')}: false on {h.name}, {kind}: its logins keep the default 8 MB "
               "memlock, and what registers RDMA memory from them (node_acceptance's cross-node all-reduce in a uv "
               "install, perftest) fails in ibv_reg_mr. Leave rdma_memlock_unlimited at true on networked servers")


def runtime_inputs(h: Host) -> Iterator[str]:
    stage = h.stage("runtime")
    if not stage.get("applies"):
        return
    s = h.settings("container_runtime")
    if not s:
        return
    settings = stage.get("settings") or {}
    suite = ((h.plan.get("stages") or {}).get("runtime", {}).get("repository") or {}).get("suite") or "noble"
    if settings.get("docker_source") == "docker" and s["container_runtime_docker_repo_url"]:
        why = grammars.repository_uri(s["container_runtime_docker_repo_url"], suite)
        if why:
            yield f"{h.var('container_runtime_docker_repo_url')}: {why}"
    if settings.get("nvidia_toolkit") and settings.get("nvidia_repo_manage"):
        url = str(s["container_runtime_nvidia_repo_url"]).replace("$(ARCH)", "amd64")
        why = grammars.repository_uri(url)
        if why:
            yield f"{h.var('container_runtime_nvidia_repo_url')}: {why}"
    for name in ("container_runtime_docker_key_url", "container_runtime_nvidia_key_url"):
        url = str(s.get(name) or "")
        if url and grammars.scheme_of(url) not in ("http", "https", "ftp", "file"):
            yield f"{h.var(name)}: {url!r} is not a URL the node can download the key from; write https://..."
    yield from cdi_without_toolkit(h, settings)
    yield from runtimes(h, settings)


def cdi_without_toolkit(h: Host, settings: dict[str, Any]) -> Iterator[str]:
    """CDI asked on a node without the NVIDIA Container Toolkit: nvidia-ctk, which writes the spec, is not there."""
    if settings.get("nvidia_toolkit") or not (h.given("container_runtime_cdi") and truthy(h.hv["container_runtime_cdi"])):
        return
    value = h.hv["container_runtime_cdi"]
    if any(truthy(hv.get("container_runtime_cdi")) and hv.get("container_runtime_cdi") == value
           and (plan.get("stages") or {}).get("runtime", {}).get("settings", {}).get("nvidia_toolkit")
           for _other, (hv, plan) in _others(h)):
        return  # the site's default, shared with the nodes that have the toolkit
    why = "an AMD node" if h.plan.get("vendor") == "amd" else "container_runtime_nvidia_toolkit is false there"
    yield (f"{h.var('container_runtime_cdi')}: true on {h.name}, but {why}: the CDI spec is written by the toolkit's "
           "nvidia-ctk, which this node does not get, so nothing is generated. Set container_runtime_nvidia_toolkit: "
           "true (NVIDIA nodes), or drop container_runtime_cdi")


def _others(h: Host) -> Iterator[tuple[str, tuple[dict[str, Any], dict[str, Any]]]]:
    """(host, (its variables, its plan)) of every other planned host."""
    for other, plan in h.site_plans.items():
        if other != h.name:
            yield other, (h.hostvars.get(other, {}), plan)


def runtimes(h: Host, settings: dict[str, Any]) -> Iterator[str]:
    """daemon.json's runtimes as dockerd reads them: default-runtime names a runtime it has (built in, listed under
    runtimes, or nvidia, which nvidia-ctk adds with the toolkit), and a runtime's binary exists on the node."""
    keys = settings.get("daemon_json") or {}
    toolkit = bool(settings.get("nvidia_toolkit"))
    listed = keys.get("runtimes") if isinstance(keys.get("runtimes"), dict) else {}
    node = "an AMD node" if h.plan.get("vendor") == "amd" else "a node without the NVIDIA Container Toolkit"
    fix = ("AMD containers get their GPUs through --device /dev/kfd and /dev/dri (the serving unit adds them)"
           if h.plan.get("vendor") == "amd" else "set container_runtime_nvidia_toolkit: true")
    for name, spec in listed.items():
        path = str((spec or {}).get("path") or "") if isinstance(spec, dict) else ""
        if NVIDIA_RUNTIME in path and not toolkit:
            yield (f"{h.var('container_runtime_daemon_json')}: runtimes.{name} runs {path}, which {h.name} ({node}) "
                   f"does not have: every container started with it fails. Drop it; {fix}")
    default = keys.get("default-runtime")
    if default is None:
        return
    known = set(BUILT_IN_RUNTIMES) | set(listed) | ({"nvidia"} if toolkit else set())
    if str(default) not in known and not CONTAINERD_NAME.match(str(default)):
        yield (f"{h.var('container_runtime_daemon_json')}: default-runtime {default!r} is no runtime dockerd has on "
               f"{h.name} ({node}; it has {', '.join(sorted(known))}): dockerd refuses to start (\"specified default "
               f"runtime '{default}' does not exist\"). Drop default-runtime; {fix}")


CHECKS = (rdma_inputs, runtime_inputs)
