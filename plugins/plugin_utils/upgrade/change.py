# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an upgrade changes: the plan the nodes run against the plan of the target, both made by plan_site(). Pure.

The target is the inventory (an operator changes sglang_version, sglang_image, sglang_cookbook_revision, a
checkpoint revision or a knob in group_vars, as for site.yml). The running plan is made from the inputs the nodes
were last moved to: playbooks/upgrade.yml keeps them, secrets masked, in rendered/upgrade/state.json (`running`);
before its first upgrade, `upgrade_from` gives the variables as they were (e.g. {sglang_version: "0.5.13.post1"})
and the running inputs are the inventory's with those values. Each node's unit file tells which of the two a node
runs (a node half-way through an interrupted upgrade runs the target); a node that runs neither is refused.

diff() compares the files of both plans as render.yml writes them (rendered/<host>/files/..., the stage views and
the readable command) and says, per host, what changes and in which stage.
"""
from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import render, runtime

MASK = "<secret kept out of the upgrade state>"
#: the stages upgrade.yml moves; a target that changes another one (driver, rdma, runtime) belongs to site.yml
#: or nvidia_driver_upgrade.yml
MOVED_STAGES = ("serve", "install", "weights")
#: a change of these stages is shown but not applied (site.yml --tags monitoring applies it after the upgrade)
SHOWN_STAGES = ("monitoring",)
#: role settings the serving roles compare with the plan they apply (plan_drift): a target may not change them, or
#: rolling back would be refused by the very role that rolls back
ROLE_SETTING_PREFIXES = tuple(runtime.ROLE_PREFIXES)
#: the stage view of a readable file render.yml writes at the top of a host's folder
VIEW_STAGES = {"serve.args": "serve", "serve.sh": "serve", "docker-run.sh": "serve", "router.args": "serve",
               "router.sh": "serve", "install.yml": "install", "serve.yml": "serve", "weights.yml": "weights"}


class ChangeError(ValueError):
    """A target or a running state upgrade.yml cannot move between (the message names hosts and variables)."""


@functools.lru_cache(maxsize=1)
def secret_names() -> frozenset[str]:
    """Variables whose values never enter the upgrade state: data/variables.yml's `secret: true` ones and every
    role option its argument spec marks no_log."""
    return runtime.secret_variables()


def masked(hostvars: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The plan's inputs with every secret replaced by a marker (a plan reads a secret only as set or unset, so the
    masked inputs plan the same site)."""
    secrets = secret_names()
    return {h: {k: (MASK if k in secrets and v not in (None, "") else copy.deepcopy(v)) for k, v in hv.items()}
            for h, hv in hostvars.items()}


def check_overrides(overrides: dict[str, Any], variable: str = "upgrade_from") -> None:
    """The variables upgrade_from may give: the plan's own inputs, never a secret or a role setting."""
    bad = []
    for name in sorted(overrides):
        if name in secret_names():
            bad.append(f"{name} is a secret (the running plan needs only whether it is set)")
        elif name.startswith(ROLE_SETTING_PREFIXES):
            bad.append(f"{name} is a role setting (site.yml converges those; upgrade.yml moves releases, images, "
                       "cookbook revisions, checkpoints and knobs)")
    if bad:
        raise ChangeError(f"{variable}: " + "; ".join(bad))


def with_overrides(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]], overrides: dict[str, Any],
                   group_overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """The inventory's inputs with `upgrade_from` on every host and `upgrade_from_groups` on each group's hosts; a
    value of None means the variable was unset."""
    check_overrides(overrides)
    for group, values in (group_overrides or {}).items():
        if group not in groups:
            raise ChangeError(f"upgrade_from_groups: {group!r} is not an inventory group")
        check_overrides(values, f"upgrade_from_groups.{group}")
    out = copy.deepcopy(hostvars)
    layers = [(list(out), overrides)] + [(groups[g], v) for g, v in sorted((group_overrides or {}).items())]
    for hosts, values in layers:
        for host in hosts:
            for name, value in values.items():
                if value is None:
                    out[host].pop(name, None)
                else:
                    out[host][name] = value
    return out


