"""Regenerate the generated parts of the docs from the data (and check they are fresh).

README.md holds blocks between `<!-- BEGIN generated:NAME -->` and `<!-- END generated:NAME -->`:
  recipe-matrix   the cookbook cells per GPU x precision x nodes x strategy of the newest cookbook revision
                  (data/models/*/cookbook/<revision>/cells.yml)
  variables       the inventory variables (data/variables.yml)
each role's README its variables (role-variables) and the other roles' task files it includes (role-includes),
docs/architecture.md every plugin_utils module with its job (plugin-utils) and the roles' includes (role-includes), and
each role's meta/argument_specs.yml is generated whole from its defaults/main.yml and meta/variables.yml.

Usage: python tools/gen_docs.py          # rewrite README.md
       python tools/gen_docs.py --check  # exit 1 when README.md is stale (make test runs this)
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (  # noqa: E402
    Cell,
    load_catalog,
)

STRATEGIES = ("low-latency", "balanced", "high-throughput")


A2A_NAMES = {"deepep": "DeepEP", "megamoe": "MegaMoE"}


def describe(cell: Cell) -> str:
    f = dict(cell.flags)
    parts = [f"TP{f.get('--tp-size', 1)}"]
    if "--enable-dp-attention" in f:
        parts[0] += f" DP{f['--dp-size']}"
    if f.get("--moe-a2a-backend"):
        parts.append(A2A_NAMES.get(str(f["--moe-a2a-backend"]), str(f["--moe-a2a-backend"])))
    algorithm = f.get("--speculative-algorithm")
    if algorithm == "EAGLE" and "--speculative-num-steps" in f:
        parts.append(f"MTP {f['--speculative-num-steps']}-{f['--speculative-eagle-topk']}-"
                     f"{f['--speculative-num-draft-tokens']}")
    elif algorithm:
        parts.append(str(algorithm))
    badge = "verified" if cell.verified else "**unverified**"
    return f"{' · '.join(parts)} ({badge})"


def _revisions_line(model: Any) -> str:
    if not model.revisions:
        return ""
    older = ", ".join(f"`{r.id}` ({len(r.cells)} cells)" for r in model.revisions[1:])
    return (f"{model.display_name}: cookbook revision `{model.revision}` (newest shipped, the default)"
            + (f"; `sglang_cookbook_revision` selects an older one: {older}" if older else "")
            + ". [docs/recipes.md](docs/recipes.md) shows them side by side.\n\n")


def _overrides(checkpoint: dict[str, Any]) -> str:
    """` (on h200, mi355x: `other/id`)` for the GPUs that run another checkpoint of the precision."""
    by_id: dict[str, list[str]] = {}
    for gpu, other in (checkpoint.get("gpus") or {}).items():
        by_id.setdefault(other["id"], []).append(gpu)
    return "".join(f" (on {', '.join(gpus)}: `{ref}`)" for ref, gpus in by_id.items())


def recipe_matrix() -> str:
    catalog = load_catalog()
    out = []
    for model in catalog.models.values():
        out.append(_revisions_line(model)
                   + f"**{model.display_name}** (`sglang_model: {model.id}`; {len(model.cells)} cells; checkpoints: "
                   + ", ".join(f"{q} `{c['id']}`" + _overrides(c) for q, c in model.checkpoints.items()) + ")")
        out.append("")
        out.append("| GPU | Precision | Nodes | " + " | ".join(STRATEGIES) + " |")
        out.append("| --- | --- | --- | " + " | ".join("---" for _strategy in STRATEGIES) + " |")
        rows: dict[tuple[str, str, int], dict[str, Cell]] = {}
        for cell in model.cells:
            rows.setdefault((cell.gpu, cell.quant, cell.nodes), {})[cell.strategy] = cell
        for (gpu, quant, nodes), cells in rows.items():
            line = [gpu, quant, str(nodes)] + [describe(cells[s]) if s in cells else "-" for s in STRATEGIES]
            out.append("| " + " | ".join(line) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _default(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if value == {}:
        return "`{}`"
    return f"`{' '.join(str(value).split())}`"


def variables() -> str:
    catalog = load_catalog()
    out = []
    for section, title in (("recipe", "What each host serves (read by the recipe engine)"),
                           ("placement", "Where it runs (instances, routers, secrets)"),
                           ("playbooks", "Playbook settings")):
        out += [f"**{title}**", "", "| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
        for name, spec in catalog.variables[section].items():
            desc = " ".join(str(spec["description"]).split())
            if spec.get("choices"):
                desc += " Choices: " + ", ".join(f"`{c}`" for c in spec["choices"]) + "."
            out.append(f"| `{name}` | {spec['type']} | {_default(spec.get('default'))} | {desc} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def role_variables(role: Path) -> str:
    """The variable table of a role, from its meta/argument_specs.yml (entry point main)."""
    import yaml  # noqa: PLC0415

    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    options = spec["argument_specs"]["main"].get("options") or {}
    out = ["| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
    for name, opt in options.items():
        desc = " ".join(str(opt.get("description", "")).split()) if not isinstance(opt.get("description"), list) \
            else " ".join(" ".join(str(d).split()) for d in opt["description"])
        if opt.get("choices"):
            desc += " Choices: " + ", ".join(f"`{c}`" for c in opt["choices"]) + "."
        default = "(required)" if opt.get("required") else _default(opt.get("default"))
        out.append(f"| `{name}` | {opt.get('type', 'str')} | {default.replace('|', chr(92) + '|')} | {desc} |")
    return "\n".join(out) + "\n"


def _published(model_id: str, cell: Cell) -> str:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as bench_report  # noqa: PLC0415

    pub = bench_report.published(model_id, {"gpu": cell.gpu, "quant": cell.quant, "strategy": cell.strategy,
                                            "nodes": cell.nodes, "cookbook_revision": cell.revision or None})["entry"]
    if not pub:
        return "pending upstream"
    return "; ".join(f"c={s['concurrency']}: {s['tok_s_per_gpu']} tok/s/GPU, TPOT {s['tpot_ms']} ms" for s in pub["speed"])


def _side_by_side(columns: list[str], rows: list[tuple[str, list[str]]]) -> list[str]:
    """A table with one column per revision; a value equal to its left neighbour reads 'same'."""
    out = ["| | " + " | ".join(columns) + " |", "| --- |" + " --- |" * len(columns)]
    for label, values in rows:
        shown = [v if i == 0 or v != values[i - 1] or v == "-" else "same" for i, v in enumerate(values)]
        out.append(f"| {label} | " + " | ".join(shown) + " |")
    return out


def _per_node(rec: Any, nodes: int) -> str:
    if not rec:
        return "-"
    return f"{rec['gpus_per_node']} GPUs" + (", same command with its own `--node-rank`" if nodes > 1 else "")


def _change(revisions: list[Any], rev: Any, cell: Cell | None, newest: Cell | None) -> str:
    """What the newest revision does differently from `rev` for this cell (docs wording of the warning)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.revisions import (  # noqa: PLC0415
        cell_changes,
        same_command,
    )

    first = revisions[0]
    if cell is None:
        return "-"
    if newest is None:
        heirs = [c.strategy for c in first.cells
                 if (c.gpu, c.quant, c.nodes) == (cell.gpu, cell.quant, cell.nodes) and same_command(c, cell)]
        return f"gone from `{first.id}`" + (f"; its {' and '.join(heirs)} has these flags" if heirs else "")
    diff = cell_changes(cell, newest, (rev.images.get(cell.gpu) or {}).get("ref"),
                        (first.images.get(cell.gpu) or {}).get("ref"))
    return f"`{first.id}` " + "; ".join(diff) if diff else "nothing"


