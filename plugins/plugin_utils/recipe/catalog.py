# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load the recipe data shipped in data/ and merge a site's additions over it.

Nothing here knows about GLM-5.3: models, GPUs, SGLang releases and ports are all YAML. A model's
cookbook cells and images come in upstream revisions (data/models/<id>/cookbook/<short commit>/),
newest first; `with_revision` gives the model as one revision has it.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import schema
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

DATA_DIR = Path(__file__).resolve().parents[3] / "data"
CELL_KEYS = ("gpu", "quant", "strategy", "nodes")


@dataclass(frozen=True)
class Cell:
    gpu: str
    quant: str
    strategy: str
    nodes: int
    verified: bool
    env: dict[str, str]
    flags: tuple[tuple[str, Any], ...]
    origin: str = "cookbook"
    revision: str = ""  # the upstream cookbook revision (short commit) a cookbook cell comes from

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.gpu, self.quant, self.strategy, self.nodes)


@dataclass(frozen=True)
class Revision:
    """One upstream revision of a model's cookbook page: its images and cells."""
    id: str
    commit: str
    source: str
    images: dict[str, dict[str, Any]]
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Model:
    id: str
    display_name: str
    checkpoints: dict[str, dict[str, Any]]
    images: dict[str, dict[str, Any]]
    parsers: dict[str, str]
    speculative_presets: dict[str, dict[str, Any]]
    hopper_fp8_kv_flags: dict[str, Any]
    context_parallel: dict[str, Any]
    cells: tuple[Cell, ...]
    min_sglang: str = ""
    revisions: tuple[Revision, ...] = ()  # newest first; cells and images above are those of `revision`
    revision: str = ""
    default_quant: str = ""  # the precision sglang_quant means when unset
    moe: bool = True  # a mixture-of-experts model (MoE knobs apply); false for a dense one
    #: what a working server of the model answers, for playbooks/verify.yml (think_start, tool_call_start)
    verify: dict[str, Any] = field(default_factory=dict)
    #: the fields a request carries to turn reasoning (and tool calls) on: {reasoning: {...}, tool_call: {...}}
    requests: dict[str, Any] = field(default_factory=dict)
    #: the checkpoint's architecture, where the model names it: resolves `auto` parsers (data/sglang/parsers-*.yml)
    architecture: str = ""
    #: the folder the model was read from (data/models/<id>, or a site's folder named in sglang_recipes)
    home: str = ""
    #: what the model's data should change (a retired field it still uses): a warning on every host serving it
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalog:
    models: dict[str, Model]
    gpus: dict[str, dict[str, Any]]
    versions: dict[str, Any]
    ports: dict[str, int]
    router: dict[str, Any] = field(default_factory=dict)
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)


@functools.lru_cache(maxsize=256)
def cached_yaml(path: str) -> Any:
    """A data file parsed once per process (data/ does not change while a plan is made); treat it as read-only."""
    return read_yaml(Path(path))


def read_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml_read.safe_load(handle)