def unit_sha1(plan: dict[str, Any]) -> tuple[str, str] | None:
    """(path, SHA-1) of the serving unit a plan writes (what ansible.builtin.find reports of the node's file)."""
    files = plan.get("files") or {}
    # a host of several servers (sglang_replicas) keys each replica's unit <instance>.unit: the first one tells
    unit = files.get("unit") or next((f for k, f in sorted(files.items()) if k.endswith(".unit")), None)
    if not unit or unit.get("content") is None:
        return None
    return unit["path"], hashlib.sha1(unit["content"].encode("utf-8")).hexdigest()  # noqa: S324 - find's checksum


def pick_running(running: dict[str, dict[str, Any]], target: dict[str, dict[str, Any]],
                 node_units: dict[str, dict[str, str]], recorded: dict[str, dict[str, Any]],
                 wanted: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Per host, the inputs its node runs: the recorded running inputs when its unit file is theirs, the target's when
    it is the target's (an upgrade interrupted after this host moved). Returns (inputs, {host: why refused})."""
    inputs: dict[str, dict[str, Any]] = {}
    refused: dict[str, str] = {}
    for host in sorted(set(recorded) | set(wanted)):
        r_plan, t_plan = running.get(host), target.get(host)
        if t_plan is None or t_plan.get("role") not in ("server", "router"):
            inputs[host] = recorded.get(host, wanted.get(host, {}))
            continue
        on_node = node_units.get(host) or {}
        r_unit, t_unit = unit_sha1(r_plan) if r_plan else None, unit_sha1(t_plan)
        if r_unit and on_node.get(r_unit[0]) == r_unit[1]:
            inputs[host] = recorded.get(host, wanted[host])
        elif t_unit and on_node.get(t_unit[0]) == t_unit[1]:
            inputs[host] = wanted[host]
        else:
            where = r_unit[0] if r_unit else t_unit[0] if t_unit else "its unit"
            found = "is missing" if where not in on_node else "holds another text"
            refused[host] = (f"{where} {found} on the node: it runs neither the running plan nor the target, so "
                             "this upgrade cannot say what to roll back to; converge it with site.yml, or give "
                             "upgrade_from the variables as the node runs them")
            inputs[host] = recorded.get(host, wanted.get(host, {}))
    return inputs, refused


def _env() -> Any:
    env = render.environment(render.TEMPLATE_DIR)
    env.filters["cell"] = render.table_cell
    return env


def stage_of(name: str) -> str:
    """The stage a rendered file belongs to: files/ entries by the plan's own key (serve.unit, install.marker...)."""
    return VIEW_STAGES.get(name, name.split(".", 1)[0].removesuffix(".yml"))


def host_texts(plan: dict[str, Any], site_monitoring: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    """{rendered name: (stage, text)} of a host, as render.yml writes them (files by their node path)."""
    out: dict[str, tuple[str, str]] = {}
    if plan.get("role") not in ("server", "router"):
        return out
    for key, entry in render.node_files(plan, site_monitoring).items():
        if entry.get("content") is not None:
            out["files" + entry["path"]] = (key.split(".", 1)[0], entry["content"])
    for name, (text, _mode) in render.host_files(plan, _env(), site_monitoring).items():
        if not name.startswith("files/"):
            out[name] = (stage_of(name), text)
    return out


def diff(running: dict[str, Any], target: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per host whose rendered files differ: [{name, stage, diff}] (a unified diff, running -> target)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for host in sorted(set(running["plans"]) | set(target["plans"])):
        before = host_texts(running["plans"].get(host) or {"role": "none"}, running.get("monitoring"))
        after = host_texts(target["plans"].get(host) or {"role": "none"}, target.get("monitoring"))
        changes = []
        for name in sorted(set(before) | set(after)):
            old, new = before.get(name, ("", None)), after.get(name, ("", None))
            if old[1] == new[1]:
                continue
            text = "".join(difflib.unified_diff((old[1] or "").splitlines(True), (new[1] or "").splitlines(True),
                                                f"running/{host}/{name}", f"target/{host}/{name}"))
            changes.append({"name": name, "stage": new[0] or old[0], "diff": text})
        if changes:
            out[host] = changes
    return out


def refuse_other_stages(changes: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Hosts whose change reaches a stage upgrade.yml does not move (driver, RDMA, container runtime)."""
    out = []
    for host, items in sorted(changes.items()):
        other = sorted({c["stage"] for c in items} - set(MOVED_STAGES) - set(SHOWN_STAGES))
        if other:
            out.append(f"{host}: the target changes its {', '.join(other)} stage; upgrade.yml moves the serving "
                       "stages only (release, image, checkpoint, command): run site.yml (or "
                       "nvidia_driver_upgrade.yml) for that stage first")
    return out


def refuse_role_settings(running: dict[str, Any], target: dict[str, Any]) -> list[str]:
    """Hosts whose role settings (plan.inputs: sglang_install_*, sglang_server_*, sglang_router_service_*) differ
    between the plans: the serving roles refuse to apply a plan whose settings differ from the inventory's, so the
    rollback could not run."""
    out = []
    for host, plan in sorted(target["plans"].items()):
        before = (running["plans"].get(host) or {}).get("inputs") or {}
        after = plan.get("inputs") or {}
        moved = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if moved and host in running["plans"]:
            out.append(f"{host}: the target changes role settings ({', '.join(moved)}); converge them with site.yml "
                       "first (the rollback re-applies the running plan with the inventory's settings)")
    return out


def weights_dirs(plan: dict[str, Any]) -> str | None:
    stage = (plan.get("stages") or {}).get("weights") or {}
    return (stage.get("settings") or {}).get("dir") if stage.get("applies") else None


def refuse_weights_in_place(running: dict[str, Any], target: dict[str, Any]) -> list[str]:
    """A new checkpoint revision staged into the folder the running server reads would overwrite it: the previous
    revision must stay until the upgrade is committed."""
    out = []
    for host, plan in sorted(target["plans"].items()):
        old = running["plans"].get(host) or {}
        new_w, old_w = (plan.get("stages") or {}).get("weights") or {}, (old.get("stages") or {}).get("weights") or {}
        if not new_w.get("applies") or not old_w.get("applies"):
            continue
        ns, os_ = new_w.get("settings") or {}, old_w.get("settings") or {}
        if (ns.get("repo"), ns.get("revision")) != (os_.get("repo"), os_.get("revision")) and ns.get("dir") == os_.get("dir"):
            out.append(f"{host}: the checkpoint moves from {os_.get('repo')}@{os_.get('revision')} to "
                       f"{ns.get('repo')}@{ns.get('revision')} in the same folder {ns.get('dir')}, which would overwrite "
                       "the weights the running server reads and leave nothing to roll back to; give the new revision "
                       f"a folder of its own (sglang_model_path, e.g. {ns.get('dir')}@{ns.get('revision')})")
    return out


def digest(value: Any) -> str:
    """A short stable digest of plain data (the target's identity in the state)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def target_digest(target: dict[str, Any], hosts: list[str]) -> str:
    """The identity of a target: the text of every file it gives the moving hosts."""
    return digest({h: {n: t for n, (_s, t) in host_texts(target["plans"][h], target.get("monitoring")).items()}
                   for h in sorted(hosts)})


def plan_both(plan_site: Callable[[dict[str, dict[str, Any]], dict[str, list[str]]], dict[str, Any]],
              inputs: dict[str, dict[str, Any]], groups: dict[str, list[str]], what: str) -> dict[str, Any]:
    """plan_site() over one set of inputs; its problems refuse the upgrade, named as the running or target plan's."""
    site = plan_site(copy.deepcopy(inputs), groups)
    if site["errors"]:
        lines = [f"  - {h}: {m}" for h, ms in sorted(site["errors"].items()) for m in ms]
        raise ChangeError(f"the {what} plan cannot be made:\n" + "\n".join(lines))
    return site
