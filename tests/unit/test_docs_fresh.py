"""The generated README blocks match the data."""
from __future__ import annotations

import subprocess
import sys

from ansible_collections.metalserve.sglang.tests.helpers import PAGE_MODELS, REVISIONS, ROOT, revisions, upstream


def test_readme_generated_blocks_are_fresh() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_docs.py"), "--check"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_every_variable_and_cell_is_in_the_readme() -> None:
    import yaml
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    variables = yaml.safe_load((ROOT / "data" / "variables.yml").read_text(encoding="utf-8"))
    for key, section in variables.items():
        if key == "retired":  # names no longer read; the plan refuses them with their replacement
            continue
        for name in section:
            assert f"| `{name}` |" in readme, name
    # the matrix is the newest shipped cookbook revision's of every model, every cell of it
    assert readme.count("(verified)") + readme.count("(**unverified**)") == sum(
        len(upstream(revisions(model)[0], model)["cells"]) for model in PAGE_MODELS)


def test_recipes_page_has_every_cell_and_its_exact_command() -> None:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.placement import command_text
    page = (ROOT / "docs" / "recipes.md").read_text(encoding="utf-8")
    every = {(model, *(c["match"][k] for k in ("hw", "quant", "strategy", "nodes"))) for model in PAGE_MODELS
             for rev in revisions(model) for c in upstream(rev, model)["cells"]}
    generated = page[page.index("<!-- BEGIN generated:recipe-commands -->"):]
    assert generated.count("\n### ") == len(every)
    sel = {"gpu": "b300", "quant": "bf16", "strategy": "balanced", "nodes": 1}
    assert command_text(["sglang", "serve"], recipe_engine.serve_args(sel)) in page
    sel = {"model": "deepseek-v4-pro", "gpu": "h200", "quant": "fp8", "strategy": "balanced", "nodes": 2}
    assert command_text(["sglang", "serve"], recipe_engine.serve_args(sel, 0, "10.0.0.1")) in page
    for rev in REVISIONS:  # side by side: a cell upstream changed shows each revision's command
        sel = {"gpu": "gb300", "quant": "fp8", "strategy": "high-throughput", "cookbook_revision": rev}
        assert command_text(["sglang", "serve"], recipe_engine.serve_args(sel)) in page


def test_troubleshooting_lists_every_bad_input() -> None:
    import yaml
    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    matrix = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text(encoding="utf-8"))
    for cases in matrix.values():
        for case in cases:
            assert f"| {case['id'].replace('-', ' ')} |" in page, case["id"]
