# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each stage compares on a node (the arguments of metalserve.sglang.node_state), their one home.

A role asks node_state for its own stage's items (the filter metalserve.sglang.node_wants); site.yml's node_probe
action asks for every stage of a host in one module run, and a stage reuses that answer while it asked exactly what
the stage would ask and no stage before it changed the host (the roles' `<role>_node_dirty` facts).
Secrets come in as values and leave only as SHA-256 digests. Pure; controller only.
"""
from __future__ import annotations

import functools
import hashlib
import json
import posixpath
import re
from typing import Any

from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import stages, units

#: node_state's item kinds, in the order a merged request lists them
KINDS = ("files", "directories", "links", "groups", "users", "units", "commands", "listings", "weights")
#: the secret values a probe hashes, and the variables they are read from (the first one set): the roles' own
#: variables, then the site-wide one their defaults fall back to (sglang_server and model_weights defaults/main.yml)
SECRET_VARS = {"server_hf_token": ("sglang_server_hf_token", "sglang_hf_token"),
               "server_api_key": ("sglang_server_api_key", "sglang_api_key"),
               "weights_hf_token": ("model_weights_hf_token", "sglang_hf_token")}


@functools.lru_cache(maxsize=8)
def _helper_sha256(name: str) -> str:
    """The digest of a helper script sglang_server ships (read once per process)."""
    return sha256(stages.role_file("sglang_server", name))


def sha256(text: Any) -> str:
    """Jinja's hash('sha256') of a value: the digest of its text in UTF-8."""
    return hashlib.sha256(str(text).encode("utf-8")).hexdigest()


def _root_file(name: str, path: str, text: str, mode: str, group: str = "root") -> dict[str, Any]:
    return {"name": name, "path": path, "sha256": sha256(text), "mode": mode, "owner": "root", "group": group}


def _request(**kinds: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {kind: list(kinds.get(kind) or []) for kind in KINDS}


def install_wants(plan: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """sglang_install: uv (the tools venv's uv version, the venv's marker, the current link) or docker (whether the
    docker modules can import requests)."""
    spec = plan["install"]
    if spec["method"] == "docker":
        return _request(commands=[{"name": "requests", "argv": [plan["settings"]["python"], "-c", "import requests"]}])
    marker = spec["marker"]
    return _request(commands=[{"name": "uv", "argv": [spec["uv"], "--version"]}],
                    files=[{"name": "marker", "path": marker["path"], "sha256": sha256(marker["content"])}],
                    links=[{"name": "current", "path": spec["root"] + "/current", "src": spec["venv"]}])


def server_secrets_text(api_key: Any) -> str:
    """The server's secrets file (SGLang's --config YAML with its api-key), as Ansible's to_nice_yaml writes it."""
    return str(to_nice_yaml({"api-key": api_key}))


def _server_files(plan: dict[str, Any], secrets: dict[str, Any]) -> list[dict[str, Any]]:
    paths, files = plan["settings"], plan["files"]
    uv = plan["install"]["method"] == "uv"
    token, api_key = str(secrets.get("server_hf_token") or ""), secrets.get("server_api_key")
    env = units.env_file(plan, {"HF_TOKEN": token} if token else {})
    wanted = [
        {"name": "helper_health", "path": paths["health_script"], "src": "wait_healthy.py",
         "sha256": _helper_sha256("wait_healthy.py"), "mode": "0755", "owner": "root", "group": "root"},
        {"name": "helper_check", "path": node.get("files.check_script"), "src": "check_args.py",
         "sha256": _helper_sha256("check_args.py"), "mode": "0755", "owner": "root", "group": "root"},
        _root_file("unit", files["unit"]["path"], files["unit"]["content"], files["unit"]["mode"]),
        {"name": "env", "path": files["env"]["path"], "sha256": sha256(env), "mode": files["env"]["mode"],
         "owner": files["env"]["owner"], "group": files["env"]["group"]},
        (_root_file("token", paths["hf_token_file"], token, "0600") if not uv and token
         else {"name": "token", "path": paths["hf_token_file"], "absent": True}),
        (_root_file("secrets", paths["secrets_config"], server_secrets_text(api_key), "0640",
                    paths["group"] if uv else "root") if plan.get("api_key")
         else {"name": "secrets", "path": paths["secrets_config"], "absent": True}),
    ]
    if "firewall" in files:
        wanted += [_root_file("firewall_rules", files["firewall"]["path"], files["firewall"]["content"] or "",
                              files["firewall"]["mode"]),
                   _root_file("firewall_unit_file", files["firewall_unit"]["path"], files["firewall_unit"]["content"],
                              "0644")]
    return wanted


def server_wants(host_plan: dict[str, Any], replica: int, secrets: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """sglang_server, one serving instance of the host (replica `replica` of sglang_replicas, else 0): accounts,
    folders, helpers, unit, environment and secret files, firewall, units, the running image; the first also lists
    the instance's units on the node (tasks/retire.yml removes those the plan no longer has)."""
    plan = (host_plan.get("replicas") or [host_plan])[replica]
    paths, groups = plan["settings"], list(dict.fromkeys(plan.get("service_groups") or []))
    uv = plan["install"]["method"] == "uv"
    firewall = "firewall" in plan["files"]
    return _request(
        groups=([{"name": "group_service", "group": paths["group"]}]
                + [{"name": "group_" + g, "group": g} for g in groups]) if uv else [],
        users=[{"name": "user", "user": paths["user"], "groups": list(plan.get("service_groups") or [])}] if uv else [],
        directories=[{"name": "dir_config", "path": paths["config_dir"], "mode": "0755", "owner": "root", "group": "root"},
                     {"name": "dir_helpers", "path": posixpath.dirname(paths["health_script"]), "mode": "0755",
                      "owner": "root", "group": "root"}],
        files=_server_files(plan, secrets),
        units=[{"name": "service", "unit": plan["unit"], "enabled": True}]
        + ([{"name": "firewall_service", "unit": posixpath.basename(plan["files"]["firewall_unit"]["path"]),
             "enabled": True, "active": True}] if firewall else []),
        commands=[] if uv else [{"name": "running_image", "argv": [node.get("programs.docker"), "inspect", "--format",
                                                                   "{{.Image}}", plan["container"]]}],
        listings=[{"name": "instance_units", "path": host_plan["retire"]["units_dir"],
                   "pattern": host_plan["retire"]["pattern"]}] if replica == 0 else [])


#: what a server reads when it starts: a difference in any of these files means the running server is not the planned one
SERVER_RESTART_FILES = ("unit", "env", "token", "secrets")


def server_changed(differ: list[str], state: dict[str, Any], image_id: Any) -> bool:
    """Whether this member of a serving instance no longer runs what the plan says, so that the whole instance
    restarts: a file the server reads at start differs, or (docker) its container runs another image than the one
    the install stage pulled (`image_id`, sglang_install_info's; empty in uv installs)."""
    running = state.get("running_image") or {}
    return bool(set(differ) & set(SERVER_RESTART_FILES)) or (
        running.get("rc", 1) == 0 and bool(image_id) and str(running.get("stdout") or "") != str(image_id))


def router_wants(plan: dict[str, Any], start: bool) -> dict[str, list[dict[str, Any]]]:
    """sglang_router: its health-wait helper and folder, unit, account (uv), unit state, the running image (docker)."""
    helper, unit, settings = plan["files"]["helper_health"], plan["files"]["unit"], plan["settings"]
    uv = plan["install"]["method"] == "uv"
    return _request(
        files=[_root_file("helper_health", helper["path"], helper["content"], helper["mode"]),
               _root_file("unit", unit["path"], unit["content"], unit["mode"])],
        directories=[{"name": "dir_helpers", "path": posixpath.dirname(helper["path"]), "mode": "0755",
                      "owner": "root", "group": "root"}],
        groups=[{"name": "group_service", "group": settings["group"]}] if uv else [],
        users=[{"name": "user", "user": settings["user"]}] if uv else [],
        units=[dict({"name": "service", "unit": plan["unit"], "enabled": True}, **({"active": True} if start else {}))],
        commands=[] if uv else [{"name": "running_image", "argv": [node.get("programs.docker"), "inspect", "--format",
                                                                   "{{.Image}}", plan["container"]]}])


def weights_view(plan: dict[str, Any], play_hosts: list[str], token: str) -> dict[str, Any]:
    """Who stages what in this run: the fan-out members among the run's hosts, the leader that serves its peers,
    this host's source (a peer fetches from its leader over rsync) and the Hub's address."""
    settings, host = plan["stages"]["weights"]["settings"], plan["host"]
    members = sorted(set(settings["fanout_members"]) & {str(h) for h in play_hosts})
    leader = settings["fanout_leader"] if len(members) > 1 and settings["fanout_leader"] in members else ""
    is_peer = leader not in ("", host) and host in members
    rsync_url = (f"rsync://{settings['fanout_leader_address']}:{settings['fanout_port']}/sglang-weights/" if is_peer
                 else re.sub("/*$", "/", settings["rsync_source"]))
    return {"members": members, "leader": leader, "is_leader": leader == host, "is_peer": is_peer,
            "source": "rsync" if is_peer else settings["source"], "rsync_url": rsync_url,
            "hub": {"endpoint": settings["hf_endpoint"], "repo": settings["repo"], "revision": settings["revision"],
                    "token_file": settings["token_file"] if token else ""}}


def weights_wants(plan: dict[str, Any], play_hosts: list[str], token: str) -> dict[str, list[dict[str, Any]]]:
    """model_weights: what is staged against the source's manifest (the Hub's, the copy source's, or none for a peer,
    which its leader's manifest judges later), and the Hub token's file when the Hub is the source."""
    stage = plan["stages"]["weights"]
    if not stage["applies"]:
        return _request()
    view = weights_view(plan, play_hosts, token)
    settings, source = stage["settings"], view["source"]
    if source == "none":
        return _request()
    check: dict[str, Any] = {"name": "staged", "path": settings["dir"]}
    if source == "hf":
        check["hub"] = view["hub"]
    elif source == "copy":
        check["source_path"] = settings["copy_source"]
    token_file = settings["token_file"]
    with_token = source == "hf" and bool(token)
    if with_token:  # the Hub is asked only once the token's file is in place
        check["after"] = ["token_dir", "token"]
    return _request(weights=[check],
                    directories=[{"name": "token_dir", "path": posixpath.dirname(token_file), "mode": "0755",
                                  "owner": "root", "group": "root"}] if with_token else [],
                    files=[_root_file("token", token_file, token, "0600")] if with_token else [])


def stage_wants(plan: dict[str, Any], stage: str, replica: int = 0, play_hosts: list[str] | None = None,
                secrets: dict[str, Any] | None = None, router_start: bool = True) -> dict[str, list[dict[str, Any]]]:
    """One stage's request (`replica`: the server instance)."""
    values = secrets or {}
    if stage == "install":
        return install_wants(plan)
    if stage == "weights":
        return weights_wants(plan, play_hosts or [], str(values.get("weights_hf_token") or ""))
    if stage == "server":
        return server_wants(plan, replica, values)
    if stage == "router":
        return router_wants(plan, router_start)
    raise ValueError(f"unknown stage {stage!r} (install, weights, server or router)")


#: the tags of site.yml's play of each stage (a run reads a stage only when its --tags run that play)
STAGE_TAGS = {"install": ("install", "serve", "router"), "weights": ("weights",), "server": ("serve",),
              "router": ("router",)}


def stages_in_run(run_tags: list[str], skip_tags: list[str]) -> list[str]:
    """The stages whose site.yml play this run's --tags and --skip-tags leave in, in site.yml's order."""
    run, skip = set(run_tags or ["all"]), set(skip_tags or [])
    return [stage for stage, tags in STAGE_TAGS.items()
            if ("all" in run or run & set(tags)) and not skip & set(tags)]


def host_wants(plan: dict[str, Any], play_hosts: list[str], secrets: dict[str, Any],
               router_start: bool = True, stages: list[str] | None = None) -> dict[str, Any]:
    """Every stage's request for one host, as site.yml runs them: install, then weights and the server's instances
    (servers) or the router (routers), of `stages` (all by default). Server instances are a list (one per replica)."""
    want = set(STAGE_TAGS if stages is None else stages)
    wants: dict[str, Any] = {"install": install_wants(plan)} if "install" in want else {}
    if plan["role"] == "server":
        if "weights" in want:
            wants["weights"] = weights_wants(plan, play_hosts, str(secrets.get("weights_hf_token") or ""))
        if "server" in want:
            wants["server"] = [server_wants(plan, i, secrets) for i in range(len(plan.get("replicas") or [plan]))]
    elif plan["role"] == "router" and "router" in want:
        wants["router"] = router_wants(plan, router_start)
    return wants


def key(request: dict[str, Any]) -> str:
    """A request's digest: two requests with the same key ask the node the same."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _parts(wants: dict[str, Any]) -> list[tuple[str, dict[str, list[dict[str, Any]]]]]:
    """(prefix, request) of every part: 'install', 'weights', 'server0', 'server1', ..., 'router'."""
    out = []
    for stage, request in wants.items():
        if isinstance(request, list):
            out += [(f"{stage}{i}", r) for i, r in enumerate(request)]
        else:
            out.append((stage, request))
    return out


def merge(wants: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """One node_state request for all parts: each item's name prefixed with its part ('server0/unit')."""
    merged = _request()
    for prefix, request in _parts(wants):
        for kind in KINDS:
            merged[kind] += [dict(item, name=f"{prefix}/{item['name']}",
                                  **({"after": [f"{prefix}/{n}" for n in item["after"]]} if "after" in item else {}))
                             for item in request.get(kind) or []]
    return merged


def public(state: dict[str, Any]) -> dict[str, Any]:
    """node_state's state without the digests of the files found (those of secret-bearing files among them): a role
    reads only which items differ, so the answer can be shown and registered without no_log."""
    return {name: ({k: v for k, v in found.items() if k != "sha256"} if isinstance(found, dict) else found)
            for name, found in state.items()}


def split(wants: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """node_state's answer to merge(wants) cut back into each part's own answer, shaped as if that part had asked
    alone: {stage: {key, differ, state}} (server: a list; key: the part's request's digest). An item it did not return
    stays out of `state`."""
    differ, state = list(answer.get("differ") or []), dict(answer.get("state") or {})
    out: dict[str, Any] = {}
    for stage, request in wants.items():
        requests = request if isinstance(request, list) else [request]
        answers = []
        for i, part in enumerate(requests):
            prefix = f"{stage}{i}" if isinstance(request, list) else stage
            names = [item["name"] for kind in KINDS for item in part.get(kind) or []]
            answers.append({"key": key(part),
                            "differ": [n for n in names if f"{prefix}/{n}" in differ],
                            "state": public({n: state[f"{prefix}/{n}"] for n in names if f"{prefix}/{n}" in state})})
        out[stage] = answers if isinstance(request, list) else answers[0]
    return out


def reusable(shared: Any, stage: str, replica: int, request: dict[str, Any], dirty: bool) -> dict[str, Any] | None:
    """The part of this run's shared answer (`shared`: what the node_probe of every stage returned) that answers
    `request`, or None: none when a stage before changed the host (`dirty`), the probe did not run, or it asked
    something else."""
    if dirty or not isinstance(shared, dict) or not isinstance(shared.get("stages"), dict):
        return None
    part = shared["stages"].get(stage)
    if isinstance(part, list):
        part = part[replica] if 0 <= replica < len(part) else None
    if not isinstance(part, dict) or part.get("key") != key(request):
        return None
    return {"differ": list(part.get("differ") or []), "state": dict(part.get("state") or {})}