def recipe_commands() -> str:
    """Every cell of every shipped cookbook revision side by side: badge, SGLang release and image, the
    published numbers where upstream has them, what the newest page changed, and the exact command the
    engine renders for each revision (rank 0, head 10.0.0.1 for two-node cells)."""
    out = []
    for model in load_catalog().models.values():
        revisions = list(model.revisions)
        out += [f"## {model.display_name}", ""]
        if revisions:
            out += ["| Revision (`sglang_cookbook_revision`) | Page | Benchmarks | Cells |", "| --- | --- | --- | --- |"]
            for i, rev in enumerate(revisions):
                bench = yaml_doc(model.id, rev.id)
                out.append(f"| `{rev.id}`{' (newest, the default)' if i == 0 else ''} | [{rev.commit[:8]}]({rev.source}) "
                           f"| [{str(bench.get('commit', ''))[:8]}]({bench.get('source', '')}) | {len(rev.cells)} |")
            out.append("")
        columns = [f"`{r.id}`" for r in revisions] or ["site"]
        load = (yaml_doc(model.id, revisions[0].id) if revisions else {}).get("workload") or {}
        keys = [c.key for c in (revisions[0].cells if revisions else model.cells)]
        for rev in revisions[1:]:  # a cell only an older page has goes after its neighbour there
            before = None
            for cell in rev.cells:
                if cell.key not in keys:
                    keys.insert(keys.index(before) + 1 if before in keys else len(keys), cell.key)
                before = cell.key
        for key in keys:
            out += _cell_section(model, revisions, columns, load, key)
    return "\n".join(out).rstrip() + "\n"


