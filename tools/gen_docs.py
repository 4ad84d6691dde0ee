"""Regenerate the generated parts of the docs from the data (and check they are fresh).

README.md holds blocks between `<!-- BEGIN generated:NAME -->` and `<!-- END generated:NAME -->`:
  recipe-matrix   the cookbook cells per GPU x precision x nodes x strategy (data/models/*/cells.yml)
  variables       the inventory variables (data/variables.yml)

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


def describe(cell: Cell) -> str:
    f = dict(cell.flags)
    parts = [f"TP{f.get('--tp-size', 1)}"]
    if "--enable-dp-attention" in f:
        parts[0] += f" DP{f['--dp-size']}"
    if f.get("--moe-a2a-backend") == "deepep":
        parts.append("DeepEP")
    if "--speculative-algorithm" in f:
        parts.append(f"MTP {f['--speculative-num-steps']}-{f['--speculative-eagle-topk']}-"
                     f"{f['--speculative-num-draft-tokens']}")
    badge = "verified" if cell.verified else "**unverified**"
    return f"{' · '.join(parts)} ({badge})"


def recipe_matrix() -> str:
    catalog = load_catalog()
    out = []
    for model in catalog.models.values():
        out.append(f"**{model.display_name}** ({len(model.cells)} cells; checkpoints: "
                   + ", ".join(f"{q} `{c['id']}`" for q, c in model.checkpoints.items()) + ")")
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
                           ("placement", "Where it runs (instances, routers, secrets)")):
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


def recipe_commands() -> str:
    """Every cell with its badge, the published numbers when upstream has them, and the exact command
    the engine renders for it (rank 0, head 10.0.0.1 for two-node cells)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import bench as bench_report
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.placement import command_text  # noqa: PLC0415

    out = []
    for model in load_catalog().models.values():
        out.append(f"## {model.display_name}")
        out.append("")
        for cell in model.cells:
            sel = {"model": model.id, "gpu": cell.gpu, "quant": cell.quant, "strategy": cell.strategy,
                   "nodes": cell.nodes}
            head = "10.0.0.1" if cell.nodes > 1 else None
            argv = recipe_engine.serve_args(sel, 0, head)
            rec = recipe_engine.recipe(sel)
            badge = "verified" if cell.verified else "unverified"
            out.append(f"### {cell.gpu} / {cell.quant} / {cell.strategy} / {cell.nodes} node{'s' if cell.nodes > 1 else ''}"
                       f" ({badge})")
            out.append("")
            out.append(f"SGLang {rec['sglang_version']}, image `{rec['image']}`, {rec['gpus_per_node']} GPUs per node."
                       + (" Every node runs the same command with its own `--node-rank`." if cell.nodes > 1 else ""))
            pub = bench_report.published(model.id, {"gpu": cell.gpu, "quant": cell.quant, "strategy": cell.strategy,
                                                    "nodes": cell.nodes})["entry"]
            if pub:
                speeds = "; ".join(f"c={s['concurrency']}: {s['tok_s_per_gpu']} tok/s/GPU, TPOT {s['tpot_ms']} ms"
                                   for s in pub["speed"])
                out.append(f"Published (ISL 8192 / OSL 1024): {speeds}.")
            out.append("")
            env = " ".join(f"{k}={v}" for k, v in rec["env"].items())
            out.append("```sh")
            out.append((env + " \\\n" if env else "") + command_text(["sglang", "serve"], argv))
            out.append("```")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def troubleshooting_table() -> str:
    """The bad-input matrix (tests/bad_inputs.yml) as a table: each mistake and the message it produces."""
    import yaml  # noqa: PLC0415

    matrix = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text(encoding="utf-8"))
    where = {"plan": "plan (site.yml's first plays, render.yml)", "argspec": "role argument specs (site.yml's first play)",
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


def documents() -> list[tuple[Path, dict[str, Callable[[], str]]]]:
    docs: list[tuple[Path, dict[str, Callable[[], str]]]] = [
        (ROOT / "README.md", BLOCKS),
        (ROOT / "docs" / "recipes.md", {"recipe-commands": recipe_commands}),
        (ROOT / "docs" / "troubleshooting.md", {"bad-inputs": troubleshooting_table}),
    ]
    for role in sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists()):
        docs.append((role / "README.md", {"role-variables": lambda role=role: role_variables(role)}))
    return docs


def main(argv: list[str]) -> int:
    stale = []
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
