"""Any LLM page of the SGLang cookbook as data (issue 38): fourteen pages, imported by the shipped importer with no
code of their own, into a site's own folder (tests/fixtures/cookbook-site) that sglang_recipes reads.

Expectations come from outside the importer: the unedited upstream files (tests/fixtures/upstream/<page>/<rev>/),
what the pages say as read by hand (the table below: per model, the cells a collection that knows H200, B200, B300,
GB300, MI300X, MI325X, MI355X and the site's H100 can serve, and why the others cannot), and SGLang 0.5.23's flag
table (read from its parser; tests/slow proves the same with the parser itself).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook import importer, inputs, page as pg
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import catalog, cli, engine, schema
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import capacity
from ansible_collections.metalserve.sglang.tests.helpers import (
    COOKBOOK_MODELS,
    COOKBOOK_SITE,
    ROOT,
    importer as wrapper,
    page_config,
    page_env,
    page_folder,
    page_selection,
    page_tokens_at,
    site_cells,
    site_models,
    site_spec,
)

GPU = "is not in data/gpus.yml nor the site's sglang_gpu_platforms"
NSA = "SGLang 0.5.23's parser refuses the page's command: unrecognized arguments: --nsa-prefill-backend"
ASCEND = f"GPU a3 {GPU}"
#: per model: (cells imported, {reason fragment: cells left out}), as the pages read
EXPECTED: dict[str, tuple[int, dict[str, int]]] = {
    "minimax-m3": (7, {f"gb200 {GPU}": 1, f"mi350x {GPU}": 1}),
    "longcat-2.0": (0, {NSA: 3, f"h20 {GPU}": 1}),
    **{f"granite-4.2-{v}": (2, {}) for v in ("3b", "8b", "30b")},
    "ling-3.0-tiny": (12, {f"h20-3e {GPU}": 3, f"h800 {GPU}": 3}),
    "gigachat3.5": (4, {}),
    "gigachat3.5-reasoning": (4, {}),
    "minicpm5-2b": (1, {f"rtx6000 {GPU}": 1, f"rtx5090 {GPU}": 1, f"dgx-spark {GPU}": 1}),
    "intern-s2-mobius": (8, {}),
    **{f"k2-horizon-{v}": (1, {}) for v in ("0.9b", "3.7b", "7b", "32b", "36b", "375b")},
    **{f"jais-3-{v}": (1, {}) for v in ("0.9b", "3.7b", "7b", "32b", "36b", "375b")},
    "hy3": (16, {f"gb200 {GPU}": 4}),
    "nemotron-3.5-lightning": (16, {f"dgx-spark {GPU}": 8}),
    "qwen3-next-80b-a3b-instruct": (0, {ASCEND: 1}),
    "laguna-m1": (11, {f"gb200 {GPU}": 3}),
}
IMPORTS = wrapper().import_site(COOKBOOK_SITE)
BY_MODEL = {r.model_id: r for r in IMPORTS}
SPEC = site_spec()
SITE = [str(COOKBOOK_MODELS)]
PLATFORMS = SPEC["sglang_gpu_platforms"]
CELLS = [(model, cell) for model in sorted(BY_MODEL) for cell in site_cells(model)]


def _key(cell: dict[str, Any]) -> str:
    return f"{cell['gpu']}/{cell['quant']}/{cell['strategy']}/{cell['nodes']}"


def test_the_site_imports_fourteen_pages_with_no_code_of_their_own() -> None:
    """Every page listed, its revision, the cells imported and those left out with why (printed with -s)."""
    pages = SPEC["pages"]
    assert len(pages) == 14 and len({p.split("/")[0] for p in pages}) == 14
    lines = []
    for result in IMPORTS:
        report = result.report
        why: dict[str, int] = {}
        for item in report["left_out"]:
            why[item["reason"]] = why.get(item["reason"], 0) + 1
        lines.append(f"{result.model_id:30} {report['revision']}  {report['cells']:3} imported  "
                     + "; ".join(f"{n} left out: {r}" for r, n in why.items()))
    print("\n" + "\n".join(lines))
    with_cells = {r.model_doc["cookbook"]["page"] for r in IMPORTS if r.report["cells"]}
    assert len(with_cells) == 12 and sum(r.report["cells"] for r in IMPORTS) == 97


@pytest.mark.parametrize("model", sorted(EXPECTED))
def test_each_page_imports_what_it_says_and_reports_the_rest(model: str) -> None:
    imported, left_out = EXPECTED[model]
    report = BY_MODEL[model].report
    assert report["cells"] == imported
    found: dict[str, int] = {}
    for item in report["left_out"]:
        fragment = next((f for f in left_out if f in f"{item['gpu']} {item['reason']}"), item["reason"])
        found[fragment] = found.get(fragment, 0) + 1
    assert found == left_out
    for item in report["left_out"]:
        if GPU in item["reason"]:  # how to add the GPU, every time
            assert "describe it there (vendor, gpus_per_node, vram_gb" in item["reason"]


def test_every_model_of_the_site_is_the_import_of_its_page() -> None:
    """The committed folder is the importer's output, byte for byte (regenerate with
    python tools/import_cookbook_cells.py --site tests/fixtures/cookbook-site)."""
    assert sorted(BY_MODEL) == sorted(site_models()) == sorted(EXPECTED)
    for result in IMPORTS:
        for name, text in result.files.items():
            assert (COOKBOOK_MODELS / result.model_id / name).read_text(encoding="utf-8") == text, name


@pytest.mark.parametrize("model,cell", CELLS, ids=lambda v: v if isinstance(v, str) else _key(v))
def test_every_imported_cell_means_the_pages_command_to_its_release(model: str, cell: dict[str, Any]) -> None:
    """The engine's render of the cell (the page's parsers where the cell names them, metrics off) and the page's own
    command read by the flag table of the release the cell runs on give the same namespace, rank by rank, and the
    same environment (tests/slow proves the flags with the release's parser itself)."""
    sel, _tokens, _variant = page_selection(model, cell)
    rec = engine.recipe(sel)
    table = cli.Table.of(catalog.flag_table_doc(rec["sglang_version"]))
    for rank in range(cell["nodes"]):
        ours = engine.serve_args(sel, rank, "10.0.0.1" if cell["nodes"] > 1 else None)
        assert cli.parse(ours, table).namespace == cli.parse(page_tokens_at(model, cell, rank), table).namespace
    assert rec["env"] == page_env(model, cell)


def test_a_site_folder_plans_through_sglang_recipes() -> None:
    hosts = {"m3": {"sglang_model": "minimax-m3", "sglang_gpu": "b300"},
             "hy3": {"sglang_model": "hy3", "sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "balanced"},
             "jais": {"sglang_model": "jais-3-32b", "sglang_gpu": "h100"}}
    for host, hv in hosts.items():
        rec = engine.recipe({**{k.removeprefix("sglang_"): v for k, v in hv.items()}, "recipes": SITE,
                             "gpu_platforms": PLATFORMS})
        assert rec["model"] == hv["sglang_model"] and rec["sglang_version"] == "0.5.23", host


def test_a_relative_or_empty_folder_is_refused_with_what_works(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match=r"sglang_recipes\[0\]: 'models' is a relative path; write the folder "
                                          r"absolutely, e.g. \"\{\{ inventory_dir \| dirname \}\}/models\" \(beside "
                                          r"the inventory directory, not in it"):
        catalog.load_catalog(["models"])
    with pytest.raises(RecipeError, match=r"holds no model.yml and no <model>/model.yml"):
        catalog.load_catalog([str(tmp_path)])


# --- the schema: a malformed file is refused naming the file and the field ----------------------------

def _broken_site(tmp_path: Path, edit: Any, name: str = "model.yml") -> Path:
    site = tmp_path / "models"
    shutil.copytree(COOKBOOK_MODELS / "minimax-m3", site / "minimax-m3")
    path = site / "minimax-m3" / (name if name == "model.yml" else f"cookbook/fe8610c0/{name}")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    catalog.cached_yaml.cache_clear()
    return site


@pytest.mark.parametrize("name,edit,message", [
    ("model.yml", lambda d: d["checkpoints"]["mxfp8"].update(id=3),
     r"^sglang_recipes\[0\]: /.*/models/minimax-m3/model.yml: checkpoints.mxfp8.id: expected a string, got int 3$"),
    ("model.yml", lambda d: d.update(requets={"reasoning": {}}),
     r"minimax-m3/model.yml: requets: unknown field; known here: .*requests"),
    ("model.yml", lambda d: d.update(requests={"reasoning": "thinking_mode"}),
     r"minimax-m3/model.yml: requests.reasoning: expected a mapping, got str"),
    ("model.yml", lambda d: d["cookbook"].pop("page"), r"minimax-m3/model.yml: cookbook: missing 'page'"),
    ("cells.yml", lambda d: d["cells"][0].update(nodes="two"),
     r"minimax-m3/cookbook/fe8610c0/cells.yml: cells\[0\].nodes: expected an integer, got str"),
    ("benchmarks.yml", lambda d: d["cells"][1]["speed"][0].update(concurrency=None),
     r"minimax-m3/cookbook/fe8610c0/benchmarks.yml: cells\[1\].speed\[0\].concurrency: expected an integer"),
])
def test_the_schema_refuses_a_malformed_file_naming_file_and_field(
        tmp_path: Path, name: str, edit: Any, message: str) -> None:
    site = _broken_site(tmp_path, edit, name)
    with pytest.raises(schema.SchemaError, match=message):
        catalog.load_catalog([str(site)])


def test_the_plan_refuses_a_malformed_site_model(tmp_path: Path) -> None:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import host_plan
    site = _broken_site(tmp_path, lambda d: d["checkpoints"]["mxfp8"].update(id=3))
    with pytest.raises(RecipeError, match=r"model.yml: checkpoints.mxfp8.id: expected a string"):
        host_plan("n", {"n": {"sglang_model": "minimax-m3", "sglang_gpu": "b300", "sglang_recipes": [str(site)]}},
                  {"all": ["n"]})


def test_every_shipped_file_fits_the_schema() -> None:
    """data/models and the upstream notes: what the catalog loads, it checks (docs/recipes.md documents each field)."""
    for path in sorted((ROOT / "tests" / "fixtures" / "upstream").glob("*/*/source.yml")):
        schema.source_doc(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))
    assert set(catalog.load_catalog().models) == {"glm-5.3", "deepseek-v4-pro", "qwen3.8-27b"}
    text = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
    documented = text[text.index("## Model data"):text.index("<!-- BEGIN generated")]
    for field in list(schema.MODEL.item) + list(schema.SOURCE.item) + list(schema.WORKLOAD.item) + list(schema.POINT.item):
        assert re.search(rf"[`{{, ]{re.escape(field)}[`}}, ]", documented), f"docs/recipes.md does not describe {field}"


# --- page formats: strategy overlays, computed badges, optional bench arguments ------------------------

OVERLAY_PAGE = """export const config = {
  modelName: "T", modelNames: { "default|bf16": "org/T" },
  overlayDims: [
    { id: "tier", title: "Serving Strategy", default: "low-latency",
      stripPrefixes: ["--mamba-radix-cache-strategy"],
      options: [
        { id: "low-latency", label: "Low-Latency", flags: ["--mamba-radix-cache-strategy extra_buffer"] },
        { id: "high-throughput", label: "High-Throughput", flags: ["--mamba-radix-cache-strategy extra_buffer_lazy"] },
      ] },
    { id: "ssmDtype", default: "float32", options: [
        { id: "float32", disabled: (sel) => sel.hw === "rtx5090", flags: ["--mamba-ssm-dtype float32"] },
        { id: "bfloat16", flags: ["--mamba-ssm-dtype bfloat16"] } ] },
  ],
  dockerImages: { h200: "lmsysorg/sglang:v0.5.23-cu129" },
  cells: [
    { match: { hw: "h200", variant: "default", quant: "bf16", nodes: "single" }, verified: true,
      verificationStatus: (sel) => sel.spec === "dflash" ? "in-progress" : "verified",
      flags: ["--model-path {{MODEL_NAME}}", "--mamba-radix-cache-strategy no_buffer", "--host {{HOST_IP}}",
              "--port {{PORT}}"] },
    { match: { hw: "h200", variant: "default", quant: "bf16", nodes: "multi-2" }, verified: true,
      flags: ["--model-path {{MODEL_NAME}}", "--dist-init-addr {{NODE0_IP}}:20000", "--host {{HOST_IP}}",
              "--port {{PORT}}"] },
  ],
};"""


def _page(config: str, bench: str | None = None) -> importer.Page:
    return importer.Page(name="t", config_text=config, benchmarks_text=bench, revision="abcdef12",
                         config_commit="abcdef12" + "0" * 32)


def test_a_strategy_overlay_is_the_strategy_dimension() -> None:
    """Each option of a Serving Strategy overlay is a cell: the flags its stripPrefixes name are replaced by the
    option's; other overlays contribute their default option; a badge the page computes is read as unverified."""
    [result] = importer.plan_import(_page(OVERLAY_PAGE), inputs.context())
    cells = yaml.safe_load(result.files["cookbook/abcdef12/cells.yml"])["cells"]
    assert [(c["strategy"], c["flags"], c["verified"]) for c in cells] == [
        ("low-latency", {"--mamba-radix-cache-strategy": "extra_buffer", "--mamba-ssm-dtype": "float32"}, False),
        ("high-throughput", {"--mamba-radix-cache-strategy": "extra_buffer_lazy", "--mamba-ssm-dtype": "float32"},
         False)]
    assert [(x["cell"], x["reason"]) for x in result.report["left_out"]] == [
        (f"h200/bf16/{s}/multi-2", "--dist-init-addr {{NODE0_IP}}:20000: the page leaves {{NODE0_IP}} for the operator "
                                   "to fill in") for s in ("low-latency", "high-throughput")]


def test_the_speed_command_gives_optional_arguments_and_each_point_its_workload() -> None:
    """MiniMax-M3's speed command has no --random-range-ratio and no warm-up; its MI355X point ran at 1024/1024 with
    640 prompts while the rest ran at 8192/1024 (the page's benchmarks file)."""
    doc = yaml.safe_load((COOKBOOK_MODELS / "minimax-m3" / "cookbook" / "fe8610c0" / "benchmarks.yml").read_text())
    assert doc["workload"] == {"dataset": "random", "isl": 8192, "osl": 1024, "backend": "sglang"}
    mi355x = next(c for c in doc["cells"] if c["gpu"] == "mi355x")
    assert mi355x["speed"] == [{"concurrency": 64, "ttft_ms": None, "tpot_ms": None, "tok_s_per_gpu": 420,
                                "dataset": "random", "isl": 1024, "osl": 1024, "prompts": 640}]
    k2 = yaml.safe_load((COOKBOOK_MODELS / "k2-horizon-7b" / "cookbook" / "bbb60d0f" / "benchmarks.yml").read_text())
    assert k2["workload"]["extra_args"] == ["--tokenize-prompt", "--request-rate", "inf", "--seed", "20260901",
                                            "--temperature", "0.0", "--top-p", "1.0", "--output-details"]


def test_benchmark_runs_each_point_at_its_own_workload() -> None:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench
    cell = {"gpu": "mi355x", "quant": "mxfp8", "strategy": "balanced", "nodes": 1}
    [run] = bench.workload("minimax-m3", cell, recipes=SITE)
    shape = (run["isl"], run["osl"], run["prompts"], run["range_ratio"], run["warmup_requests"])
    assert shape == (1024, 1024, 640, None, None)
    runs = bench.workload("minimax-m3", {**cell, "gpu": "b300"}, recipes=SITE)
    assert [(r["concurrency"], r["isl"], r["prompts"]) for r in runs] == [(64, 8192, 128), (256, 8192, 512)]


def test_sizing_uses_each_points_workload() -> None:
    result = capacity.capacity({"model": "minimax-m3", "requests_per_s": 5, "recipes": SITE})
    mi355x = next(r for r in result["rows"] if r["gpu"] == "mi355x")
    # 420 tok/s/GPU x 8 GPUs / (1024 + 1024) tokens per request = 1.641 requests/s per instance
    assert (mi355x["isl"], mi355x["osl"], mi355x["instance"]["requests_per_s"], mi355x["nodes"]) == (1024, 1024, 1.641, 4)
    limited = capacity.capacity({"model": "minimax-m3", "requests_per_s": 5, "ttft_ms": 60000, "recipes": SITE})
    mi355x = next(r for r in limited["rows"] if r["gpu"] == "mi355x")
    assert mi355x["status"] == "no published numbers" and "no TTFT" in mi355x["reason"]
    assert "at ISL 1024 / OSL 1024" in capacity.markdown(result)


def test_a_new_revision_is_added_to_an_existing_model_and_nothing_else_changes(tmp_path: Path) -> None:
    site = tmp_path / "models"
    shutil.copytree(COOKBOOK_MODELS / "gigachat3.5", site / "gigachat3.5")
    model_yml = site / "gigachat3.5" / "model.yml"
    model_yml.write_text(model_yml.read_text().replace("display_name:", "# a note of ours\ndisplay_name:"))
    [result] = importer.plan_import(importer.Page(**{**inputs.page_from_folder(page_folder("gigachat3.5")).__dict__,
                                                     "revision": "0f0f0f0f"}), inputs.context(PLATFORMS))
    changed = importer.write_import(result, site)
    text = model_yml.read_text()
    assert 'cookbook_revisions: ["0f0f0f0f", "c5a9ebd9"]' in text and "# a note of ours" in text
    assert sorted(changed) == ["gigachat3.5/cookbook/0f0f0f0f/benchmarks.yml", "gigachat3.5/cookbook/0f0f0f0f/cells.yml",
                               "gigachat3.5/model.yml"]


def test_the_page_structure_is_read_for_both_formats() -> None:
    granite = page_config(page_folder("granite-4.2-8b"))
    assert pg.variants(granite) == ["3b", "8b", "30b"]
    minicpm = page_config(page_folder("minicpm5-2b"))
    assert pg.variants(minicpm) == ["default"] and pg.overlays(minicpm)[0] is None
    assert [c.strategy for c in pg.page_cells(minicpm, "default")] == ["balanced"] * 4


def test_auto_parsers_are_resolved_from_the_releases_table_or_reported() -> None:
    """SGLang 0.5.23's _architecture_auto_parsers maps MiniMaxM3SparseForCausalLM to minimax-m3 (its parser table);
    Hy3 (HYV3ForCausalLM) and Granite 4.2 are resolved from the checkpoint's chat template at start, which an import
    cannot read: the report says so instead of guessing."""
    assert BY_MODEL["minimax-m3"].report["parsers_resolved"] == {"reasoning": "minimax-m3", "tool_call": "minimax-m3"}
    assert BY_MODEL["minimax-m3"].report["unresolved"] == {}
    assert "resolves `auto` for HYV3ForCausalLM from the checkpoint's chat template" in \
        BY_MODEL["hy3"].report["unresolved"]["reasoning"]
    assert "granite-4.2-8b names no architecture" in BY_MODEL["granite-4.2-8b"].report["unresolved"]["tool_call"]


def test_an_import_into_the_inventory_directory_warns_as_ansible_reads_it(tmp_path: Path) -> None:
    """Ansible reads every YAML file under an inventory directory as inventory (ansible-inventory shows the groups it
    makes of model.yml's keys): the import warns where the models would land there, and a folder beside it is fine."""
    import json
    import os
    import subprocess
    import sys
    inventory = tmp_path / "site"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text("all:\n  hosts:\n    n1: {ansible_host: 10.0.0.1}\n")
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
           "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections")}
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run([str(bin_dir / "ansible-playbook"), str(ROOT / "playbooks" / "import_page.yml"),
                           "-i", str(inventory), "-e", f"import_folder={page_folder('minimax-m3')}",
                           "-e", f"import_dest={inventory / 'models'}"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    said = " ".join((proc.stdout + proc.stderr).split())
    assert f"dest {inventory / 'models'} is inside the inventory directory {inventory}" in said
    assert "\"{{ inventory_dir | dirname }}/site-models\"" in said
    listed = subprocess.run([str(bin_dir / "ansible-inventory"), "-i", str(inventory), "--list"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, check=True, timeout=300)
    assert {"checkpoints", "parsers", "workload"} <= set(json.loads(listed.stdout)["all"]["children"])
    assert inputs.inside_inventory(tmp_path / "site-models", [str(inventory)]) == ""


def test_a_page_file_given_alone_keeps_its_folder_in_the_source_links(tmp_path: Path) -> None:
    """The page's folder in sgl-project/sglang (source.yml `path`, as the search index lists the file) is in every
    link the import writes; a file outside docs/src/snippets/configs/<org>/ needs it said (org), else the links would
    point at a file that does not exist."""
    folder = page_folder("minimax-m3")
    source = yaml.safe_load((folder / "source.yml").read_text(encoding="utf-8"))
    download = tmp_path / "download"
    download.mkdir()
    for name in (source["config_file"], source["benchmarks_file"]):
        shutil.copy(folder / name, download / name)
    with pytest.raises(ValueError, match=r"say which folder of docs/src/snippets/configs/ the page is in \(org, "
                                         r"import_org: e.g. ibm-granite"):
        inputs.page_from_file(download / source["config_file"], commit=source["config_commit"])
    checkout = tmp_path / "sglang" / source["path"]
    checkout.mkdir(parents=True)
    shutil.copy(folder / source["config_file"], checkout / source["config_file"])
    alone = inputs.page_from_file(download / source["config_file"], commit=source["config_commit"],
                                  org=source["path"].rstrip("/").rsplit("/", 1)[1],
                                  benchmarks_commit=source["benchmarks_commit"])
    in_place = inputs.page_from_file(checkout / source["config_file"], commit=source["config_commit"])
    for page in (alone, in_place):
        [result] = importer.plan_import(page, inputs.context(PLATFORMS))
        url = f"https://github.com/{source['repository']}/blob/{source['config_commit']}/{source['path']}"
        assert result.model_doc["source"] == url + source["config_file"]
        assert f"source: {url}{source['config_file']}\n" in result.files["cookbook/fe8610c0/cells.yml"]
    [result] = importer.plan_import(alone, inputs.context(PLATFORMS))
    bench = yaml.safe_load(result.files["cookbook/fe8610c0/benchmarks.yml"])
    assert bench["source"] == (f"https://github.com/{source['repository']}/blob/{source['benchmarks_commit']}/"
                               f"{source['path']}{source['benchmarks_file']}")


def test_a_checkout_is_found_from_its_root_or_its_docs_folder(tmp_path: Path) -> None:
    """The module documents `docs` as a checkout of sgl-project/sglang or of its docs/: both find the page, and the
    page's folder in the repository (source.yml `path`) is the same."""
    folder = page_folder("minimax-m3")
    source = yaml.safe_load((folder / "source.yml").read_text(encoding="utf-8"))
    target = tmp_path / "sglang" / source["path"]
    target.mkdir(parents=True)
    shutil.copy(folder / source["config_file"], target / source["config_file"])
    for given in (tmp_path / "sglang", tmp_path / "sglang" / "docs"):
        root = inputs.checkout_root(given)
        found = inputs.find_page(root, "minimax-m3")
        assert str(found.relative_to(root)) == source["path"] + source["config_file"]


def test_an_import_into_an_existing_model_reports_what_the_plan_will_read(tmp_path: Path) -> None:
    """model.yml is never rewritten, so an architecture given to a second import does not reach it: the report then
    says what the plan resolves from the folder (recipe/parsers.py over the catalog's model) and how to fix it."""
    from ansible_collections.metalserve.sglang.plugins.action.import_page import run_import
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import parsers
    dest = tmp_path / "models"
    shutil.copytree(COOKBOOK_MODELS / "minimax-m3", dest / "minimax-m3")
    model_yml = dest / "minimax-m3" / "model.yml"
    model_yml.write_text(re.sub(r"^architecture: .*\n", "", model_yml.read_text(), flags=re.M))
    args = {"folder": str(page_folder("minimax-m3")), "page": None, "docs": None, "dest": str(dest), "variant": None,
            "model_id": None, "commit": None, "revision": None, "architecture": "MiniMaxM3SparseForCausalLM",
            "benchmarks_commit": None, "org": None, "gpu_platforms": PLATFORMS}
    [report] = run_import(args, write=True)
    catalog.cached_yaml.cache_clear()
    planned = parsers.resolved(catalog.load_catalog([str(dest)]).models["minimax-m3"], "0.5.23")
    assert report["parsers_resolved"] == {k: planned[k] for k in ("reasoning", "tool_call")} == \
        {"reasoning": "auto", "tool_call": "auto"}
    assert set(report["unresolved"]) == set(planned["unresolved"]) == {"reasoning", "tool_call"}
    assert report["notes"] == ["model.yml exists and is not rewritten: it names architecture none, not "
                               "MiniMaxM3SparseForCausalLM; set `architecture: MiniMaxM3SparseForCausalLM` in it"]


def test_a_missing_revision_or_unreadable_file_is_refused_with_every_other_mistake(tmp_path: Path) -> None:
    """A folder model.yml points at but that is not there, a file YAML cannot read and a malformed field of another
    model: one refusal naming each file (the docs' 'every mistake at once')."""
    site = tmp_path / "models"
    for model in ("minimax-m3", "gigachat3.5", "hy3"):
        shutil.copytree(COOKBOOK_MODELS / model, site / model)
    shutil.rmtree(site / "minimax-m3" / "cookbook" / "fe8610c0")
    (site / "gigachat3.5" / "model.yml").write_text("id: gigachat3.5\n  display_name: [oops\n")
    hy3 = site / "hy3" / "model.yml"
    hy3.write_text(hy3.read_text().replace("default_quant:", "default_quant: 7\nx_default_quant:", 1))
    catalog.cached_yaml.cache_clear()
    with pytest.raises(schema.SchemaError) as err:
        catalog.load_catalog([str(site)])
    said = str(err.value)
    assert re.search(r"minimax-m3/cookbook/fe8610c0/cells.yml: no such file \(model.yml cookbook_revisions lists "
                     r"fe8610c0: import that revision again, or take it out of the list\)", said)
    assert re.search(r"gigachat3.5/model.yml: not YAML: .*line 2", said)
    assert re.search(r"hy3/model.yml: .*x_default_quant: unknown field", said)


def test_a_single_speed_measurement_is_read_as_the_pages_engine_reads_it() -> None:
    """The cookbook's engine (docs/src/snippets/_deployment.jsx at 00c17caf, normalizeSpeed: 'Accepts a single
    measurement object or an array') shows an entry whose speed is one object like a list of one."""
    config = OVERLAY_PAGE.replace('overlayDims: [', 'benchmarkCommands: { numPromptsByConc: { 16: 64 } },\n  overlayDims: [')
    point = ('{ workload: { dataset: "random", isl: 8192, osl: 1024, max_concurrency: 16, num_prompts: 64 }, '
             'ttft_ms: 900, tpot_ms: 20, tokens_per_sec_per_gpu: 700 }')
    bench = ('export const benchmarks = [ { match: { hw: "h200", variant: "default", quant: "bf16", '
             'strategy: "low-latency", nodes: "single" }, sglang_version: "0.5.23", speed: %s } ];')
    docs = [yaml.safe_load(importer.plan_import(_page(config, bench % speed), inputs.context())[0]
                           .files["cookbook/abcdef12/benchmarks.yml"]) for speed in (point, f"[{point}]")]
    assert docs[0] == docs[1]
    assert docs[0]["cells"][0]["speed"] == [{"concurrency": 16, "ttft_ms": 900, "tpot_ms": 20, "tok_s_per_gpu": 700}]
