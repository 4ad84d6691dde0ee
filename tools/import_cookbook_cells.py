"""Import one revision of an SGLang cookbook page into data/models/<id>/ (a thin wrapper; the importer is
plugins/plugin_utils/cookbook, shipped with the collection as playbooks/import_page.yml).

Input: tests/fixtures/upstream/<page>/<short commit>/ with the page's two upstream files exactly as published and
our source.yml note; which page and variant a model is comes from data/models/<id>/model.yml
(`cookbook: {page, variant}`). Output: data/models/<id>/cookbook/<short commit>/{cells.yml,benchmarks.yml} and the
revision added to `cookbook_revisions` in model.yml (newest first). tests/unit/test_cookbook_revisions.py re-runs the
import of every shipped revision of every model and compares it with data/ byte for byte.

Usage: python tools/import_cookbook_cells.py <model id> <short commit>
       python tools/import_cookbook_cells.py --site tests/fixtures/cookbook-site
The second form imports every page its imports.yml lists into <site>/models/ afresh, as
metalserve.sglang.import_page would (tests/unit/test_cookbook_pages.py compares).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import importer, inputs  # noqa: E402
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import read_yaml  # noqa: E402

GENERATOR = "tools/import_cookbook_cells.py"


def import_model_revision(model_id: str, revision: str, root: Path = ROOT) -> importer.ModelImport:
    page = (read_yaml(root / "data" / "models" / model_id / "model.yml") or {}).get("cookbook") or {}
    if not page.get("page"):
        raise SystemExit(f"data/models/{model_id}/model.yml: no `cookbook: {{page, variant}}`; it is not imported")
    folder = root / "tests" / "fixtures" / "upstream" / str(page["page"]) / revision
    source = inputs.page_from_folder(folder, origin=f"tests/fixtures/upstream/{page['page']}/{revision}/")
    [result] = importer.plan_import(source, inputs.context(generator=GENERATOR), str(page.get("variant", "default")))
    return result


def import_site(site: Path, root: Path = ROOT) -> list[importer.ModelImport]:
    """Every page of <site>/imports.yml, each variant as the shipped importer names it."""
    spec = read_yaml(site / "imports.yml")
    ctx = inputs.context(spec.get("sglang_gpu_platforms"))
    out = []
    for entry in spec["pages"]:
        folder = root / "tests" / "fixtures" / "upstream" / entry
        out += importer.plan_import(inputs.page_from_folder(folder, origin=f"tests/fixtures/upstream/{entry}/"), ctx)
    return out


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--site":
        site = Path(argv[1]).resolve()
        shutil.rmtree(site / "models", ignore_errors=True)
        for result in import_site(site):
            importer.write_import(result, site / "models")
            print(f"{result.model_id}: {result.report['cells']} cells, {len(result.report['left_out'])} left out")
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    model_id, revision = argv
    result = import_model_revision(model_id, revision)
    result.model_id = model_id  # data/ names the model, not the page
    changed = importer.write_import(result, ROOT / "data" / "models", GENERATOR)
    print(f"{result.report['cells']} cells, {result.report['published']} published rows, "
          f"{len(result.report['left_out'])} left out; changed: {', '.join(changed) or 'nothing'}")
    for item in result.report["left_out"]:
        print(f"  left out {item['cell']}: {item['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
