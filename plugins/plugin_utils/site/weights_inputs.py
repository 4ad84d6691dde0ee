# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the weights come from, judged on each host and across a rack's fan-out; and the GPUs a node must show
against what its servers use. Pure; called by site/stage_inputs.py.

On a host: the Hub endpoint as huggingface_hub joins it, the rsync source as rsync(1) reads it, a source that is the
folder it fills, a source holding another precision's checkpoint (a BF16 folder staged into an FP8 rack), and an
offline rack that still downloads from the Hub. Across hosts: a fan-out group whose members serve different
checkpoints (its leader fetches one of them), and a fan-out port the leader's machine already listens on. GPUs:
node_acceptance_expected_gpus and rocm_driver_expected_gpus against the GPUs the host's servers use and the node has.
"""
from __future__ import annotations

import posixpath
from collections import defaultdict
from typing import Any, Iterator

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import origin
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.origin import Host, truthy
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import monitoring, placement, replicas, stages

#: the environment that tells huggingface_hub and transformers to make no call to the Hub (their docs: HF_HUB_OFFLINE,
#: TRANSFORMERS_OFFLINE)
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
Problem = tuple[str, str]


def _norm(path: str) -> str:
    """An absolute path as the filesystem resolves it (no trailing or doubled slashes, no . or ..)."""
    text = str(path).strip().lstrip("/")
    return posixpath.normpath("/" + text) if text else ""


def weights_sources(h: Host) -> Iterator[str]:
    stage = h.stage("weights")
    s = h.settings("model_weights")
    if h.plan["role"] != "server" or not s:
        return
    settings = stage.get("settings") or {}
    source = str(settings.get("source") or s["model_weights_source"])
    target = _norm(settings.get("dir") or stages.weights_dir(h.plan, h.hv))
    if h.given("model_weights_hf_endpoint"):
        why = grammars.hub_endpoint(h.hv["model_weights_hf_endpoint"], str(settings.get("repo") or ""))
        if why:
            yield f"{h.var('model_weights_hf_endpoint')}: {why} (huggingface_hub joins HF_ENDPOINT and the file's path)"
    if source == "rsync" and s["model_weights_rsync_source"]:
        yield from rsync_source(h, str(s["model_weights_rsync_source"]), target)
    if source == "copy" and s["model_weights_copy_source"]:
        yield from copy_source(h, str(s["model_weights_copy_source"]), target)
    yield from offline_hub(h, settings)


def rsync_source(h: Host, value: str, target: str) -> Iterator[str]:
    why = grammars.rsync_problem(value)
    if why:
        yield f"{h.var('model_weights_rsync_source')}: {why}"
        return
    found = grammars.rsync_source(value) or {}
    me = {h.name.lower(), str(h.hv.get("ansible_host") or "").lower(),
          *(a.lower() for a in placement.source_addresses(h.name, h.hv))}
    if found["kind"] == "shell" and found["host"].lower() in me and _norm(found["path"]) == target:
        yield (f"{h.var('model_weights_rsync_source')}: {value!r} is {h.name}'s own {target}, the folder the weights "
               "are staged into: rsync would copy the folder onto itself and no weights ever arrive. Name the cache "
               "host that holds the checkpoint")
        return
    yield from other_precision(h, "model_weights_rsync_source", found["path"])


def copy_source(h: Host, value: str, target: str) -> Iterator[str]:
    source = _norm(value)
    if not str(value).startswith("/"):
        yield (f"{h.var('model_weights_copy_source')}: {value!r} is not an absolute path; give the folder of the "
               "mounted checkpoint, e.g. /mnt/nfs/models/zai-org/GLM-5.3")
        return
    if source == target or source.startswith(target + "/") or target.startswith(source + "/"):
        yield (f"{h.var('model_weights_copy_source')}: {value} is {'' if source == target else 'inside, or holds, '}"
               f"the folder the weights are staged into ({target}): the copy would read what it writes. Name the "
               "shared mount that holds the checkpoint")
        return
    yield from other_precision(h, "model_weights_copy_source", value)


def other_precision(h: Host, name: str, path: str) -> Iterator[str]:
    wrong = stages.other_checkpoint(h.plan, "/" + str(path).strip().rstrip("/"))
    if wrong:
        rec = h.plan["recipe"]
        yield (f"{h.var(name)}: {str(path).rstrip('/')} holds {wrong}, but {h.name} serves {rec['checkpoint']} "
               f"({rec['quant']}): the {rec['quant']} folder would be filled with another precision's shards. Point it "
               f"at the {rec['checkpoint']} folder")


def offline_hub(h: Host, settings: dict[str, Any]) -> Iterator[str]:
    """An offline rack (sglang_install_offline, or HF_HUB_OFFLINE in its servers' environment) that downloads from
    the public Hub (a mirror endpoint inside the site is fine; a fan-out peer fetches from its leader)."""
    if settings.get("source") != "hf" or (settings.get("fanout_leader") not in ("", None, h.name)):
        return
    endpoint = str(settings.get("hf_endpoint") or "")
    hub = str(node.get("endpoints.hub"))
    if endpoint and hub.split("://", 1)[-1].rstrip("/") not in endpoint:
        return
    env = h.plan.get("env") or {}
    offline = [f"{origin.named('sglang_install_offline', h.name, h.hostvars, h.groups)} true"] \
        if truthy(h.hv.get("sglang_install_offline", False)) else []
    offline += [f"{k}={env[k]} in {origin.named('sglang_env', h.name, h.hostvars, h.groups)}"
                for k in OFFLINE_ENV if truthy(env.get(k, "0"))]
    if offline:
        shown = origin.named("model_weights_source", h.name, h.hostvars, h.groups) if h.given("model_weights_source") \
            else "model_weights_source (auto: hf, as the server loads a folder)"
        yield (f"{shown}: {h.name} is offline ({'; '.join(offline)}), yet its weights would download from "
               f"{hub}. Stage them from inside the site: model_weights_source: copy (a shared mount) or "
               "rsync (a cache host), or a Hub mirror in model_weights_hf_endpoint")


def expected_gpus(h: Host) -> Iterator[str]:
    """The GPUs a node must show (node acceptance; ROCm's check after install) against the GPUs its servers use
    and the GPUs its platform has: fewer than used passes a node that cannot serve, more than it has refuses every
    healthy node."""
    if h.plan["role"] != "server":
        return
    used = sum(int(i["recipe"]["gpus_per_node"]) for i in replicas.instances_of(h.plan))
    have = int(h.platform().get("gpus_per_node") or 0)
    names = ["node_acceptance_expected_gpus"] + (["rocm_driver_expected_gpus"] if h.plan.get("vendor") == "amd" else [])
    for name in names:
        if not h.given(name):
            continue
        try:
            value = int(h.hv[name])
        except (TypeError, ValueError):
            continue  # the variable check names the type
        if value and value < used:
            yield (f"{h.var(name)}: {value}, but {h.name}'s servers use {used} GPUs (--tp-size and nodes of its cell): "
                   f"a node showing {value} would pass and then fail to serve. Set {used}" +
                   (f" (up to {have})" if have > used else "") + (", or 0 for the plan's count" if name.startswith("node") else ""))
        elif have and value > have:
            yield (f"{h.var(name)}: {value}, but a {h.platform()['id']} node has {have} GPUs (data/gpus.yml): every "
                   f"healthy node would be refused. Set {have}" + (" or 0" if name.startswith("node") else ""))


CHECKS = (weights_sources, expected_gpus)


# --- across hosts ---------------------------------------------------------------------------------------------------

def site_problems(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]],
                  groups: dict[str, list[str]]) -> list[Problem]:
    out: list[Problem] = []
    by_group: dict[str, list[str]] = defaultdict(list)
    for host, plan in sorted(plans.items()):
        settings = ((plan.get("stages") or {}).get("weights") or {}).get("settings") or {}
        if settings.get("fanout_group") and len(settings.get("fanout_members") or []) > 1:
            by_group[settings["fanout_group"]].append(host)
    for group, hosts in sorted(by_group.items()):
        out += fanout_checkpoints(group, hosts, plans, hostvars, groups)
        leader = plans[hosts[0]]["stages"]["weights"]["settings"]["fanout_leader"]
        if leader in plans:
            out += fanout_port(leader, plans[leader], hostvars, groups)
    return out


def _weights(plan: dict[str, Any]) -> tuple[str, str, str]:
    s = plan["stages"]["weights"]["settings"]
    return s["repo"], s["revision"], s["dir"]


def fanout_checkpoints(group: str, hosts: list[str], plans: dict[str, dict[str, Any]],
                       hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> list[Problem]:
    """A fan-out group whose members stage different weights: its leader fetches its own, the others would rsync
    a folder that holds another checkpoint (or none)."""
    kinds: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for host in hosts:
        kinds[_weights(plans[host])].append(host)
    if len(kinds) < 2:
        return []
    leader = plans[hosts[0]]["stages"]["weights"]["settings"]["fanout_leader"]
    listed = "; ".join(f"{repo}@{rev} in {folder} ({', '.join(members)})" for (repo, rev, folder), members in kinds.items())
    return [(host, f"{origin.named('model_weights_fanout_group', host, hostvars, groups)}: {group} spans "
                   f"{len(kinds)} checkpoints ({listed}); its leader {leader} fetches only its own, and the others "
                   "would copy that folder. Give each checkpoint's rack its own fan-out group") for host in hosts]


def listeners(plan: dict[str, Any]) -> dict[int, str]:
    """Every TCP port a server host's machine listens on, by what opens it."""
    out: dict[int, str] = {}
    for instance in replicas.instances_of(plan):
        for flag, port in instance["recipe"]["listen_ports"].items():
            out.setdefault(int(port), f"{flag} of {instance['instance']}")
    rec = plan["recipe"]
    if len(plan["members"]) > 1:
        out.setdefault(int(rec["dist_port"]), "the rendezvous port (sglang_dist_port)")
    for port, what in monitoring.exporter_ports(plan):
        out.setdefault(int(port), what)
    driver = ((plan.get("stages") or {}).get("driver") or {}).get("settings") or {}
    for port in driver.get("imex_ports") or []:
        out.setdefault(int(port), "nvidia-imex")
    return out


def fanout_port(leader: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
                groups: dict[str, list[str]]) -> list[Problem]:
    settings = plan["stages"]["weights"]["settings"]
    port = int(settings["fanout_port"])
    taken = listeners(plan)
    if port not in taken:
        return []
    return [(leader, f"{origin.named('model_weights_fanout_port', leader, hostvars, groups)}: {port} is taken on "
                     f"{leader}, the fan-out's leader, by {taken[port]}: its rsync daemon could not bind while that "
                     "runs. Pick a port nothing else on it listens on")]