def _require(doc: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in doc:
        raise RecipeError(f"{where}: missing '{key}'")
    if not isinstance(doc[key], kind):
        raise RecipeError(f"{where}.{key}: expected a {kind.__name__}, got {type(doc[key]).__name__} {doc[key]!r}")
    return doc[key]


def parse_cell(doc: Any, where: str, origin: str, revision: str = "") -> Cell:
    if not isinstance(doc, dict):
        raise RecipeError(f"{where}: a cell must be a mapping, got {type(doc).__name__}")
    flags = doc.get("flags") or {}
    if not isinstance(flags, dict):
        raise RecipeError(f"{where}.flags: expected a mapping of --flag: value, got {type(flags).__name__}")
    for name in flags:
        if not str(name).startswith("--"):
            raise RecipeError(f"{where}.flags: {name!r} must be written with its leading '--'")
    env = doc.get("env") or {}
    if not isinstance(env, dict):
        raise RecipeError(f"{where}.env: expected a mapping NAME: value, got {type(env).__name__}")
    nodes = doc.get("nodes", 1)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise RecipeError(f"{where}.nodes: expected a positive integer, got {nodes!r}")
    return Cell(
        gpu=str(_require(doc, "gpu", str, where)),
        quant=str(_require(doc, "quant", str, where)),
        strategy=str(_require(doc, "strategy", str, where)),
        nodes=nodes,
        verified=bool(doc.get("verified", False)),
        env={str(k): str(v) for k, v in env.items()},
        flags=tuple((str(k), v) for k, v in flags.items()),
        origin=origin,
        revision=revision,
    )


def _merge_cells(base: tuple[Cell, ...], extra: list[Cell]) -> tuple[Cell, ...]:
    """Cells with the same key are replaced in place; new ones are appended."""
    by_key = {c.key: c for c in extra}
    merged = [by_key.pop(c.key, c) for c in base]
    return tuple(merged + [c for c in extra if c.key in by_key])


def parse_revision(doc: Any, where: str) -> Revision:
    """A cookbook/<revision>/cells.yml document (written by tools/import_cookbook_cells.py)."""
    if not isinstance(doc, dict):
        raise RecipeError(f"{where}: expected a mapping, got {type(doc).__name__}")
    rid = str(_require(doc, "revision", str, where))
    cells_doc = _require(doc, "cells", list, where)
    images = _require(doc, "images", dict, where)
    return Revision(id=rid, commit=str(_require(doc, "commit", str, where)), source=str(doc.get("source", "")),
                    images=copy.deepcopy(images),
                    cells=tuple(parse_cell(c, f"{where}.cells[{i}]", "cookbook", rid) for i, c in enumerate(cells_doc)))


def _merge_images(base: dict[str, dict[str, Any]], extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = copy.deepcopy(base)
    out.update(copy.deepcopy(extra))
    return out


MERGED = ("checkpoints", "parsers", "speculative_presets", "hopper_fp8_kv_flags", "context_parallel", "verify",
          "requests")


def _merged(doc: dict[str, Any], base: Model | None, name: str) -> dict[str, Any]:
    out = copy.deepcopy(getattr(base, name)) if base else {}
    out.update(copy.deepcopy(doc.get(name) or {}))
    return out


def _requests(doc: dict[str, Any], base: Model | None, where: str) -> dict[str, Any]:
    """requests, with verify.reasoning_toggle (the key alone; its value was always true) read as
    requests.reasoning: {chat_template_kwargs: {<key>: true}}; both, disagreeing, are refused."""
    out = _merged(doc, base, "requests")
    toggle = (doc.get("verify") or {}).get("reasoning_toggle")
    if toggle:
        implied = {"chat_template_kwargs": {str(toggle): True}}
        if "reasoning" in (doc.get("requests") or {}) and doc["requests"]["reasoning"] != implied:
            raise RecipeError(f"{where}: verify.reasoning_toggle {toggle!r} and requests.reasoning "
                              f"{doc['requests']['reasoning']!r} disagree; keep requests.reasoning only")
        out.setdefault("reasoning", implied)
    return out


def _retired_fields(doc: dict[str, Any], where: str) -> tuple[str, ...]:
    """A warning per retired field the model's data still uses (read as before for a minor release, then refused)."""
    toggle = (doc.get("verify") or {}).get("reasoning_toggle")
    if not toggle:
        return ()
    return (f"{where}: verify.reasoning_toggle is retired and will be refused in a later minor release; write "
            f"requests: {{reasoning: {{chat_template_kwargs: {{{toggle}: true}}}}}} instead (what it is read as now)",)


def _check_checkpoints(model: Model, default_quant: str, where: str) -> None:
    for quant, ckpt in model.checkpoints.items():
        if not isinstance(ckpt, dict) or "id" not in ckpt:
            raise RecipeError(f"{where}.checkpoints.{quant}: expected {{id: <hub id>, size_gb: <number>}}")
        for gpu, other in (ckpt.get("gpus") or {}).items():
            if not isinstance(other, dict) or "id" not in other:
                raise RecipeError(f"{where}.checkpoints.{quant}.gpus.{gpu}: expected {{id: <hub id>, size_gb: "
                                  "<number>}} (the checkpoint this GPU needs instead)")
    if default_quant and default_quant not in model.checkpoints:
        raise RecipeError(f"{where}.default_quant: {default_quant!r} is not one of its checkpoints "
                          f"({', '.join(model.checkpoints)})")


def _site_revisions(doc: dict[str, Any], base: Model, cells: list[Cell]) -> tuple[Revision, ...]:
    """A site's cells and images apply whichever cookbook revision a host selects."""
    return tuple(dataclasses.replace(r, cells=_merge_cells(r.cells, cells),
                                     images=_merge_images(r.images, doc.get("images") or {}))
                 for r in base.revisions)


def parse_model(doc: Any, where: str, origin: str, base: Model | None = None,
                revisions: tuple[Revision, ...] = (), home: str = "") -> Model:
    if not isinstance(doc, dict):
        raise RecipeError(f"{where}: a model document must be a mapping, got {type(doc).__name__}")
    model_id = str(_require(doc, "id", str, where))
    cells_doc = doc.get("cells") or []
    if not isinstance(cells_doc, list):
        raise RecipeError(f"{where}.cells: expected a list of cells, got {type(cells_doc).__name__}")
    cells = [parse_cell(c, f"{where}.cells[{i}]", origin) for i, c in enumerate(cells_doc)]
    if base is not None:
        revisions = _site_revisions(doc, base, cells)
    newest = revisions[0] if revisions and base is None else None
    for name in ("images", *MERGED):
        if name in doc and not isinstance(doc[name], dict):
            raise RecipeError(f"{where}.{name}: expected a mapping, got {type(doc[name]).__name__}")
    default_quant = doc.get("default_quant", base.default_quant if base else "")
    moe = doc.get("moe", base.moe if base else True)
    if not isinstance(default_quant, str) or not isinstance(moe, bool):
        raise RecipeError(f"{where}: default_quant must be a precision id and moe true or false, got "
                          f"{default_quant!r} and {moe!r}")
    merged = {name: _merged(doc, base, name) for name in MERGED}
    merged["requests"] = _requests(doc, base, where)
    model = Model(
        id=model_id, display_name=str(doc.get("display_name") or (base.display_name if base else model_id)),
        images=_merge_images(newest.images, doc.get("images") or {}) if newest else _merged(doc, base, "images"),
        cells=newest.cells if newest else _merge_cells(base.cells if base else (), cells),
        min_sglang=str(doc.get("min_sglang") or (base.min_sglang if base else "")), revisions=revisions,
        revision=newest.id if newest else (base.revision if base else ""), default_quant=default_quant, moe=moe,
        architecture=str(doc.get("architecture") or (base.architecture if base else "")),
        home=home or (base.home if base else ""), notes=_retired_fields(doc, where), **merged)
    _check_checkpoints(model, default_quant, where)
    return model


def checkpoint_of(model: Model, gpu: str, quant: str) -> dict[str, Any]:
    """The checkpoint a GPU runs for a precision: the precision's entry, with what `gpus.<gpu>` of it says instead
    (some pages name another checkpoint per GPU, e.g. an FP8 repackaging for Hopper)."""
    entry = dict(model.checkpoints[quant])
    entry.update((entry.pop("gpus", None) or {}).get(gpu) or {})
    return entry


def model_file(path: Path, where: str, listed: str = "") -> Any:
    """One file of a model folder, parsed; a missing file or one YAML cannot read is refused naming it."""
    if not path.is_file():
        raise schema.SchemaError(f"{where}: no such file" + (f" ({listed})" if listed else ""))
    try:
        return cached_yaml(str(path))
    except yaml.YAMLError as exc:
        raise schema.SchemaError(f"{where}: not YAML: {' '.join(str(exc).split())}") from None


def _revisions(folder: Path, where: str, doc: dict[str, Any]) -> list[Revision]:
    """Every revision model.yml lists, each file checked; every mistake of every revision in one error."""
    revisions, errors = [], []
    for rid in doc.get("cookbook_revisions") or []:
        rev_where = f"{where}/cookbook/{rid}"
        try:
            cells = schema.cells_doc(model_file(folder / "cookbook" / str(rid) / "cells.yml", f"{rev_where}/cells.yml",
                                                f"model.yml cookbook_revisions lists {rid}: import that revision "
                                                "again, or take it out of the list"), f"{rev_where}/cells.yml")
            bench = folder / "cookbook" / str(rid) / "benchmarks.yml"
            if bench.exists():
                schema.benchmarks_doc(model_file(bench, f"{rev_where}/benchmarks.yml"), f"{rev_where}/benchmarks.yml")
            revisions.append(parse_revision(cells, f"{rev_where}/cells.yml"))
        except RecipeError as exc:
            errors.append(str(exc))
    if errors:
        raise schema.SchemaError("; ".join(errors))
    return revisions


def read_model_folder(folder: Path, where: str, origin: str = "cookbook") -> Model:
    """A model folder (data/models/<id>/ or a site's): model.yml and cookbook/<revision>/{cells,benchmarks}.yml,
    each checked against the schema (recipe/schema.py) with the file and field named."""
    doc = dict(schema.model_doc(model_file(folder / "model.yml", f"{where}/model.yml"), f"{where}/model.yml"))
    revisions = _revisions(folder, where, doc)
    if not revisions:
        doc["cells"] = (cached_yaml(str(folder / "cells.yml")) if (folder / "cells.yml").exists() else {}).get(
            "cells", [])
    return parse_model(doc, where, origin, revisions=tuple(revisions), home=str(folder))


@functools.lru_cache(maxsize=None)
def _shipped(data_dir: str) -> Catalog:
    root = Path(data_dir)
    models: dict[str, Model] = {}
    for model_dir in sorted(p for p in (root / "models").iterdir() if p.is_dir()):
        model = read_model_folder(model_dir, f"data/models/{model_dir.name}")
        models[model.id] = model
    ports = read_yaml(root / "sglang" / "ports.yml")
    return Catalog(
        models=models,
        gpus=read_yaml(root / "gpus.yml"),
        versions=read_yaml(root / "sglang" / "versions.yml"),
        ports=ports,
        router=read_yaml(root / "sglang" / "router.yml"),
        variables=with_port_defaults(read_yaml(root / "variables.yml"), ports),
    )


def _site_folders(entry: str, where: str) -> list[Path]:
    """A sglang_recipes entry that names a folder: one model's (it holds model.yml) or a folder of such folders."""
    folder = Path(entry)
    if not folder.is_absolute():
        raise RecipeError(f"{where}: {entry!r} is a relative path; write the folder absolutely, e.g. "
                          f"\"{{{{ inventory_dir | dirname }}}}/{entry}\" (beside the inventory directory, not in it: "
                          "Ansible reads YAML files under an inventory directory as inventory)")
    if (folder / "model.yml").is_file():
        return [folder]
    found = sorted(p.parent for p in folder.glob("*/model.yml"))
    if not found:
        raise RecipeError(f"{where}: {entry} holds no model.yml and no <model>/model.yml (a folder "
                          "metalserve.sglang.import_page writes, or one shaped like data/models/<id>/)")
    return found


def _site_folder_models(entry: str, where: str) -> dict[str, Model]:
    """The models of a sglang_recipes folder; every mistake of every model folder in one error."""
    out, errors = {}, []
    for folder in _site_folders(entry, where):
        try:
            model = read_model_folder(folder, f"{where}: {folder}", "site")
            out[model.id] = model
        except RecipeError as exc:
            errors.append(str(exc))
    if errors:
        raise schema.SchemaError("; ".join(errors))
    return out


def _site_models(recipes: Any, models: dict[str, Model]) -> dict[str, Model]:
    if isinstance(recipes, (dict, str)):
        recipes = [recipes]
    if not isinstance(recipes, list):
        raise RecipeError(f"sglang_recipes: expected a list of model documents, got {type(recipes).__name__}")
    models = dict(models)
    for i, doc in enumerate(recipes):
        where = f"sglang_recipes[{i}]"
        if isinstance(doc, str):
            models.update(_site_folder_models(doc, where))
            continue
        base = models.get(doc.get("id")) if isinstance(doc, dict) else None
        model = parse_model(doc, where, "site", base)
        schema.check(doc, schema.MODEL, where)  # after parse_model: its messages are the more specific
        models[model.id] = model
    return models


def _site_gpus(gpus: dict[str, Any], gpu_platforms: Any) -> dict[str, Any]:
    if not isinstance(gpu_platforms, dict):
        raise RecipeError(
            f"sglang_gpu_platforms: expected a mapping of gpu id to platform, got {type(gpu_platforms).__name__}"
        )
    gpus = copy.deepcopy(gpus)
    for gpu_id, entry in gpu_platforms.items():
        if not isinstance(entry, dict):
            raise RecipeError(f"sglang_gpu_platforms.{gpu_id}: expected a mapping, got {type(entry).__name__}")
        merged_entry = dict(gpus.get(gpu_id, {}))
        merged_entry.update(entry)
        for key, kind in (("vendor", str), ("gpus_per_node", int), ("vram_gb", (int, float))):
            if not isinstance(merged_entry.get(key), kind):
                raise RecipeError(f"sglang_gpu_platforms.{gpu_id}: needs '{key}' (vendor, gpus_per_node, vram_gb)")
        gpus[gpu_id] = merged_entry
    return gpus


def gpu_platform(gpus: dict[str, Any], gpu: str) -> dict[str, Any]:
    """The platform table entry of a GPU id (data/gpus.yml plus sglang_gpu_platforms): the one refusal of a GPU the
    table does not know."""
    platform = gpus.get(gpu)
    if platform is None:
        raise RecipeError(f"sglang_gpu: {gpu!r} is not a GPU the recipes know; known: {', '.join(sorted(gpus))} "
                          "(add one with sglang_gpu_platforms)")
    return platform


def with_port_defaults(variables: dict[str, Any], ports: dict[str, Any]) -> dict[str, Any]:
    """data/variables.yml with `default_port: <name>` read from data/sglang/ports.yml, the ports' one home."""
    for section in variables.values():
        for spec in section.values() if isinstance(section, dict) else ():
            if isinstance(spec, dict) and "default_port" in spec:
                spec["default"] = ports[spec.pop("default_port")]
    return variables


def load_catalog(recipes: Any = None, gpu_platforms: Any = None, data_dir: Path = DATA_DIR) -> Catalog:
    """The shipped catalog with a site's sglang_recipes (model documents, or folders of them) and
    sglang_gpu_platforms merged over it."""
    shipped = _shipped(str(data_dir))
    if not recipes and not gpu_platforms:
        return shipped
    models = _site_models(recipes, shipped.models) if recipes else dict(shipped.models)
    gpus = _site_gpus(shipped.gpus, gpu_platforms) if gpu_platforms else copy.deepcopy(shipped.gpus)
    return dataclasses.replace(shipped, models=models, gpus=gpus)


def find_revision(model: Model, wanted: str) -> Revision:
    """A shipped revision by its short id, or by a commit prefix of 7 characters or more."""
    for rev in model.revisions:
        if wanted == rev.id or (len(wanted) >= 7 and rev.commit.startswith(wanted)):
            return rev
    shipped = ", ".join(f"{r.id}{' (newest)' if i == 0 else ''}" for i, r in enumerate(model.revisions))
    raise RecipeError(f"sglang_cookbook_revision: {wanted!r} is not a cookbook revision shipped for {model.id}; "
                      f"shipped: {shipped}")


def with_revision(model: Model, wanted: str | None) -> Model:
    """The model with the cells and images of one cookbook revision (unset: the newest, as loaded)."""
    if not wanted:
        return model
    if not model.revisions:
        raise RecipeError(f"sglang_cookbook_revision: {model.id} has no cookbook revisions (its cells come from "
                          f"sglang_recipes); unset sglang_cookbook_revision for it")
    rev = find_revision(model, str(wanted))
    return dataclasses.replace(model, cells=rev.cells, images=rev.images, revision=rev.id)


def benchmarks_path(model_id: str, revision: str | None = None, data_dir: Path = DATA_DIR,
                    model: Model | None = None) -> Path:
    """The published numbers of a model's cookbook revision (default: the newest): data/models/<id>/, or the site
    folder the model was read from (model.home)."""
    model = model or _shipped(str(data_dir)).models.get(model_id)
    model_dir = Path(model.home) if model and model.home else Path(data_dir) / "models" / model_id
    if model is None or not model.revisions:
        return model_dir / "benchmarks.yml"
    rev = find_revision(model, revision) if revision else model.revisions[0]
    return model_dir / "cookbook" / rev.id / "benchmarks.yml"


@functools.lru_cache(maxsize=None)
def flag_table(version: str, data_dir: str = str(DATA_DIR)) -> dict[str, dict[str, Any]] | None:
    """Every flag the given SGLang release accepts, or None when we ship no table for it."""
    doc = flag_table_doc(version, data_dir)
    return None if doc is None else doc["flags"]


@functools.lru_cache(maxsize=None)
def flag_table_doc(version: str, data_dir: str = str(DATA_DIR), key: str = "flag_tables") -> dict[str, Any] | None:
    """The whole flag table of an SGLang release (flags, defaults, prog), or None when we ship none.
    key="router_flag_tables": the same for an sglang-router release."""
    name = _shipped(data_dir).versions.get(key, {}).get(version)
    if not name:
        return None
    return read_yaml(Path(data_dir) / "sglang" / name)


def router_flag_table_doc(version: str, data_dir: str = str(DATA_DIR)) -> dict[str, Any] | None:
    return flag_table_doc(version, data_dir, "router_flag_tables")


@functools.lru_cache(maxsize=None)
def managed(data_dir: str = str(DATA_DIR)) -> dict[str, Any]:
    """Who owns which dest of a serve / router command line (data/sglang/managed.yml)."""
    return read_yaml(Path(data_dir) / "sglang" / "managed.yml")
