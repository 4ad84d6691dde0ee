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
import tempfile
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import preflight as checks
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import artifact, inventory_vars, placement
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.render import TEMPLATE_DIR, render_all, stale_dirs


def _write(path: Path, content: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    @staticmethod
    def _preflight(plans: dict[str, Any], task_vars: dict[str, Any]) -> dict[str, Any]:
        """Preflight on the hosts whose facts are cached (PLAN.md's Preflight column)."""
        from ansible_collections.metalserve.sglang.plugins.action.preflight import catalog_for, facts_of  # noqa: PLC0415
        hostvars = task_vars["hostvars"]
        reports, _errors = checks.site_reports(plans, facts_of(hostvars, plans), catalog_for(hostvars),
                                               checks.Limits(), only_with_facts=True)
        return {r.host: r.as_dict() for r in reports}

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        if not args.get("dest"):
            raise AnsibleActionFail("render_plan needs dest (a directory)")
        dest = Path(str(args["dest"])).expanduser()
        template_dir = Path(str(args.get("template_dir") or TEMPLATE_DIR))
        inventory = Path(str(task_vars.get("inventory_dir") or "inventory")).name
        site_monitoring: dict[str, Any] = {}
        if isinstance(args.get("plans"), dict):
            plans, preflight = to_plain(args["plans"]), to_plain(args.get("preflight") or {})
            site_monitoring = to_plain(args.get("monitoring") or {})
        else:
            # plan here: one step, instead of passing a site's plans through a task argument (slow at thousands
            # of hosts); the same plan_site() the plan action runs
            broken: dict[str, list[str]] = {}
            hostvars, groups = inventory_vars.site_inputs(task_vars, broken)
            if not hostvars:
                raise AnsibleActionFail("the inventory has no hosts: check the -i path (ansible-inventory --graph)")
            site = placement.plan_site(hostvars, groups)
            site["errors"] = {**site["errors"], **{h: m + site["errors"].get(h, []) for h, m in broken.items()}}
            warnings = [f"{h}: {w}" for h, p in sorted(site["plans"].items()) for w in p.get("warnings", [])]
            warnings += list((site.get("monitoring") or {}).get("warnings") or [])
            if warnings:
                result["warnings"] = [variables.redact(w) for w in warnings]
            if site["errors"]:
                result.update(failed=True, changed=False,
                              errors={h: [variables.redact(m) for m in ms] for h, ms in site["errors"].items()},
                              msg=variables.redact(placement.failure_text(site["errors"], len(hostvars))))
                return result
            plans, site_monitoring = site["plans"], site.get("monitoring") or {}
            preflight = self._preflight(plans, task_vars)
        files = render_all(plans, inventory, template_dir, preflight, site_monitoring)
        extra: dict[str, tuple[str, str]] = {}
        if not isinstance(args.get("plans"), dict):
            # the site's plan artifact (docs/awx.md): beside the files, or where `artifact` says; made from the same
            # inputs, the file there holds the same plans and is kept as it is
            target = Path(os.path.abspath(os.path.expanduser(str(args["artifact"])))) if args.get("artifact") else None
            path = target or (dest / "plan.json").absolute()
            collection = artifact.this_collection()
            made_from = artifact.inputs(hostvars, groups, collection)
            made = artifact.text_made_from(path, made_from["inputs_digest"]) or artifact.dump(
                artifact.make(site, hostvars, groups, collection, made_from))
            if path == (dest / "plan.json").absolute():
                files["plan.json"] = (made, "0644")
            else:
                extra[str(path)] = (made, "0644")
        changed, diffs = [], []
        for rel, (content, mode) in sorted(files.items()) + sorted(extra.items()):
            path = dest / rel  # an absolute `rel` (the artifact elsewhere) stays what it is
            old = path.read_text(encoding="utf-8") if path.is_file() else None
            old_mode = (path.stat().st_mode & 0o7777) if path.exists() else None
            if old == content and old_mode == int(mode, 8):
                continue
            changed.append(rel)
            if self._task.diff and rel != "plan.json" and rel not in extra:  # the artifact: thousands of lines
                diffs.append({"before_header": str(path), "after_header": str(path),
                              "before": old or "", "after": content})
            if not self._task.check_mode:
                _write(path, content, int(mode, 8))
        removed = [p.name for p in stale_dirs(dest, {rel.split("/", 1)[0] for rel in files if "/" in rel})]
        for name in removed:
            changed.append(f"{name}/ (host left the inventory: removed)")
            if not self._task.check_mode:
                shutil.rmtree(dest / name)
        result.update(changed=bool(changed), files=sorted(files) + sorted(extra), changed_files=changed,
                      removed=removed, dest=str(dest))
        if diffs:
            result["diff"] = diffs
        return result
