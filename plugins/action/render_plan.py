# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.render_plan: write rendered/ on the controller in one step.

Files are rewritten only when their content or mode differs (changed reports which), atomically; the
folders of hosts that left the inventory are removed (only folders that hold nothing but our files);
check mode writes nothing and reports what would change; --diff shows the changes.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils import atomic, gc_paused
from ansible_collections.metalserve.sglang.plugins.modules.render_plan import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import preflight as checks
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import artifact, inventory_vars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.render import TEMPLATE_DIR, render_all
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.render import stale_dirs, stale_files


class _Clock:
    """Wall seconds per step of one render (the result's `timings`: where a big site's render spends its time)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self._last, 3)
        self._last = now


def inside_inventory(dest: Path, sources: list[Any]) -> str:
    """The inventory directory `dest` lies in (Ansible reads every file of an inventory directory), or ""."""
    where = Path(os.path.abspath(os.path.expanduser(str(dest))))
    for source in sources:
        folder = Path(os.path.abspath(os.path.expanduser(str(source))))
        if folder.is_dir() and (where == folder or folder in where.parents):
            return str(folder)
    return ""


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    @staticmethod
    def _preflight(plans: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """Preflight on the hosts whose facts are cached (PLAN.md's Preflight column)."""
        hostvars = task_vars["hostvars"]
        reports, _errors = checks.site_reports(plans, checks.facts_of(hostvars, plans), checks.catalog_for(hostvars),
                                               checks.Limits(), only_with_facts=True)
        return {r.host: r.as_dict() for r in reports}

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        with gc_paused.paused():  # a whole site's objects in a worker that ends with this task (gc_paused.py)
            return self._run(tmp, task_vars)

    def _run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = validated(self, ARGUMENT_SPEC)
        dest = destination(args, task_vars)
        clock = _Clock()
        # plan here: one step, instead of passing a site's plans through a task argument (slow at thousands
        # of hosts); the same plan_site() the plan action runs
        site, hostvars, groups, variable_errors = plan(args, task_vars, clock)
        warnings = site_plan.warning_lines(site["plans"]) + list((site.get("monitoring") or {}).get("warnings") or [])
        if warnings:
            result["warnings"] = [variables.redact(w) for w in warnings]
        if site["errors"] or variable_errors:
            result.update(failed=True, changed=False,
                          errors={h: [variables.redact(m) for m in ms] for h, ms in site["errors"].items()},
                          msg=site_plan.refusal_text("the controller; rendered/ was left as it was",
                                                     variable_errors, site["errors"], len(hostvars), len(hostvars)))
            return result
        plans = site["plans"]
        # PLAN.md's Preflight column needs cached facts; a site without any (a first render) skips reading them
        preflight = self._preflight(plans, task_vars) if any(
            (hostvars.get(h) or {}).get("ansible_facts") for h in plans) else {}
        clock.lap("preflight")
        files = render_all(plans, Path(str(task_vars.get("inventory_dir") or "inventory")).name,
                           Path(args["template_dir"] or TEMPLATE_DIR), preflight, site.get("monitoring") or {})
        clock.lap("render")
        extra = with_artifact(files, args, dest, site, hostvars, groups)
        clock.lap("artifact")
        existed = dest.is_dir()  # a first render has nothing stale to look for
        changed, diffs = self._write(dest, sorted(files.items()) + sorted(extra.items()), set(extra))
        clock.lap("write")
        removed = self._remove_stale(dest, set(files), changed) if existed else []
        clock.lap("stale")
        result.update(changed=bool(changed), files=sorted(files) + sorted(extra), changed_files=changed, removed=removed,
                      dest=str(dest), timings=clock.laps)
        if diffs:
            result["diff"] = diffs
        return result

    def _write(self, dest: Path, files: list[tuple[str, tuple[str, str]]],
               elsewhere: set[str]) -> tuple[list[str], list[dict[str, str]]]:
        """Every file whose content or mode differs, atomically (not in check mode): (changed, diffs)."""
        changed, diffs = [], []
        folders: set[Path] = set()  # made or seen once each (a big site's first render makes tens of thousands)
        for rel, (content, mode) in files:
            path = dest / rel  # an absolute `rel` (the artifact elsewhere) stays what it is
            data = content.encode("utf-8")
            try:
                seen = os.stat(path)
            except FileNotFoundError:
                seen = None
            # one stat per file; its text is read only when size and mode already match (a second render of a big
            # site reads what it must compare and nothing else)
            if seen is not None and (seen.st_mode & 0o7777) == int(mode, 8) and seen.st_size == len(data) \
                    and path.read_bytes() == data:
                continue
            old = path.read_text(encoding="utf-8", errors="replace") if seen is not None and self._task.diff else None
            changed.append(rel)
            if self._task.diff and rel != "plan.json" and rel not in elsewhere:  # the artifact: thousands of lines
                diffs.append({"before_header": str(path), "after_header": str(path),
                              "before": old or "", "after": content})
            if not self._task.check_mode:
                atomic.write(path, data, int(mode, 8), folders)
        return changed, diffs

    def _remove_stale(self, dest: Path, files: set[str], changed: list[str]) -> list[str]:
        """Files no longer rendered, then the folders of hosts that left the inventory (not in check mode)."""
        stale = stale_files(dest, files)
        for path in stale:
            changed.append(f"{path.relative_to(dest).as_posix()} (no longer rendered: removed)")
            if not self._task.check_mode:
                path.unlink()
        if stale and not self._task.check_mode:
            for folder in sorted((p for p in dest.glob("*/files/**") if p.is_dir()), key=lambda p: -len(p.parts)):
                if not any(folder.iterdir()):
                    folder.rmdir()
        removed = [p.name for p in stale_dirs(dest, {rel.split("/", 1)[0] for rel in files if "/" in rel})]
        for name in removed:
            changed.append(f"{name}/ (host left the inventory: removed)")
            if not self._task.check_mode:
                shutil.rmtree(dest / name)
        return removed


def destination(args: dict[str, Any], task_vars: dict[str, Any]) -> Path:
    """rendered/ as `dest` names it, refused inside the inventory."""
    dest = Path(args["dest"])
    inside = inside_inventory(dest, task_vars.get("ansible_inventory_sources") or [])
    if inside:
        raise AnsibleActionFail(f"dest {dest} is inside the inventory {inside}: Ansible would read rendered/ back "
                                "as inventory on the next run (and run its executable files, docker-run.sh, as "
                                "inventory scripts); give sglang_render_dir a folder outside it")
    return dest


def plan(args: dict[str, Any], task_vars: dict[str, Any],
         clock: _Clock) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]], dict[str, Any]]:
    """The site's plan from the inventory, and the variables refused: (site, hostvars, groups, variable errors); a
    host refused while its variables were read keeps that refusal among its errors."""
    broken: dict[str, list[str]] = {}
    names: dict[str, list[str]] = {}
    hostvars, groups = inventory_vars.site_inputs(task_vars, broken, names)
    clock.lap("inputs")
    origins = inventory_vars.variable_origins(task_vars["hostvars"], sorted(hostvars))  # who set each variable
    clock.lap("origins")
    if not hostvars:
        raise AnsibleActionFail("the inventory has no hosts: check the -i path (ansible-inventory --graph)")
    # what check_variables refused, given, and (check_variables: true) every host's variables against every
    # role's argument specs, judged here from the values the plan read (check_variables' verdicts, without
    # templating every host's variables twice): one message with the plan's
    variable_errors = {str(h): v for h, v in (args["variable_errors"] or {}).items() if v}
    if args["check_variables"]:
        variables.merge_errors(variable_errors, variables.site_errors(hostvars, names))
        clock.lap("variables")
    try:
        site = site_plan.plan_site(hostvars, groups, origins)
        clock.lap("plan")
    except Exception as exc:  # noqa: BLE001 - with refused variables the plan may not get far; say both
        if not variable_errors and not broken:
            raise
        site = {"plans": {}, "errors": {}, "monitoring": {}}
        variable_errors.setdefault(sorted(hostvars)[0], {}).setdefault("plan", []).append(
            f"the plan could not run with these variables: {exc}")
    site["errors"] = {**site["errors"], **{h: m + site["errors"].get(h, []) for h, m in broken.items()}}
    return site, hostvars, groups, variable_errors


def with_artifact(files: dict[str, tuple[str, str]], args: dict[str, Any], dest: Path, site: dict[str, Any],
                  hostvars: dict[str, Any], groups: dict[str, list[str]]) -> dict[str, tuple[str, str]]:
    """The site's plan artifact (docs/awx.md): rendered/plan.json among `files`, or where `artifact` says (returned
    apart); made from the same inputs, the file there holds the same plans and is kept as it is."""
    target = Path(os.path.abspath(os.path.expanduser(str(args["artifact"])))) if args["artifact"] else None
    path = target or (dest / "plan.json").absolute()
    collection = artifact.this_collection()
    made_from = artifact.inputs(hostvars, groups, collection)
    made = artifact.text_made_from(path, made_from["inputs_digest"]) or artifact.dump(
        artifact.make(site, hostvars, groups, collection, made_from))
    if path == (dest / "plan.json").absolute():
        files["plan.json"] = (made, "0644")
        return {}
    return {str(path): (made, "0644")}
