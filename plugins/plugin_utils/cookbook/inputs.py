# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where an import's inputs come from: a folder with the page's two files and our source.yml note, a page file
given alone (with its revision and commit), or a checkout of SGLang's documentation (the page found under
sglang/docs/src/snippets/configs/, its commit read from git). Also what the import reads of the collection (GPUs, flag
tables, aliases). Controller only: reads files, runs `git log` on a checkout."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.importer import GENERATOR, Context, Page
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import catalog, schema

CONFIGS = "docs/src/snippets/configs"


def context(gpu_platforms: Any = None, generator: str = GENERATOR) -> Context:
    """The GPUs data/gpus.yml and the site's sglang_gpu_platforms describe, the aliases and the flag tables."""
    cat = catalog.load_catalog(gpu_platforms=gpu_platforms)
    return Context(gpus=set(cat.gpus), aliases=dict(cat.versions["aliases"]), pinned=str(cat.versions["pinned"]),
                   flag_table=catalog.flag_table_doc, generator=generator,
                   renames=tuple(cat.versions.get("renames") or ()))


def page_from_folder(folder: Path, origin: str = "") -> Page:
    """A folder holding <page>.jsx, <page>-benchmarks.jsx and source.yml (tests/fixtures/upstream/<page>/<rev>/)."""
    where = str(folder / "source.yml")
    source = schema.source_doc(catalog.read_yaml(folder / "source.yml"), where)
    if source["revision"] != folder.name:
        raise schema.SchemaError(f"{where}: revision {source['revision']!r} must be the folder's name {folder.name!r}")
    bench_file = folder / source["benchmarks_file"]
    return Page(name=Path(source["config_file"]).stem,
                config_text=(folder / source["config_file"]).read_text(encoding="utf-8"),
                benchmarks_text=bench_file.read_text(encoding="utf-8") if bench_file.exists() else None,
                revision=source["revision"], repository=source["repository"], path=source["path"],
                config_commit=source["config_commit"], benchmarks_commit=source["benchmarks_commit"],
                read=source.get("read", ""), architecture=source.get("architecture", ""), origin=origin)


def inside_inventory(dest: Path, sources: Any) -> str:
    """Why dest is no place for model folders ('' when it is one): it lies inside a directory given to Ansible as an
    inventory source (the magic variable ansible_inventory_sources), whose inventory plugins read every YAML file under
    it, model.yml and cells.yml included, as inventory: a warning per file on every run and empty groups named after
    the files' keys (checkpoints, images, workload, ...)."""
    target = dest.resolve()
    for source in sources or []:
        folder = Path(str(source)).resolve()
        if folder.is_dir() and (target == folder or folder in target.parents):
            return (f"dest {dest} is inside the inventory directory {folder}, and Ansible reads every YAML file under "
                    "an inventory directory as inventory (a warning per file, empty groups named checkpoints, images, "
                    f"workload...); import into a folder beside it, e.g. {folder.parent / (folder.name + '-models')}, "
                    f"named in sglang_recipes as \"{{{{ inventory_dir | dirname }}}}/{folder.name}-models\"")
    return ""


def _git_commit(checkout: Path, relative: str) -> str:
    proc = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%H", "--", relative],
                          capture_output=True, text=True, check=False)
    commit = proc.stdout.strip()
    if proc.returncode or not commit:
        raise ValueError(f"{checkout}: git cannot tell the commit of {relative} ({proc.stderr.strip() or 'no log'}); "
                         "give commit (and revision) instead")
    return commit


def checkout_root(docs: Path) -> Path:
    """The root of a checkout of sgl-project/sglang, given the root or its docs/ folder."""
    if not (docs / CONFIGS).is_dir() and (docs / CONFIGS.split("/", 1)[1]).is_dir():
        return docs.parent
    return docs


def find_page(checkout: Path, name: str) -> Path:
    """<checkout>/docs/src/snippets/configs/<org>/<name>.jsx (name may be `<org>/<page>` or `<page>`)."""
    configs = checkout / CONFIGS
    hits = sorted(configs.glob(f"{name}.jsx")) or sorted(configs.glob(f"*/{name}.jsx"))
    if len(hits) != 1:
        found = "none" if not hits else ", ".join(str(h.relative_to(configs)) for h in hits)
        raise ValueError(f"page: {name!r} names {found} under {configs}; give <org>/<page>, e.g. zai-org/glm-5.3")
    return hits[0]


def _page_path(config_file: Path, org: str) -> str:
    """The page's folder in sgl-project/sglang (docs/src/snippets/configs/<org>/): from the file's own path when it
    sits in such a folder, else from org; the source links of every imported file are built on it."""
    parts = config_file.resolve().parts
    if "/".join(parts[-6:-2]) == CONFIGS:
        return f"{CONFIGS}/{parts[-2]}/"
    if org:
        return f"{CONFIGS}/{org.strip('/')}/"
    raise ValueError(f"{config_file}: say which folder of {CONFIGS}/ the page is in (org, import_org: e.g. "
                     "ibm-granite for granite-4.2.jsx), so that the source links of the imported files are right")


def page_from_file(config_file: Path, commit: str = "", revision: str = "", architecture: str = "",
                   checkout: Path | None = None, org: str = "", benchmarks_commit: str = "") -> Page:
    """A page file (and <page>-benchmarks.jsx beside it, when there is one); from a checkout the commits are git's.
    The benchmarks file is taken to be at the page's commit unless benchmarks_commit says otherwise."""
    bench_file = config_file.with_name(config_file.stem + "-benchmarks.jsx")
    relative = ""
    bench_commit = benchmarks_commit or commit
    if checkout is not None:
        relative = str(config_file.relative_to(checkout))
        commit = commit or _git_commit(checkout, relative)
        bench_commit = benchmarks_commit or (_git_commit(checkout, str(bench_file.relative_to(checkout)))
                                             if bench_file.exists() else commit)
    if not commit and not revision:
        raise ValueError(f"{config_file}: give the page's commit (or at least a revision name): the files do not "
                         "say which upstream revision they are")
    path = (relative.rsplit("/", 1)[0] + "/") if relative else _page_path(config_file, org)
    return Page(name=config_file.stem, config_text=config_file.read_text(encoding="utf-8"),
                benchmarks_text=bench_file.read_text(encoding="utf-8") if bench_file.exists() else None,
                revision=revision or commit[:8], config_commit=commit or revision, benchmarks_commit=bench_commit,
                path=path, architecture=architecture,
                read=f"imported from {config_file}" + (f" (git commit {commit})" if checkout else ""))
