# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin metalserve.sglang.import_page: one revision of an SGLang cookbook page as model folders, on the
controller (plugins/plugin_utils/cookbook holds the logic and its tests)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

from ansible_collections.metalserve.sglang.plugins.modules.import_page import ARGUMENT_SPEC
from ansible_collections.metalserve.sglang.plugins.plugin_utils.action_args import validated
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import importer, inputs
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError


def page_of(args: dict[str, Any]) -> importer.Page:
    """The page the arguments name: a folder with source.yml, a page in a docs checkout, or a page file."""
    if args["folder"]:
        return inputs.page_from_folder(Path(args["folder"]))
    if not args["page"]:
        raise ValueError("page: name the page file (or, with docs, the page), or give folder")
    given = {"commit": args["commit"] or "", "revision": args["revision"] or "",
             "architecture": args["architecture"] or "", "benchmarks_commit": args["benchmarks_commit"] or ""}
    if args["docs"]:
        checkout = inputs.checkout_root(Path(args["docs"]))
        return inputs.page_from_file(inputs.find_page(checkout, args["page"]), checkout=checkout, **given)
    return inputs.page_from_file(Path(args["page"]), org=args["org"] or "", **given)


def run_import(args: dict[str, Any], write: bool) -> list[dict[str, Any]]:
    page = page_of(args)
    if args["architecture"] and not page.architecture:
        page = importer.Page(**{**page.__dict__, "architecture": args["architecture"]})
    context = inputs.context(args["gpu_platforms"] or None)
    results = importer.plan_import(page, context, args["variant"])
    if args["model_id"]:
        if len(results) != 1:
            raise ValueError(f"model_id: the {page.name} page has {len(results)} variants; give variant too")
        results[0].model_id = args["model_id"]
        results[0].model_doc["id"] = args["model_id"]
    reports = []
    for result in results:
        existing = Path(args["dest"]) / result.model_id / "model.yml"
        if existing.is_file():
            importer.against_existing(result, catalog.read_yaml(existing) or {}, context.pinned)
        files = importer.write_import(result, Path(args["dest"])) if write else \
            sorted(f"{result.model_id}/{name}" for name in result.files)
        reports.append({**result.report, "model": result.model_id, "files": files})
    return reports


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars or {})
        args = validated(self, ARGUMENT_SPEC)
        try:
            reports = run_import(args, write=not self._task.check_mode)
        except (ValueError, OSError, RecipeError) as exc:
            result.update(failed=True, changed=False, models=[], msg=str(exc))
            return result
        warnings = [f"{r['model']}: {item['cell']} left out: {item['reason']}" for r in reports for item in r["left_out"]]
        warnings += [f"{r['model']}: {kind} parser auto: {why}; verify.yml cannot ask for it until model.yml names "
                     "`architecture` or `requests`" for r in reports for kind, why in r["unresolved"].items()]
        warnings += [f"{r['model']}: {note}" for r in reports for note in r.get("notes") or []]
        misplaced = inputs.inside_inventory(Path(args["dest"]), (task_vars or {}).get("ansible_inventory_sources"))
        if misplaced:
            warnings.append(misplaced)
        result.update(changed=any(r["files"] for r in reports) and not self._task.check_mode, models=reports,
                      msg="; ".join(f"{r['model']} {r['revision']}: {r['cells']} cells, {len(r['left_out'])} left out"
                                    for r in reports))
        if warnings:
            result["warnings"] = warnings
        return result
