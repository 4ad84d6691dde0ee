# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.plan: the plan of every host of the site, made once on the controller.

Reads the sglang_* variables of the whole inventory (and the facts the plan uses, where gathered or
cached), calls site_plan.plan_site() and returns {plans: {host: plan}, errors: {host: [problem]}}.
Problems of the hosts in this run (and of the hosts they depend on) fail the task with one message for
all of them; problems of hosts outside the run (--limit) are warnings. It never connects to a host and
changes nothing, so it is check-mode safe.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils import atomic
from ansible_collections.metalserve.sglang.plugins.modules.plan import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils import gc_paused, warm
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import artifact, inventory_vars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan

# the strategy imports this module in the controller's main process: load the Jinja plugins there (plugin_utils/warm.py)
warm.load()


def _depends_on(plans: dict[str, Any], hosts: list[str], monitoring: dict[str, Any] | None = None) -> set[str]:
    """The hosts of this run and those their plans read: instance members, a router's workers, and the host the
    site-wide monitoring settings are read from while any of them is refused (every node's firewall allow-list and
    the monitoring hosts' files are made from them)."""
    out = set(hosts)
    for host in hosts:
        plan = plans.get(host) or {}
        out.update(plan.get("members") or [])
        out.update(plan.get("worker_hosts") or [])
    if monitoring and monitoring.get("settings_refused") and monitoring.get("settings_from"):
        out.add(str(monitoring["settings_from"]))
    return out


def applied(task_vars: dict[str, Any]) -> dict[str, frozenset[str]]:
    """The roles this play applies to its hosts ({role: hosts}): a role used on its own may run where site.yml never
    runs it, so the unread-variable check says its variables there as a warning. preflight is left out: a role
    includes its plan entry point, which adds it to the play's roles without applying it."""
    hosts = frozenset(str(h) for h in task_vars.get("ansible_play_hosts_all") or [])
    names = (str(r).rsplit(".", 1)[-1] for r in task_vars.get("ansible_play_role_names") or [])
    return {name: hosts for name in names if name != "preflight"}


