# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import one revision of an SGLang cookbook page: every variant of it (or the one asked for) becomes one model
folder, `<id>/model.yml` and `<id>/cookbook/<revision>/{cells.yml,benchmarks.yml}`, the layout data/models/ and a
site's own folder (read through sglang_recipes) share.

Inputs: the page's `<page>.jsx` text, its `<page>-benchmarks.jsx` text (optional: a page without published numbers
gets an empty benchmarks.yml) and where they come from (`Page`: repository, path, commits, revision). Every cell is
either imported or reported with the reason it is left out (a GPU the collection does not know, with how to add it;
a value the page leaves to the operator; a command the release's parser refuses). Pure: plan_import() returns the
files' text and the report; write_import() is the one function that touches the disk.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import benchmarks as bench
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import convert, page as pg, writer
from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.jsread import literal, read_js_export
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import parsers as parser_facts
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import version_from_image

GENERATOR = "metalserve.sglang.import_page"


@dataclass(frozen=True)
class Page:
    """One revision of one page: its two files' text and where they come from (a source.yml holds the same)."""
    name: str  # the page's file stem, e.g. minimax-m3
    config_text: str
    benchmarks_text: str | None
    revision: str
    repository: str = "sgl-project/sglang"
    path: str = "docs/src/snippets/configs/"
    config_commit: str = ""
    benchmarks_commit: str = ""
    read: str = ""
    architecture: str = ""
    origin: str = ""  # how the header names the input's folder, e.g. tests/fixtures/upstream/glm-5.3/8e04be51/


@dataclass(frozen=True)
class Context:
    """What the import reads from the collection (and the site): GPUs, aliases, releases, parser tables."""
    gpus: set[str]
    aliases: dict[str, str]
    pinned: str
    flag_table: Callable[[str], dict[str, Any] | None]  # release -> flag table doc (None: no table shipped)
    generator: str = GENERATOR
    renames: tuple[dict[str, Any], ...] = ()  # data/sglang/versions.yml renames


@dataclass
class ModelImport:
    model_id: str
    variant: str
    files: dict[str, str]  # path relative to the model folder -> text
    model_doc: dict[str, Any]
    report: dict[str, Any] = field(default_factory=dict)


def model_id_of(page: str, variant: str, variants: list[str]) -> str:
    """<page> for a page's only or default variant, <page>-<variant> for the others."""
    if variant == "default" or len(variants) == 1:
        return page
    return f"{page}-{re.sub(r'[^a-z0-9.]+', '-', variant.lower()).strip('-')}"


def images_of(config: dict[str, Any], gpus: set[str]) -> dict[str, dict[str, str]]:
    """{gpu: {ref, sglang_version when the tag names the release}} from dockerImages, for the imported GPUs."""
    out: dict[str, dict[str, str]] = {}
    for key, ref in literal(config.get("dockerImages") or {}, "dockerImages").items():
        if "|" in str(key):
            raise ValueError(f"dockerImages.{key}: images per precision or variant are not imported yet")
        if key in gpus:
            named = version_from_image(str(ref))
            out[str(key)] = {"ref": str(ref), **({"sglang_version": named} if named else {})}
    return out


def unknown_gpu(gpu: str) -> str:
    return (f"GPU {gpu} is not in data/gpus.yml nor the site's sglang_gpu_platforms: describe it there (vendor, "
            "gpus_per_node, vram_gb; docs/recipes.md) and import the page again")


def _release(config: dict[str, Any], gpu: str, ctx: Context) -> str:
    ref = (literal(config.get("dockerImages") or {}, "dockerImages")).get(gpu)
    return (version_from_image(str(ref)) if ref else None) or ctx.pinned


def convert_cells(config: dict[str, Any], variant: str, ctx: Context) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """(the imported cells, [{cell, gpu, reason}] of those left out), in page order."""
    cells, left_out = [], []
    for cell in pg.page_cells(config, variant):
        try:
            if cell.gpu not in ctx.gpus:
                raise convert.LeftOut(unknown_gpu(cell.gpu))
            ours = convert.convert(cell, pg.checkpoint_of(config, variant, cell.gpu, cell.quant), ctx.aliases)
            release = _release(config, cell.gpu, ctx)
            convert.release_reads(convert.argv_of(ours["flags"], "x/y"), ctx.flag_table(release), release,
                                  list(ctx.renames))
            cells.append(ours)
        except convert.LeftOut as exc:
            left_out.append({"cell": cell.label, "gpu": cell.gpu, "reason": str(exc)})
    return cells, left_out


def page_facts(page: Page, config: dict[str, Any], variant: str) -> dict[str, Any]:
    """What the file headers say: the page's name, revision, files and commits."""
    label = str(config.get("modelName") or page.name)
    name = label if variant == "default" else f"{label} (variant {variant})"
    return {"name": name, "revision": page.revision, "repository": page.repository, "path": page.path,
            "config_file": f"{page.name}.jsx", "benchmarks_file": f"{page.name}-benchmarks.jsx",
            "config_commit": page.config_commit, "benchmarks_commit": page.benchmarks_commit or page.config_commit,
            "read": page.read or "the page files given to the importer", "origin": page.origin, "generator": ""}


def plan_variant(page: Page, config: dict[str, Any], published: list[dict[str, Any]], variant: str,
                 ctx: Context) -> ModelImport:
    cells, left_out = convert_cells(config, variant, ctx)
    base, per_gpu = pg.model_names(config, variant)
    imported = {c["gpu"] for c in cells}
    facts = {**page_facts(page, config, variant), "generator": ctx.generator}
    data = {"cells": cells, "left_out": left_out, "checkpoints": base, "images": images_of(config, imported),
            "checkpoints_by_gpu": {g: refs for g, refs in per_gpu.items() if g in imported}}
    keys = {(c["gpu"], c["quant"], c["strategy"], c["nodes"]) for c in cells}
    numbers = bench.published(config, published, variant, keys)
    variants = pg.variants(config)
    model_id = model_id_of(page.name, variant, variants)
    rev = page.revision
    files = {f"cookbook/{rev}/cells.yml": writer.cells_text(facts, data),
             f"cookbook/{rev}/benchmarks.yml": writer.benchmarks_text(facts, numbers)}
    doc = model_doc(page, config, variant, model_id, cells, ctx)
    auto = parser_facts.resolve(doc.get("parsers") or {}, doc.get("architecture", ""), ctx.pinned, model_id)
    report = {"model": model_id, "variant": variant, "revision": rev, "cells": len(cells), "left_out": left_out,
              "published": len(numbers["cells"]), "parsers": doc.get("parsers") or {},
              "parsers_resolved": {k: auto[k] for k in ("reasoning", "tool_call")}, "unresolved": auto["unresolved"]}
    return ModelImport(model_id, variant, files, doc, report)


def _parsers(config: dict[str, Any], cells: list[dict[str, Any]]) -> dict[str, str]:
    """The page's parser card; without one, the parsers every imported cell names alike."""
    card = pg.parser_card(config)
    if card:
        return card
    out = {}
    for kind, flag in (("reasoning", "--reasoning-parser"), ("tool_call", "--tool-call-parser")):
        named = {c["flags"].get(flag) for c in cells}
        if len(named) == 1 and None not in named:
            out[kind] = str(named.pop())
    return out


def _presets(config: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, flags in pg.speculative_card(config).items():
        if any("{{" in f for f in flags):
            continue  # a preset the page fills per cell (its draft is the checkpoint itself)
        try:
            parsed = {aliases.get(f.split(" ", 1)[0], f.split(" ", 1)[0]):
                      convert.scalar(f.split(" ", 1)[1], name) if " " in f else True for f in flags}
        except convert.LeftOut:
            continue
        out[name] = {"flags": parsed}
    return out


def model_doc(page: Page, config: dict[str, Any], variant: str, model_id: str, cells: list[dict[str, Any]],
              ctx: Context) -> dict[str, Any]:
    """model.yml of a model the page introduces: id, names, where it comes from, checkpoints, parsers, presets."""
    base, per_gpu = pg.model_names(config, variant)
    checkpoints: dict[str, Any] = {q: {"id": ref} for q, ref in base.items()}
    for gpu, refs in per_gpu.items():
        for quant, ref in refs.items():
            checkpoints.setdefault(quant, {"id": ref}).setdefault("gpus", {})[gpu] = {"id": ref}
    label = str(config.get("modelName") or page.name)
    several = len(pg.variants(config)) > 1
    doc: dict[str, Any] = {
        "id": model_id,
        "display_name": f"{label} {pg.variant_label(config, variant)}" if several else label,
        "source": f"https://github.com/{page.repository}/blob/{page.config_commit}/{page.path}{page.name}.jsx",
        "cookbook": {"page": page.name, "variant": variant}, "cookbook_revisions": [page.revision]}
    if cells:
        doc["default_quant"] = cells[0]["quant"]
    doc["checkpoints"] = checkpoints
    parsers = _parsers(config, cells)
    if parsers:
        doc["parsers"] = parsers
    if page.architecture:
        doc["architecture"] = page.architecture
    presets = _presets(config, ctx.aliases)
    if presets:
        doc["speculative_presets"] = presets
    return doc


def plan_import(page: Page, ctx: Context, variant: str | None = None) -> list[ModelImport]:
    """The files and report of every variant of the page (or the one asked for)."""
    config = read_js_export(page.config_text, "config")
    published = read_js_export(page.benchmarks_text, "benchmarks") if page.benchmarks_text else []
    variants = pg.variants(config)
    if variant is not None and variant not in variants:
        raise ValueError(f"variant: {variant!r} is not a variant of the {page.name} page; it has {', '.join(variants)}")
    return [plan_variant(page, config, published, v, ctx) for v in ([variant] if variant else variants)]


def against_existing(result: ModelImport, existing: dict[str, Any], pinned: str) -> None:
    """The report of an import into a folder whose model.yml stays as it is (the importer never rewrites one): parsers
    resolved from that file's parsers, architecture and requests, which the plan reads, and a note where the import
    was given an architecture the file does not name."""
    doc = {k: existing.get(k) for k in ("parsers", "architecture", "requests")}
    auto = parser_facts.resolve(doc.get("parsers") or {}, str(doc.get("architecture") or ""), pinned, result.model_id)
    result.report.update(parsers=doc.get("parsers") or {},
                         parsers_resolved={k: auto[k] for k in ("reasoning", "tool_call")},
                         unresolved={k: why for k, why in auto["unresolved"].items()
                                     if k not in (doc.get("requests") or {})})
    wanted = result.model_doc.get("architecture")
    if wanted and existing.get("architecture") != wanted:
        result.report.setdefault("notes", []).append(
            f"model.yml exists and is not rewritten: it names architecture {existing.get('architecture') or 'none'}, "
            f"not {wanted}; set `architecture: {wanted}` in it")


MODEL_NOTE = ("Imported by {generator} from the SGLang cookbook's {page} page (variant {variant}) at revision "
              "{revision}. The cells, images and published numbers of each revision are in cookbook/<revision>/; "
              "edit this file freely (checkpoint sizes, moe, request shapes: docs/recipes.md), the importer only "
              "adds new revisions to cookbook_revisions.")


def _add_revision(text: str, revision: str) -> str | None:
    """model.yml with the revision first in cookbook_revisions (newest first); None when the line is not there."""
    line = re.search(r"^cookbook_revisions: \[(.*)\]$", text, re.M)
    if not line:
        return None
    listed = [r.strip().strip("\"'") for r in line.group(1).split(",") if r.strip()]
    if revision in listed:
        return text
    new = "cookbook_revisions: [" + ", ".join(f'"{r}"' for r in [revision] + listed) + "]"
    return text[:line.start()] + new + text[line.end():]


def write_import(result: ModelImport, dest: Path, generator: str = GENERATOR) -> list[str]:
    """Write one model's import under dest/<id>/; the files changed (relative to dest)."""
    folder = dest / result.model_id
    changed = []
    model_yml = folder / "model.yml"
    if model_yml.exists():
        text = model_yml.read_text(encoding="utf-8")
        new = _add_revision(text, result.report["revision"])
        if new is None:
            raise ValueError(f"{model_yml}: no `cookbook_revisions: [...]` line; add \"{result.report['revision']}\" "
                             "to it by hand")
        files = dict(result.files, **({"model.yml": new} if new != text else {}))
    else:
        note = MODEL_NOTE.format(generator=generator, page=result.model_doc["cookbook"]["page"],
                                 variant=result.variant, revision=result.report["revision"])
        files = dict(result.files, **{"model.yml": writer.model_text(result.model_doc, [note])})
    for name, text in files.items():
        path = folder / name
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(f"{result.model_id}/{name}")
    return changed