def _commands(model: Any, revisions: list[Any], cells: list[Cell | None],
              key: tuple[str, str, str, int]) -> tuple[list[Any], list[str | None]]:
    """Per revision, the cell's recipe and its exact command (None where the revision lacks the cell)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.placement import command_text  # noqa: PLC0415

    gpu, quant, strategy, nodes = key
    recs: list[Any] = []
    commands: list[str | None] = []
    for rev, cell in zip(revisions or [None], cells):
        if cell is None:
            recs.append(None)
            commands.append(None)
            continue
        sel = {"model": model.id, "gpu": gpu, "quant": quant, "strategy": strategy, "nodes": nodes,
               "cookbook_revision": rev.id if rev else None}
        rec = recipe_engine.recipe(sel)
        env = " ".join(f"{k}={v}" for k, v in rec["env"].items())
        argv = recipe_engine.serve_args(sel, 0, "10.0.0.1" if nodes > 1 else None)
        recs.append(rec)
        commands.append((env + " \\\n" if env else "") + command_text(["sglang", "serve"], argv))
    return recs, commands


def _cell_section(model: Any, revisions: list[Any], columns: list[str], load: dict[str, Any],
                  key: tuple[str, str, str, int]) -> list[str]:
    """One cell's section of docs/recipes.md: a row per fact, side by side per revision, then each distinct command."""
    gpu, quant, strategy, nodes = key
    cells = [next((c for c in r.cells if c.key == key), None) for r in revisions] \
        if revisions else [next(c for c in model.cells if c.key == key)]
    out = [f"### {gpu} / {quant} / {strategy} / {nodes} node{'s' if nodes > 1 else ''}", ""]
    recs, commands = _commands(model, revisions, cells, key)
    absent = "- (not on this page)"
    rows = [
        ("Badge", [absent if c is None else "verified" if c.verified else "**unverified**" for c in cells]),
        ("SGLang, image", [f"{r['sglang_version']}, `{r['image']}`" if r else "-" for r in recs]),
        ("Per node", [_per_node(r, nodes) for r in recs]),
        (f"Published (ISL {load.get('isl')} / OSL {load.get('osl')})",
         [_published(model.id, c) if c else "-" for c in cells]),
    ]
    if len(cells) > 1:
        changes = [_change(revisions, rev, cell, cells[0]) for rev, cell in zip(revisions[1:], cells[1:])]
        rows.append(("Newest page changes", ["-"] + changes))
    out += _side_by_side(columns, rows)
    out.append("")
    shown: list[str] = []
    for command in commands:
        if command is None or command in shown:
            continue
        shown.append(command)
        which = [columns[i] for i, c in enumerate(commands) if c == command]
        if len(revisions) > 1:
            out.append(("Every revision" if len(which) == len(revisions) else "Revision " + ", ".join(which)) + ":")
            out.append("")
        out += ["```sh", command, "```", ""]
    return out


def yaml_doc(model_id: str, revision: str) -> dict[str, Any]:
    import yaml  # noqa: PLC0415

    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import benchmarks_path  # noqa: PLC0415

    path = benchmarks_path(model_id, revision)
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}


def troubleshooting_table() -> str:
    """The bad-input matrix (tests/bad_inputs.yml) as a table: each mistake and the message it produces."""
    import yaml  # noqa: PLC0415

    matrix = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text(encoding="utf-8"))
    where = {"plan": "plan (site.yml's first plays, render.yml)",
             "warning": "plan, a warning (the site still renders)",
             "argspec": "role argument specs (site.yml's first play)",
             "preflight": "preflight (on the nodes' facts)", "parser": "SGLang's own parser (sglang_server, before the unit changes)"}
    out = ["| Mistake | Caught by | The message (... stands for details) |", "| --- | --- | --- |"]
    for layer, cases in matrix.items():
        for case in cases:
            text = re.sub(r"\\(.)", r"\1", " ".join(str(case["expect"]).split()).replace(".*", " ... "))
            text = text.replace("|", "\\|")
            out.append(f"| {case['id'].replace('-', ' ')} | {where[layer]} | `{text[:160]}` |")
    return "\n".join(out) + "\n"