def _plan(hostvars: dict[str, Any], groups: dict[str, list[str]], wanted: list[str], broken: dict[str, list[str]],
          variable_errors: dict[str, Any], origins: Any = None,
          roles: dict[str, frozenset[str]] | None = None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The site's plan, and every host's problems: the plan's, and the variables refused while they were read (a host
    planned without one is refused, whatever the plan made of it). `origins`: who set each variable (the inventory);
    `roles`: the roles the play applies itself (applied())."""
    try:
        site = site_plan.plan_site(hostvars, groups, origins, roles)
    except Exception as exc:  # noqa: BLE001 - with refused variables the plan may not get far; say both
        if not variable_errors and not broken:
            raise
        site = {"plans": {}, "errors": {}, "monitoring": {}}
        variable_errors.setdefault(wanted[0] if wanted else "site", {}).setdefault("plan", []).append(
            f"the plan could not run with these variables: {exc}")
    errors = dict(site["errors"])
    for host, problems in broken.items():
        errors[host] = list(problems) + [m for m in errors.get(host, []) if m not in problems]
    return site, errors


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        with gc_paused.paused():  # a whole site's objects in a worker that ends with this task (gc_paused.py)
            return self._run(tmp, task_vars)

    def _run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        broken: dict[str, list[str]] = {}
        names: dict[str, list[str]] = {}
        hostvars, groups = inventory_vars.site_inputs(task_vars, broken, names)
        inventory = sorted(hostvars)
        if not inventory:
            result.update(failed=True, changed=False, plans={}, errors={},
                          msg="the inventory has no hosts: check the -i path, and that Ansible could parse it "
                              "(ansible-inventory -i <path> --graph)")
            return result
        wanted = [str(h) for h in (args["hosts"] or task_vars.get("ansible_play_hosts_all") or inventory)]
        # problems check_variables found (site.yml hands them over so that one message carries every mistake)
        variable_errors = {str(h): v for h, v in (args["variable_errors"] or {}).items() if v}
        if args["check_variables"]:  # the hosts of this run against every role's specs, from the values read above
            variables.merge_errors(variable_errors,
                                   variables.site_errors({h: hostvars[h] for h in wanted if h in hostvars}, names))
        target = Path(os.path.abspath(os.path.expanduser(str(args["artifact"])))) if args["artifact"] else None
        make = bool(args["make_artifact"])  # --tags plan: this run makes the artifact, wherever it is
        limited = set(wanted) != set(inventory)
        if make and limited:
            result.update(failed=True, changed=False, plans={}, errors={},
                          msg=f"refused: --tags plan makes the site's plan artifact from every host of the inventory, and "
                              f"this run covers {len(set(wanted))} of its {len(inventory)} host(s); run it without --limit")
            return result
        partial = artifact.partial_run(inventory, wanted, bool(args["apply_artifact"]) and not make) if target else None
        if target and partial:
            return self._apply(result, target, partial, hostvars, groups, wanted, broken, variable_errors, task_vars)
        site, errors = _plan(hostvars, groups, wanted, broken, variable_errors,
                             inventory_vars.variable_origins(task_vars["hostvars"], inventory), applied(task_vars))
        plans = site["plans"]
        involved = _depends_on(plans, wanted, site.get("monitoring"))
        here = {h: m for h, m in errors.items() if h in involved}
        elsewhere = {h: m for h, m in errors.items() if h not in involved}
        warnings = site_plan.warning_lines(plans, involved)
        warnings += [f"{h} (not in this run): {m}" for h, ms in sorted(elsewhere.items()) for m in ms]
        warnings += list((site.get("monitoring") or {}).get("warnings") or [])
        if warnings:
            result["warnings"] = [variables.redact(w) for w in warnings]
        if (here or variable_errors) and args["fail_on_error"]:
            # the failure carries what an operator acts on; the plans would bury it (thousands of lines)
            text = site_plan.refusal_text(task_vars.get("inventory_hostname", "the first host"), variable_errors, here,
                                          len(wanted), len(involved))
            result.update(failed=True, changed=False, msg=text,
                          errors={h: [variables.redact(m) for m in ms] for h, ms in errors.items()})
            return result
        result.update(changed=False, plans=plans, monitoring=site.get("monitoring") or {},
                      errors={h: [variables.redact(m) for m in ms] for h, ms in errors.items()})
        if here:
            result["failed"] = False
            result["msg"] = variables.redact(site_plan.failure_text(here, len(involved)))
        else:
            result["msg"] = f"planned {len(plans)} host(s)"
        if target and not limited and not errors and not broken and not variable_errors:
            self._write_artifact(result, target, site, hostvars, groups)
        return result

    def _write_artifact(self, result: dict[str, Any], target: Path, site: dict[str, Any],
                        hostvars: dict[str, Any], groups: dict[str, list[str]]) -> None:
        """A run that planned the whole site writes its artifact (not in check mode; only when it differs)."""
        collection = artifact.this_collection()
        made_from = artifact.inputs(hostvars, groups, collection)
        if artifact.text_made_from(target, made_from["inputs_digest"]) is not None:  # the same inputs, the same plans
            result["artifact"] = {"path": str(target), "written": False, "inputs_digest": made_from["inputs_digest"]}
            return
        text = artifact.dump(artifact.make(site, hostvars, groups, collection, made_from))
        result["artifact"] = {"path": str(target), "written": not self._task.check_mode,
                              "inputs_digest": made_from["inputs_digest"]}
        if self._task.check_mode:
            return
        atomic.write(target, text.encode("utf-8"), 0o644)
        result["changed"] = True

    def _apply(self, result: dict[str, Any], target: Path, partial: str, hostvars: dict[str, Any],
               groups: dict[str, list[str]], wanted: list[str], broken: dict[str, list[str]],
               variable_errors: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """A run that covers part of the site: its hosts' part of the artifact, after checking each host's inputs."""
        inventory = ",".join(str(i) for i in task_vars.get("ansible_inventory_sources") or []) or "<inventory>"
        own = {h: m for h, m in broken.items() if h in wanted}
        if variable_errors or own:
            parts = ["refused before anything changed (reported once for the site; the hosts at fault are named below)"]
            if variable_errors:
                parts.append(variables.redact(variables.failure_text(variable_errors, len(wanted))))
            if own:
                parts.append(variables.redact(site_plan.failure_text(own, len(wanted))))
            result.update(failed=True, changed=False, plans={}, errors=own, msg="\n".join(parts))
            return result
        try:
            made = artifact.load(target)
        except ValueError as exc:
            made, problems = None, [str(exc)]
        else:
            problems = [] if made is None else artifact.verify(
                made, hostvars, groups, wanted, artifact.this_collection(), whole_inventory=partial.startswith("--limit"))
        if made is None or problems:
            text = artifact.refusal(str(target), made, partial, problems, inventory)
            result.update(failed=True, changed=False, plans={}, errors={}, msg=variables.redact(text))
            return result
        site = artifact.applied(made, hostvars)
        warnings = [f"{h}: {w}" for h in sorted(set(wanted)) for w in site["plans"].get(h, {}).get("warnings", [])]
        if warnings:
            result["warnings"] = [variables.redact(w) for w in warnings]
        result.update(changed=False, plans=site["plans"], monitoring=site["monitoring"], errors={},
                      artifact={"path": str(target), "applied": True, "inputs_digest": made["inputs_digest"]},
                      msg=f"applied the plan artifact {target} to {len(wanted)} host(s) ({partial}); each one's inputs "
                          f"are the ones it was planned from")
        return result