BLOCKS: dict[str, Callable[[], str]] = {"recipe-matrix": recipe_matrix, "variables": variables}


def render(text: str, blocks: dict[str, Callable[[], str]] | None = None) -> str:
    for name, make in (blocks or BLOCKS).items():
        pattern = re.compile(rf"(<!-- BEGIN generated:{name} -->\n).*?(<!-- END generated:{name} -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"a document lacks its generated:{name} block")
        text = pattern.sub(lambda m: m.group(1) + make() + m.group(2), text)
    return text


def role_includes(role: Path) -> str:
    """The task files of other roles a role includes (its meta/variables.yml `includes`)."""
    import yaml  # noqa: PLC0415

    sys.path.insert(0, str(ROOT / "tools"))
    from write_argument_specs import includes_text  # noqa: PLC0415

    includes = yaml.safe_load((role / "meta" / "variables.yml").read_text(encoding="utf-8")).get("includes") or []
    return includes_text(includes) + "\n"


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    return re.split(r"(?<=[.?!])\s", paragraph, maxsplit=1)[0]


def plugin_utils_table() -> str:
    """Every module of plugins/plugin_utils with its one job: the first sentence of its docstring."""
    import ast  # noqa: PLC0415

    base = ROOT / "plugins" / "plugin_utils"
    rows = ["| Module | Its job (the module's docstring) |", "| --- | --- |"]
    for path in sorted(p for p in base.rglob("*.py") if p.name != "__init__.py"):
        job = first_sentence(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
        rows.append(f"| `{path.relative_to(base).as_posix()}` | {job.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def includes_table() -> str:
    """Which roles include which other roles' task files (each role's meta/variables.yml `includes`)."""
    import yaml  # noqa: PLC0415

    rows = ["| Role | Includes (role: task file) |", "| --- | --- |"]
    for role in sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "variables.yml").exists()):
        includes = yaml.safe_load((role / "meta" / "variables.yml").read_text(encoding="utf-8")).get("includes") or []
        rows.append(f"| {role.name} | " + (", ".join(f"{i['role']}: {i['tasks_from']}" for i in includes) or "-") + " |")
    return "\n".join(rows) + "\n"


def generated_files() -> list[tuple[Path, Callable[[], str]]]:
    """Files generated whole: every role's meta/argument_specs.yml (from its defaults and meta/variables.yml)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from write_argument_specs import render as argument_specs  # noqa: PLC0415

    return [(role / "meta" / "argument_specs.yml", lambda role=role: argument_specs(str(role)))
            for role in sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "variables.yml").exists())]


def documents() -> list[tuple[Path, dict[str, Callable[[], str]]]]:
    docs: list[tuple[Path, dict[str, Callable[[], str]]]] = [
        (ROOT / "README.md", BLOCKS),
        (ROOT / "docs" / "recipes.md", {"recipe-commands": recipe_commands}),
        (ROOT / "docs" / "troubleshooting.md", {"bad-inputs": troubleshooting_table}),
        (ROOT / "docs" / "architecture.md", {"plugin-utils": plugin_utils_table, "role-includes": includes_table}),
    ]
    for role in sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists()):
        docs.append((role / "README.md", {"role-variables": lambda role=role: role_variables(role),
                                          "role-includes": lambda role=role: role_includes(role)}))
    return docs


def main(argv: list[str]) -> int:
    stale = []
    for path, make in generated_files():  # first: the role READMEs' tables read the argument specs
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        fresh = make()
        if fresh != current:
            stale.append(str(path.relative_to(ROOT)))
            if "--check" not in argv:
                path.write_text(fresh, encoding="utf-8")
    for path, blocks in documents():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        fresh = render(current, blocks)
        if fresh == current:
            continue
        stale.append(str(path.relative_to(ROOT)))
        if "--check" not in argv:
            path.write_text(fresh, encoding="utf-8")
    if "--check" in argv and stale:
        print(f"stale generated docs: {', '.join(stale)}; run `make docs` (python tools/gen_docs.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
