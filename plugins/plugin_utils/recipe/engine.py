# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recipe engine: selection -> cookbook cell -> knobs in a fixed order -> command for one release.

Pure Python over the data in data/; the filters, the plan action, the docs generator and the tests
all call these functions, and none of them re-implements a rule.

    recipe(selection)                         the node-independent command and its metadata
    serve_args(selection, node_rank, head)    argv after `sglang serve` for one node
    router_args(spec)                         argv after `python3 -m sglang_router.launch_router`
"""
from __future__ import annotations

import copy
import ipaddress
import json
from collections import defaultdict
from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import argv, cli

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import input_checks

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import knobs
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.knobs import Build
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (
    Catalog,
    Cell,
    Model,
    checkpoint_of,
    flag_table,
    gpu_platform,
    load_catalog,
    managed,
    router_flag_table_doc,
    with_revision,
)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.secret_shapes import secret_kind
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.revisions import revision_warning, same_command
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import Mistakes, RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import checked_selection
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import (
    at_least,
    canonical_version,
    parse_version,
    version_from_image,
)

#: The order knobs apply in. DP-attention comes before speculative decoding and context
#: parallelism because both check the final DP-attention state; extra/remove args come last so an
#: operator always has the final word; translation for the target release runs after all of them.
KNOB_ORDER: tuple[Callable[[Build], Build], ...] = (
    knobs.apply_model_path,
    knobs.apply_dp_attention,
    knobs.apply_moe,
    knobs.apply_speculative,
    knobs.apply_context_parallel,
    knobs.apply_hicache,
    knobs.apply_kv_cache_fp8,
    knobs.apply_pd,
    knobs.apply_parsers,
    knobs.apply_metrics,
)
MULTINODE_ANCHORS = ("--enable-dp-attention", "--dp-size", "--tp-size", "--model-path")
SPECULATIVE_CAP = 48


# --- choosing the cell ------------------------------------------------------------------------------

NUMBER_WORDS = {2: "two", 3: "three", 4: "four"}


def _nodes_phrase(nodes: int) -> str:
    return "single-node" if nodes == 1 else f"{nodes}-node"


def _why_not(model: Model, platform: dict[str, Any], gpu: str, quant: str) -> str:
    """A reason from the data why a precision has no recipe on a GPU, or ''."""
    checkpoint = checkpoint_of(model, gpu, quant)
    archs = checkpoint.get("architectures")
    if archs and platform.get("arch") not in archs:
        return f" ({quant} needs {'/'.join(archs)} GPUs; {gpu} is {platform.get('arch')})"
    size, per_gpu, count = checkpoint.get("size_gb"), platform.get("vram_gb"), platform.get("gpus_per_node")
    if size and per_gpu and count and size > 0.85 * per_gpu * count:
        return (f" (the ~{size} GB {quant} weights leave no KV-cache room in one {gpu} node's "
                f"{per_gpu * count} GB)")
    return ""


def _offer(cells: list[Cell]) -> str:
    by_quant: dict[str, list[str]] = defaultdict(list)
    for cell in cells:
        by_quant[cell.quant].append(cell.strategy)
    return "; ".join(f"{q} x {'/'.join(s)}" for q, s in by_quant.items())


def _tp_of(cell: Cell) -> int:
    return int(dict(cell.flags).get("--tp-size", 1))


def select_cell(catalog: Catalog, sel: dict[str, Any]) -> tuple[Model, dict[str, Any], Cell]:
    every = catalog.models.get(sel["model"])
    if every is None:
        raise RecipeError(f"sglang_model: {sel['model']!r} has no recipes; known models: "
                          f"{', '.join(sorted(catalog.models))} (add one with sglang_recipes)")
    model = with_revision(every, sel["cookbook_revision"])
    gpu = sel["gpu"]
    if not gpu:
        raise RecipeError(f"sglang_gpu: not set; {model.id} has recipes for "
                          f"{', '.join(sorted({c.gpu for c in model.cells}))}")
    platform = gpu_platform(catalog.gpus, gpu)
    only = next(iter(model.checkpoints)) if len(model.checkpoints) == 1 else ""
    quant, strategy, nodes = sel["quant"] or model.default_quant or only, sel["strategy"], sel["nodes"]
    if not quant:
        raise RecipeError(f"sglang_quant: not set, and {model.id} names no default precision (default_quant); it has "
                          f"{', '.join(model.checkpoints)}")
    offered = [c.strategy for c in model.cells if (c.gpu, c.quant, c.nodes) == (gpu, quant, nodes)]
    if strategy is None and len(offered) == 1:
        strategy = offered[0]  # one tier (a site recipe, say): nothing to choose
    cell_key = (gpu, quant, strategy, nodes)
    if quant not in model.checkpoints:
        raise RecipeError(f"sglang_quant: {model.id} has no {quant} checkpoint; it has "
                          f"{', '.join(model.checkpoints)}")
    for cell in model.cells:
        if cell.key == cell_key:
            return model, platform, cell
    if strategy is None and offered:
        raise RecipeError(f"sglang_strategy: not set; {_nodes_phrase(nodes)} {quant} on {gpu} offers "
                          f"{', '.join(offered)} (cookbook revision {model.revision}). Choose one per rack: the "
                          "tiers differ by GPU and between cookbook revisions, so there is no default")
    raise RecipeError(_no_cell_message(model, platform, gpu, quant, strategy, nodes) + _elsewhere(model, cell_key))


def _elsewhere(model: Model, key: tuple[str, str, str, int]) -> str:
    """Which other shipped cookbook revision has the cell the selected one lacks, and which cell of the
    selected revision now carries its flags."""
    old = next((c for r in model.revisions if r.id != model.revision for c in r.cells if c.key == key), None)
    if old is None:
        return ""
    heirs = [c.strategy for c in model.cells
             if (c.gpu, c.quant, c.nodes) == (old.gpu, old.quant, old.nodes) and same_command(c, old)]
    heir = f"; its {' and '.join(heirs)} carries that cell's flags" if heirs else ""
    return (f" (cookbook revision {model.revision}{heir}). Cookbook revision {old.revision} has {key[0]}/{key[1]}/"
            f"{key[2]}: pin it with sglang_cookbook_revision: \"{old.revision}\" to keep that command")


def _no_cell_message(model: Model, platform: dict[str, Any], gpu: str, quant: str, strategy: str,
                     nodes: int) -> str:
    on_gpu = [c for c in model.cells if c.gpu == gpu]
    if not on_gpu:
        return (f"sglang_gpu: {model.id} has no recipe for {gpu}; GPUs with recipes: "
                f"{', '.join(sorted({c.gpu for c in model.cells}))}")
    same_quant = [c for c in on_gpu if c.quant == quant]
    here = [c for c in on_gpu if c.nodes == nodes]
    offer = (f"{_nodes_phrase(nodes)} {gpu} offers: {_offer(here)}" if here
             else f"{gpu} has no {_nodes_phrase(nodes)} recipe")
    if not same_quant:
        why = _why_not(model, platform, gpu, quant)
        return f"sglang_quant: {quant} on {gpu} is not in the {model.id} recipes{why}; {offer}"
    other_nodes = sorted({c.nodes for c in same_quant} - {nodes})
    if not any(c.nodes == nodes for c in same_quant) and other_nodes:
        n = other_nodes[0]
        tp = _tp_of(next(c for c in same_quant if c.nodes == n))
        per_node = platform.get("gpus_per_node")
        layout = (f"TP{tp} over {NUMBER_WORDS.get(n, n)} {per_node}-GPU nodes" if n > 1
                  else f"TP{tp} on one {per_node}-GPU node")
        return f"sglang_nodes: {quant} on {gpu} needs sglang_nodes: {n} ({layout}); {offer}"
    strategies = [c.strategy for c in same_quant if c.nodes == nodes]
    return (f"sglang_strategy: {strategy!r} is not a {_nodes_phrase(nodes)} {quant} recipe on {gpu}; it offers "
            f"{', '.join(strategies)}")


# --- release, image and ports ---------------------------------------------------------------------

def resolve_release(catalog: Catalog, model: Model, sel: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    """(target SGLang release, image, warnings). Explicit beats image tag beats the pin."""
    pinned = str(catalog.versions["pinned"])
    entry = model.images.get(sel["gpu"]) or {}
    image = sel["image"] or entry.get("ref")
    known = version_from_image(image) if image else None
    if known is None and not sel["image"]:
        known = entry.get("sglang_version")
    warnings: list[str] = []
    if sel["sglang_version"]:
        wanted = canonical_version(sel["sglang_version"])
        named = version_from_image(image) if image and sel["install_method"] == "docker" else None
        if named and canonical_version(named) != wanted:
            source = "sglang_image" if sel["image"] else f"the cookbook image for {sel['gpu']}"
            raise RecipeError(f"sglang_version: {sel['sglang_version']} contradicts {source} {image}, which holds "
                              f"SGLang {named}; the command must be rendered for the release that runs it. Drop "
                              f"sglang_version (the image's {named} is used), or set an sglang_image of {wanted}")
        if image and sel["install_method"] == "docker" and not named and "@" not in image:
            warnings.append(f"image {image} names no SGLang release and is a tag that moves: the node runs whatever "
                            f"it holds when pulled, while the command was checked against SGLang {wanted}'s parser "
                            f"(sglang_version). Pin sglang_image to the tag or digest of {wanted}")
        return wanted, image, warnings
    if sel["install_method"] == "uv":
        return pinned, image, warnings
    if known:
        return str(known), image, warnings
    if image:
        warnings.append(f"image {image} does not name its SGLang release: rendering for the pinned {pinned}. "
                        "Pin sglang_image to a tag or digest and set sglang_version to the release inside it")
    return pinned, image, warnings


def serve_ports(port: int, ports: dict[str, int], dist: int | None = None) -> list[int]:
    """--port and the block of DP attention's ZMQ ports (data/sglang/ports.yml): a single-node server's from
    --port + internal_offset, a multi-node member's (`dist`: its rendezvous port) from the rendezvous port + 1."""
    if dist is not None:
        return [port] + list(range(dist + 1, dist + 1 + ports["dist_internal_count"]))
    start = port + ports["internal_offset"]
    return [port] + list(range(start, start + ports["internal_count"]))


def internal_label(ports: dict[str, int], port: int, item: int, dist: int | None = None) -> str:
    """How PLAN.md and the port checks name one port of that block."""
    if dist is not None:
        return f"--dist-init-addr port +{item - dist} (SGLang internal)"
    return f"--port +{item - port} (SGLang internal)"


def resolve_ports(catalog: Catalog, sel: dict[str, Any]) -> tuple[int, int]:
    ports = catalog.ports
    pd = knobs.check_pd(sel["pd"])
    role = pd["role"] if pd else None
    port = sel["port"] or (ports["pd_decode_serve"] if role == "decode" else ports["serve"])
    default_dist = {"prefill": ports["pd_prefill_dist_init"], "decode": ports["pd_decode_dist_init"]}
    dist = sel["dist_port"] or default_dist.get(role or "", ports["dist_init"])
    multi = sel["nodes"] > 1
    taken = serve_ports(port, ports, dist if multi else None)
    span = f"{taken[0]}, {taken[1]}-{taken[-1]}"
    if multi and (dist in taken or port in taken[1:]):
        n = ports["dist_internal_count"]
        raise RecipeError(f"sglang_dist_port: {dist} collides with --port {port}: a multi-node server takes the "
                          f"rendezvous port and the {n} after it ({dist}-{dist + n}) besides --port; choose another "
                          "rendezvous port")
    if role == "prefill":
        bootstrap = pd.get("bootstrap_port") or ports["pd_bootstrap"]
        if bootstrap in taken or (sel["nodes"] > 1 and bootstrap == dist):
            raise RecipeError(f"sglang_pd.bootstrap_port: {bootstrap} collides with the server's ports ({span}"
                              f"{', ' + str(dist) if sel['nodes'] > 1 else ''})")
    return port, dist


# --- translation for the target release ------------------------------------------------------------

def spell_for_release(args: argv.Args, version: str, renames: list[dict[str, Any]]) -> argv.Args:
    """Each renamed flag under the spelling the release's parser knows."""
    for rule in renames:
        if at_least(version, rule["new_since"]):
            args = argv.rename(args, rule["old"], rule["new"])
        else:
            args = argv.rename(args, rule["new"], rule["old"])
    return args


def translate(b: Build) -> Build:
    """Rename flags for the target release, refuse features it lacks, check names against its table (every flag that
    does not fit is named, not the first)."""
    versions = b.catalog.versions
    args = spell_for_release(b.args, b.version, versions.get("renames", []))
    for feature in versions.get("features", []):
        i = argv.find(args, feature["flag"])
        if i >= 0 and not at_least(b.version, feature["since"]):
            b = b.refuse(RecipeError(
                f"{args[i].origin}: {feature['feature']} ({feature['flag']}) needs SGLang >= {feature['since']}; "
                f"the command targets {b.version}{_release_hint(b)}"))
    table = flag_table(b.version)
    if table is None:
        return b.refuse(RecipeError(unknown_release_message(b.catalog, b.version, _release_source(b)))).with_(args=args)
    kept = []
    for arg in args:
        try:
            _check_against_table(arg, table, b.version)
            kept.append(arg)
        except RecipeError as exc:  # noted, and left out of the command the later checks read
            b = b.refuse(exc)
    return b.with_(args=kept)


def _release_source(b: Build) -> str:
    if b.sel["sglang_version"]:
        return " (sglang_version)"
    if b.sel["image"]:
        return f" (named by sglang_image {b.sel['image']})"
    return f" (inside the cookbook image for {b.cell.gpu})" if b.sel["install_method"] == "docker" else ""


def unknown_release_message(catalog: Catalog, version: str, hint: str = "") -> str:
    known = ", ".join(sorted(catalog.versions.get("flag_tables", {}), key=parse_version))
    return (f"sglang_version: SGLang {version}{hint} has no flag table in this collection, so its command cannot be "
            f"checked before it reaches a node; releases with a table: {known}. Use one of them, or add the "
            f"table: tools/sglang_flag_table.py {version} (reads that release's own parser) and list it under "
            "flag_tables in data/sglang/versions.yml")


def _release_hint(b: Build) -> str:
    if b.sel["sglang_version"]:
        return " (sglang_version)"
    if b.sel["install_method"] == "docker" and b.version != b.catalog.versions["pinned"]:
        return (f" (the release inside the {b.cell.gpu} image); use sglang_install_method: uv, or an "
                "sglang_image with a newer release and sglang_version")
    return ""


def _check_against_table(arg: argv.Arg, table: dict[str, dict[str, Any]], version: str) -> None:
    entry = table.get(arg.name)
    if entry is None:
        raise RecipeError(f"{arg.origin}: SGLang {version} has no flag {arg.name}{knobs.suggest(arg.name, table)}")
    nargs = entry["nargs"]
    if nargs == 0 and arg.value is not None:
        raise RecipeError(f"{arg.origin}: {arg.name} is a switch in SGLang {version}; give it no value (true)")
    if nargs not in (0, "?", "*") and arg.value is None:
        raise RecipeError(f"{arg.origin}: {arg.name} needs a value in SGLang {version}")
    choices = entry.get("choices")
    values = arg.value if isinstance(arg.value, tuple) else (arg.value,)
    for value in values:
        if choices and value is not None and value not in [str(c) for c in choices]:
            raise RecipeError(f"{arg.origin}: {arg.name} {value!r} is not accepted by SGLang {version}; choices: "
                              f"{', '.join(choices)}")


# --- warnings --------------------------------------------------------------------------------------

#: flags whose value is a TCP port the server listens on
PORT_FLAGS = ("--port", "--nccl-port", "--disaggregation-bootstrap-port", "--engine-info-bootstrap-port",
              "--encoder-bootstrap-port", "--grpc-port", "--grpc-http-sidecar-port", "--smg-http-sidecar-port",
              "--gated-launch-port")


def namespace(b: Build) -> dict[str, Any]:
    """The final command as the target release's parser reads it (recipe/cli.py over its flag table): every dest with
    the value SGLang will hold, numbers converted as SGLang converts them. A value the parser refuses is refused
    here, naming the variable or cell that put it there."""
    if b.namespace is not None:
        return b.namespace
    table = knobs.cli_table(b.version)
    if table is None:
        raise RecipeError(unknown_release_message(b.catalog, b.version, _release_source(b)))
    try:
        return cli.parse(argv.tokens(b.args), table).namespace
    except cli.CliError as exc:
        origin = _origin_of_option(b, exc.option, exc.dest, table)
        raise RecipeError(f"{origin}: SGLang {b.version}'s parser refuses the command: {exc.message}") from None


def parsed(b: Build) -> Build:
    """The command as the release's parser reads it, with every flag whose value the parser refuses noted (named by
    the variable or cell that put it there) and left out, so that the checks after it judge the rest."""
    table = knobs.cli_table(b.version)
    if table is None:
        return b
    for _attempt in range(len(b.args) + 1):
        try:
            return b.with_(namespace=cli.parse(argv.tokens(b.args), table).namespace)
        except cli.CliError as exc:
            where = [i for i, a in enumerate(b.args) if a.name == exc.option or (
                exc.dest is not None and a.name in table.flags and table.dest(a.name) == exc.dest)]
            b = b.refuse(RecipeError(f"{_origin_of_option(b, exc.option, exc.dest, table)}: SGLang {b.version}'s "
                                     f"parser refuses the command: {exc.message}"))
            if not where:
                return b
            b = b.with_(args=[a for i, a in enumerate(b.args) if i != where[0]])
    return b


def _origin_of_option(b: Build, option: str | None, dest: str | None, table: cli.Table) -> str:
    for arg in b.args:
        if arg.name == option or (dest is not None and arg.name in table.flags and table.dest(arg.name) == dest):
            return arg.origin
    return "the command"


def _given(b: Build, flag: str) -> argv.Arg | None:
    """The Arg that sets the dest of `flag` (in the target release) under any spelling, or None."""
    table = knobs.cli_table(b.version)
    if table is None or flag not in table.flags:
        i = argv.find(b.args, flag)
        return b.args[i] if i >= 0 else None
    dest = table.dest(flag)
    for arg in b.args:
        if arg.name in table.flags and table.dest(arg.name) == dest:
            return arg
    return None


def _ns(b: Build, flag: str, default: Any = None) -> Any:
    """What SGLang holds for the dest of `flag` in the final command."""
    table = knobs.cli_table(b.version)
    if table is None or flag not in table.flags:
        return default
    value = namespace(b).get(table.dest(flag))
    return default if value is None else value


def _flag_int(b: Build, name: str) -> int | None:
    """The value of a flag the command gives, as SGLang reads it (None when the command does not give it)."""
    if _given(b, name) is None:
        return None
    value = _ns(b, name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _origin(b: Build, name: str) -> str:
    found = _given(b, name)
    return found.origin if found is not None else "sglang_remove_args"


def check_parallel_layout(b: Build) -> None:
    """The flags the placement depends on must survive extra/remove args and still fit each other, judged on the
    final namespace (what SGLang will hold), whatever spelling set them; every misfit is named at once."""
    mistakes = Mistakes()
    for check in (_tp_kept, _dp_with_attention, _dp_divides_tp, _ep_divides_tp, _tp_over_nodes, _ports_in_range,
                  _internal_ports_fit):
        mistakes.attempt(check, b)
    mistakes.raise_any()


def _sizes(b: Build) -> tuple[int, int, int]:
    return int(_ns(b, "--tp-size", 1)), int(_ns(b, "--dp-size", 1)), int(_ns(b, "--pp-size", 1))


def _tp_kept(b: Build) -> None:
    if any(name == "--tp-size" for name, _v in b.cell.flags) and _given(b, "--tp-size") is None:
        raise RecipeError(f"sglang_remove_args: removing --tp-size breaks {b.where}: the placement (GPUs per node, "
                          f"ranks) depends on it. Keep it, or change it with sglang_extra_args")


def _dp_with_attention(b: Build) -> None:
    tp, dp, pp = _sizes(b)
    if dp > 1 and not _ns(b, "--enable-dp-attention", False):
        who = _given(b, "--dp-size")
        raise RecipeError(f"{who.origin if who else 'the command'}: --dp-size {dp} without DP attention runs {dp} "
                          f"replicas of TP {tp} ({dp * tp * pp} GPUs) in {b.where}, not the {tp * pp} the placement "
                          "gives it; use sglang_dp_attention (a size turns DP attention on, off drops both flags)")


def _dp_divides_tp(b: Build) -> None:
    tp, dp, _pp = _sizes(b)
    if dp < 1 or tp % dp:
        who = _origin(b, "--tp-size") if _origin(b, "--tp-size") != "sglang_dp_attention" else _origin(b, "--dp-size")
        raise RecipeError(f"{who}: --tp-size {tp} no longer fits --dp-size {dp} in {b.where} (the DP size must divide "
                          f"the TP size: {_divisors(tp)}); change sglang_dp_attention together with the TP size")


def _ep_divides_tp(b: Build) -> None:
    tp, _dp, _pp = _sizes(b)
    ep = _flag_int(b, "--ep-size")
    if ep is not None and (ep < 1 or tp % ep):
        raise RecipeError(f"{_origin(b, '--ep-size')}: --ep-size {ep} does not divide --tp-size {tp} in {b.where} "
                          f"(choose one of {_divisors(tp)})")


def _tp_over_nodes(b: Build) -> None:
    tp, _dp, pp = _sizes(b)
    nodes = b.cell.nodes
    have = int(b.platform.get("gpus_per_node") or 0)
    if nodes > 1 and have and tp * pp != nodes * have:
        who = _given(b, "--tp-size")
        raise RecipeError(f"{who.origin if who else 'the command'}: --tp-size {tp}{f' x --pp-size {pp}' if pp > 1 else ''}"
                          f" over {nodes} nodes is {tp * pp / nodes:g} GPUs per node, but {b.where} spans {nodes} "
                          f"{b.cell.gpu} nodes of {have} GPUs: the TP size counts every GPU of the instance, across its "
                          f"nodes ({nodes} x {have} = {nodes * have}). Set --tp-size {nodes * have // pp}, or change "
                          "sglang_nodes")


def _ports_in_range(b: Build) -> None:
    mistakes = Mistakes()
    for name in PORT_FLAGS:
        port = _flag_int(b, name)
        if port is not None and not 1 <= port <= 65535:
            mistakes.add(f"{_origin(b, name)}: {name} {port} is not a TCP port (1-65535)")
    mistakes.raise_any()


def _internal_ports_fit(b: Build) -> None:
    if b.sel["nodes"] > 1:
        last = b.dist_port + b.catalog.ports["dist_internal_count"]
        if last > 65535:
            raise RecipeError(f"sglang_dist_port: {b.dist_port} is too high: SGLang also takes {b.dist_port + 1}-{last} "
                              f"from the rendezvous port + 1, past 65535; use a port below "
                              f"{65535 - b.catalog.ports['dist_internal_count'] + 1}")
        return
    last = b.port + b.catalog.ports["internal_offset"] + b.catalog.ports["internal_count"] - 1
    if last > 65535:
        raise RecipeError(f"sglang_port: {b.port} is too high: SGLang also takes {b.port + b.catalog.ports['internal_offset']}"
                          f"-{last} from --port + {b.catalog.ports['internal_offset']}, past 65535; use a port below "
                          f"{65535 - b.catalog.ports['internal_offset'] - b.catalog.ports['internal_count'] + 2}")


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(1, n + 1) if n % d == 0)


def final_checks(b: Build) -> Build:
    """The final command as its release reads it: the layout, the GPUs per node; then the warnings. Raises every
    mistake of the build (those noted on the way included) at once."""
    mistakes = Mistakes()
    for message in b.mistakes:
        mistakes.add(message)
    parsed = mistakes.attempt(namespace, b)
    if parsed is None:
        mistakes.raise_any()
    b = b.with_(namespace=parsed)
    mistakes.attempt(check_parallel_layout, b)
    mistakes.attempt(_fits_node, b)
    mistakes.raise_any()
    moved = revision_warning(b.model, b.cell)
    if moved:
        b = b.warn(moved)
    if not b.cell.verified:
        who = "upstream has not run it" if b.cell.origin == "cookbook" else "from sglang_recipes, marked unverified"
        b = b.warn(f"{b.where} is an unverified recipe ({who}); test it before production")
    checkpoint = checkpoint_of(b.model, b.cell.gpu, b.cell.quant)
    if checkpoint.get("experimental"):
        b = b.warn(checkpoint.get("note") or f"{checkpoint['id']} is experimental")
    if argv.has(b.args, "--speculative-algorithm") and not argv.has(b.args, "--max-running-requests"):
        b = b.warn(f"speculative decoding is on and --max-running-requests is not set: SGLang caps running "
                   f"requests at {SPECULATIVE_CAP}. Set it with sglang_extra_args if you need more")
    return b


def _fits_node(b: Build) -> None:
    """The GPUs per node the final command asks for (TP x PP over the nodes) against the node's; named after the
    input that set the size (a cell's own size: sglang_nodes)."""
    per_node = gpus_per_node(b)
    have = int(b.platform.get("gpus_per_node", per_node))
    if per_node <= have:
        return
    sizes = [a for a in (_given(b, "--tp-size"), _given(b, "--pp-size")) if a is not None]
    mine = [a for a in sizes if not a.origin.startswith("cell ")]
    who = mine[0].origin if mine else "sglang_nodes"
    tp, _dp, pp = _sizes(b)
    layout = f"--tp-size {tp}" + (f" x --pp-size {pp}" if pp > 1 else "")
    raise RecipeError(f"{who}: {layout} asks for {per_node} GPUs per node in {b.where}; a {b.cell.gpu} node has "
                      f"{have}. Use more nodes (sglang_nodes) or a smaller TP size")


def gpus_per_node(b: Build) -> int:
    total = int(_ns(b, "--tp-size", 1)) * int(_ns(b, "--pp-size", 1))
    return max(1, total // b.cell.nodes)


# --- public API ------------------------------------------------------------------------------------

#: builds of identical selections in one site (a rack of identical nodes) are made once; Build is frozen
_BUILDS: dict[str, Build] = {}


def build(selection: Any) -> Build:
    """The recipe of a selection, built once per distinct selection (Build is immutable, so sharing is safe)."""
    try:
        key = json.dumps(selection, sort_keys=True)
    except (TypeError, ValueError):
        return _build(selection)
    if key not in _BUILDS:
        if len(_BUILDS) > 4096:
            _BUILDS.clear()
        _BUILDS[key] = _build(selection)
    return _BUILDS[key]


def _build(selection: Any) -> Build:
    """The recipe of one selection. Every mistake is collected (the values of the wrong type, the input checks, each
    knob, each extra or removed flag, each flag the release does not know, the final layout) and raised at once;
    only a mistake that leaves nothing to build on (no cell, no release, no ports) stops early."""
    catalog = load_catalog(
        selection.get("recipes") if isinstance(selection, dict) else None,
        selection.get("gpu_platforms") if isinstance(selection, dict) else None,
    )
    sel, mistakes = checked_selection(selection, catalog.variables["recipe"])  # a refused value stands at its default
    for check in input_checks.CHECKS:
        mistakes.attempt(check, sel)
    chosen = mistakes.attempt(select_cell, catalog, sel)
    if chosen is None:
        mistakes.raise_any()
    model, platform, cell = chosen
    mistakes.attempt(input_checks.check_release, sel, model.id, model.min_sglang)
    release = mistakes.attempt(resolve_release, catalog, model, sel)
    ports = mistakes.attempt(resolve_ports, catalog, sel)
    if ports is None and sel["pd"] is not None:  # a PD setting that cannot be read: noted, judged without it
        sel = {**sel, "pd": None}
        ports = mistakes.attempt(resolve_ports, catalog, sel)
    if release is None or ports is None:
        mistakes.raise_any()
    version, _image, release_warnings = release
    port, dist = ports
    checkpoint = checkpoint_of(model, cell.gpu, cell.quant)["id"]
    args = [argv.Arg("--model-path", checkpoint, "cell")]
    where = f"cell {cell.gpu}/{cell.quant}/{cell.strategy}"
    args += [argv.Arg(name, argv.as_value(value), f"sglang_recipes ({where})" if cell.origin == "site" else where)
             for name, value in cell.flags]
    b = Build(sel=sel, catalog=catalog, model=model, platform=platform, cell=cell, version=version,
              args=args, env=dict(cell.env), port=port, dist_port=dist,
              warnings=model.notes + tuple(release_warnings), mistakes=tuple(mistakes.found))
    b = knobs.cell_args(b)
    for knob in KNOB_ORDER:
        b = _step(knob, b)
    b = knobs.apply_extra_args(b)
    b = knobs.apply_remove_args(b)
    b = knobs.apply_listen(b)
    b = _step(lambda x: (knobs.check_env(sel["env"] or {}), x)[1], b)
    b = b.with_(env={**b.env, **{str(k): str(v) for k, v in (sel["env"] or {}).items()}})
    return final_checks(judge_claims(parsed(_step(translate, b))))


def _step(step: Callable[[Build], Build], b: Build) -> Build:
    """One step of the build; a mistake is noted and the build goes on without that step."""
    try:
        return step(b)
    except RecipeError as exc:
        return b.refuse(exc)


def judge_claims(b: Build) -> Build:
    """Flags the operator gave that the collection sets (knobs.Claim), judged on the final command as the release's
    parser reads it: the same value is agreement (accepted, with a warning that the flag is the collection's to
    set), another value a contradiction (refused, naming the variable that sets it)."""
    table = knobs.cli_table(b.version)
    if not b.claims or table is None:
        return b
    reference = argv.tokens(b.args) + (["--nnodes", str(b.cell.nodes)] if b.cell.nodes > 1 else [])
    try:
        before = cli.parse(reference, table)
    except cli.CliError:
        return b  # the command itself is refused: final_checks names why
    for claim in b.claims:
        try:
            b = b.warn(_agreement(claim, before, reference, table, b))
        except RecipeError as exc:
            b = b.refuse(exc)
    return b


#: the flags the collection sets per member of a multi-node instance: no one value agrees with every member
PER_MEMBER = ("--node-rank", "--dist-init-addr")


def _agreement(claim: knobs.Claim, before: cli.Parsed, reference: list[str], table: cli.Table, b: Build) -> str:
    """The warning of a claim that agrees with the final command; raises the contradiction."""
    dest = claim.flag.dest or ""
    written = knobs.shown_flag(claim.flag, claim.canonical, b.version)
    given = " ".join([written, *_value_tokens(claim.value)])
    ours = " ".join([claim.canonical, *_value_tokens(_reference_value(b, claim.canonical))])
    if claim.canonical in PER_MEMBER and b.cell.nodes > 1:
        raise RecipeError(f"{claim.variable}: {given}: the collection sets {claim.canonical} for each member of "
                          f"{b.where} from {claim.owner}; drop it")
    if claim.value is None:  # a removal agrees when the collection does not set the flag either
        if not before.given(dest):
            return (f"{claim.variable}: {written} is not set on {b.where} ({claim.owner} decides it); nothing to "
                    "remove, drop it")
        raise RecipeError(f"{claim.variable}: removing {written} contradicts {claim.owner}, which sets {ours}; "
                          f"change {claim.owner} instead")
    try:
        after = cli.parse(reference + [claim.flag.written, *_value_tokens(claim.value)], table)
    except cli.CliError as exc:
        raise RecipeError(f"{claim.variable}: SGLang {b.version}'s parser refuses {given}: {exc.message}") from None
    if after.namespace.get(dest) == before.namespace.get(dest):
        return (f"{claim.variable}: {given} agrees with what the collection sets ({claim.owner}); the collection "
                "keeps setting it, drop it")
    shown = ours if before.given(dest) else f"no {claim.canonical}"
    raise RecipeError(f"{claim.variable}: {given} contradicts {claim.owner}, which gives the command {shown}; change "
                      f"{claim.owner} instead")


def _value_tokens(value: Any) -> list[str]:
    if value is True or value is None:
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _reference_value(b: Build, canonical: str) -> Any:
    i = argv.find(b.args, canonical)
    if i < 0:
        return str(b.cell.nodes) if canonical == "--nnodes" and b.cell.nodes > 1 else None
    value = b.args[i].value
    return True if value is None else value


def recipe(selection: Any) -> dict[str, Any]:
    return copy.deepcopy(recipe_of(build(selection)))  # the caller's own copy


def replica_build(b: Build, port: int, nccl_port: int) -> Build:
    """One of several servers of a single-node cell on one node (sglang_replicas): the same command on its own --port,
    with --nccl-port pinned before --host/--port (unpinned, SGLang takes a free port at start, and two replicas
    starting together can take the same one: data/sglang/ports.yml). A command that already sets the NCCL port, under
    any spelling, is refused: every replica would bind it."""
    given = _given(b, "--nccl-port")
    if given is not None:
        raise RecipeError(f"{given.origin}: sets --nccl-port, but the servers of sglang_replicas on one node each need "
                          f"their own; the plan pins it per replica (--port + "
                          f"{b.catalog.ports['replica_nccl_offset']}): drop it")
    args = argv.drop(b.args, "--host", "--port") + [
        argv.Arg("--nccl-port", str(nccl_port), "sglang_replicas"),
        argv.Arg("--host", b.sel["host"], "sglang_host"), argv.Arg("--port", str(port), "sglang_replicas")]
    replica = b.with_(args=args, port=port, namespace=None)
    replica = replica.with_(namespace=namespace(replica))
    check_parallel_layout(replica)  # ports in range, as the release reads them
    return replica


def bootstrap_port(b: Build) -> int | None:
    """The PD bootstrap port the final command uses (an extra arg can move it), None for non-PD."""
    if not b.sel["pd"]:
        return None
    given = _flag_int(b, "--disaggregation-bootstrap-port")
    return given or b.sel["pd"].get("bootstrap_port") or b.catalog.ports["pd_bootstrap"]


def listen_ports(b: Build) -> dict[str, int]:
    """Every TCP port the server's own command opens, by the flag (or block) that opens it."""
    dist = b.dist_port if b.sel["nodes"] > 1 else None
    out = {internal_label(b.catalog.ports, b.port, port, dist): port
           for port in serve_ports(b.port, b.catalog.ports, dist)[1:]}
    out["--port"] = b.port
    for name in PORT_FLAGS[1:]:
        port = _flag_int(b, name)
        if port is not None:
            out[name] = port
    if b.sel["pd"] and b.sel["pd"].get("role") == "prefill":
        out["--disaggregation-bootstrap-port"] = bootstrap_port(b) or b.catalog.ports["pd_bootstrap"]
    return out


_RECIPES: dict[int, tuple[Build, dict[str, Any]]] = {}


def recipe_of(b: Build) -> dict[str, Any]:
    """The node-independent command of a Build and its metadata (made once per Build; treat it as read-only)."""
    cached = _RECIPES.get(id(b))
    if cached is None or cached[0] is not b:
        if len(_RECIPES) > 4096:
            _RECIPES.clear()
        cached = _RECIPES[id(b)] = (b, _recipe_of(b))
    return cached[1]


def _recipe_of(b: Build) -> dict[str, Any]:
    _version, image, _warnings = resolve_release(b.catalog, b.model, b.sel)
    checkpoint = checkpoint_of(b.model, b.cell.gpu, b.cell.quant)
    pd = b.sel["pd"] or {}
    return {
        "model": b.model.id,
        "checkpoint": checkpoint["id"],
        "checkpoint_size_gb": checkpoint.get("size_gb"),
        "gpu": b.cell.gpu,
        "vendor": b.vendor,
        "quant": b.cell.quant,
        "strategy": b.cell.strategy,
        "nodes": b.cell.nodes,
        "gpus_per_node": gpus_per_node(b),
        "verified": b.cell.verified,
        "origin": b.cell.origin,
        "cookbook_revision": b.cell.revision or None,
        "image": image,
        "sglang_version": b.version,
        "env": dict(b.env),
        "args": argv.tokens(b.args),
        "served_model_name": argv.get(b.args, "--served-model-name") or checkpoint["id"],
        "port": b.port,
        "dist_port": b.dist_port,
        "ports": serve_ports(b.port, b.catalog.ports, b.dist_port if b.sel["nodes"] > 1 else None),
        "pd_role": pd.get("role"),
        "bootstrap_port": bootstrap_port(b),
        "listen_ports": listen_ports(b),
        "speculative": argv.get(b.args, "--speculative-algorithm"),
        "metrics": argv.has(b.args, knobs.METRICS_FLAG),
        "warnings": list(b.warnings),
    }


def format_address(host: str, port: int) -> str:
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]:{port}"
    except ValueError:
        pass
    return f"{host}:{port}"


def serve_args(selection: Any, node_rank: Any = 0, head_address: Any = None) -> list[str]:
    """argv after `sglang serve` for one node; multi-node adds --nnodes/--node-rank/--dist-init-addr
    right after the last parallelism flag (search order --enable-dp-attention, --dp-size, --tp-size,
    else --model-path), as the cookbook does."""
    return node_args(build(selection), node_rank, head_address)


def node_args(b: Build, node_rank: Any = 0, head_address: Any = None) -> list[str]:
    """serve_args for a Build already made (the plan builds each host's recipe once)."""
    nodes = b.cell.nodes
    if isinstance(node_rank, bool) or not isinstance(node_rank, int):
        if isinstance(node_rank, str) and node_rank.isdigit():
            node_rank = int(node_rank)
        else:
            raise RecipeError(f"node_rank: expected an integer 0..{nodes - 1}, got {node_rank!r}")
    if not 0 <= node_rank < nodes:
        raise RecipeError(f"node_rank: {node_rank} is out of range for sglang_nodes: {nodes} (ranks 0..{nodes - 1}); "
                          "check the members of sglang_instance_group")
    if nodes == 1:
        return argv.tokens(b.args)
    if not head_address or not isinstance(head_address, str):
        raise RecipeError(f"head_address: {b.where} runs over {nodes} nodes and needs the head's address; set "
                          "sglang_instance_group (its first member is the head) or pass head_address")
    trio = [argv.Arg("--nnodes", str(nodes), "sglang_nodes"),
            argv.Arg("--node-rank", str(node_rank), "sglang_instance_group"),
            argv.Arg("--dist-init-addr", format_address(head_address, b.dist_port), "sglang_instance_group")]
    anchor = next(a for a in MULTINODE_ANCHORS if argv.has(b.args, a))
    return argv.tokens(argv.insert_after(b.args, anchor, trio))


def router_args(spec: Any) -> list[str]:
    """argv after `python3 -m sglang_router.launch_router` (router_command, without its warnings)."""
    return router_command(spec)[0]


def router_command(spec: Any) -> tuple[list[str], list[str]]:
    """(argv after `python3 -m sglang_router.launch_router`, warnings).

    spec: {mode: pd|plain, prefill: [url or {url, bootstrap_port}], decode: [url], workers: [url],
           host: 0.0.0.0, port (data/sglang/ports.yml's router when unset), metrics_port (--prometheus-host/-port;
           None leaves sglang-router's own default), policy: str|None, extra_args: [tokens]}
    """
    if not isinstance(spec, dict):
        raise RecipeError(f"router spec: expected a mapping, got {type(spec).__name__}")
    catalog = load_catalog()
    mode = spec.get("mode") or ("pd" if spec.get("prefill") or spec.get("decode") else "plain")
    out, defaults = _router_workers(spec, mode, catalog)
    host = str(spec.get("host") or "0.0.0.0")
    out += ["--host", host, "--port", str(spec.get("port") or catalog.ports["router"])]
    table = router_table()
    extra, claims = router_extra_split([str(t) for t in spec.get("extra_args") or []], table)
    given = {d for d in (_dest_of(t, table) for t in extra if t.startswith("-")) if d}
    if spec.get("metrics_port"):
        out += ["--prometheus-host", host, "--prometheus-port", str(spec["metrics_port"])]
    if spec.get("policy"):
        out += ["--policy", str(spec["policy"])]
    # a default the extra args set again is theirs to set (data/sglang/router.yml: "override them")
    kept = [t for t in _by_flag([str(t) for t in defaults]) if _dest_of(t[0], table) not in given]
    argv_out = out + [token for group in kept for token in group] + extra
    try:
        cli.parse(argv_out, table)
    except cli.CliError as exc:  # a value of the extra args that sglang-router refuses: named there, not as the unit's
        mine = exc.option is not None and any(_dest_of(t, table) == exc.dest for t in extra if t.startswith("-"))
        raise RecipeError(f"{'sglang_router_extra_args' if mine else 'the router command'}: sglang-router "
                          f"{table.release}'s parser refuses it: {exc.message}") from None
    return argv_out, router_claims(argv_out, claims, table)


def _router_workers(spec: dict[str, Any], mode: str, catalog: Catalog) -> tuple[list[str], list[Any]]:
    """The worker flags of a router's command, and the defaults of its mode (data/sglang/router.yml)."""
    out: list[str] = []
    if mode == "pd":
        prefill, decode = spec.get("prefill") or [], spec.get("decode") or []
        if not prefill or not decode:
            raise RecipeError(
                f"sglang_router_workers_group: a PD router needs at least one prefill and one decode worker; "
                f"found {len(prefill)} prefill and {len(decode)} decode")
        out.append("--pd-disaggregation")
        for worker in prefill:
            url, bootstrap = (worker.get("url"), worker.get("bootstrap_port")) if isinstance(worker, dict) else (worker, None)
            out += ["--prefill", str(url)]
            if bootstrap and bootstrap != catalog.ports["pd_bootstrap"]:
                out.append(str(bootstrap))
        for url in decode:
            out += ["--decode", str(url)]
        return out, catalog.router.get("pd_defaults", [])
    if mode == "plain":
        workers = spec.get("workers") or []
        if not workers:
            raise RecipeError("sglang_router_workers_group: the router has no workers; name a group of servers")
        return out + ["--worker-urls", *map(str, workers)], catalog.router.get("plain_defaults", [])
    raise RecipeError(f"sglang_router_mode: {mode!r} is not one of pd, plain")


def router_claims(argv_out: list[str], claims: list[tuple[list[str], str, str]], table: cli.Table) -> list[str]:
    """Flags of sglang_router_extra_args that the collection sets, judged as sglang-router reads them: the value the
    command already gives is a warning, another value is refused naming the variable that sets it (all at once)."""
    warnings, mistakes = [], Mistakes()
    if not claims:
        return warnings
    before = cli.parse(argv_out, table)
    for tokens, canonical, owner in claims:
        written = tokens[0].split("=", 1)[0]
        shown = written if written == canonical else f"{written} (to sglang-router the same as {canonical})"
        given = " ".join([shown, *tokens[1:]]) if "=" not in tokens[0] else f"{shown} {tokens[0].split('=', 1)[1]}"
        dest = table.dest(canonical)
        try:
            after = cli.parse(argv_out + tokens, table)
        except cli.CliError as exc:
            mistakes.add(f"sglang_router_extra_args: sglang-router {table.release}'s parser refuses {given}: {exc.message}")
            continue
        if after.namespace.get(dest) == before.namespace.get(dest):
            warnings.append(f"sglang_router_extra_args: {given} agrees with what the collection sets ({owner}); the "
                            "collection keeps setting it, drop it")
        else:
            mistakes.add(f"sglang_router_extra_args: {given} contradicts {owner}, which gives the command "
                         f"{canonical} {' '.join(map(str, _flag_tokens(argv_out, table, dest))) or '(its default)'}; "
                         f"change {owner} instead")
    mistakes.raise_any()
    return warnings


def _flag_tokens(argv_in: list[str], table: cli.Table, dest: str) -> list[str]:
    """The values the command gives the flags of one dest (as written)."""
    out: list[str] = []
    for group in _by_flag(argv_in):
        if _dest_of(group[0], table) == dest:
            out += group[1:]
    return out


def router_table() -> cli.Table:
    """sglang-router's flag table (the pinned router release the installs carry)."""
    release = str(load_catalog().versions["router_pinned"])
    doc = router_flag_table_doc(release)
    if doc is None:
        raise RecipeError(f"sglang-router {release} has no flag table in this collection (data/sglang/versions.yml "
                          "router_flag_tables); regenerate it: tools/sglang_flag_table.py --from-parser --router")
    return cli.Table.of(doc)


def _by_flag(tokens: list[str]) -> list[list[str]]:
    """Tokens grouped per flag: [--flag, value...]."""
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("--") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def _dest_of(token: str, table: cli.Table) -> str | None:
    try:
        return table.dest(cli.resolve(token.split("=", 1)[0], table))
    except cli.CliError:
        return None


def router_extra_split(extra: list[str], table: cli.Table) -> tuple[list[str], list[tuple[list[str], str, str]]]:
    """sglang_router_extra_args as sglang-router reads them: (the tokens that go on the command, the flags the
    collection sets, each as (its tokens, the canonical flag, the owning variable)). A secret flag, a secret-shaped
    value, an unknown flag or an ambiguous prefix is refused; every such mistake is named at once."""
    owned = managed()["router"]
    owners = {table.dest(f): (f, o) for f, o in owned["collection"].items() if f in table.flags}
    secrets = {table.dest(f): f for f in owned["secret"] if f in table.flags}
    mistakes = Mistakes()
    kept: list[str] = []
    claims: list[tuple[list[str], str, str]] = []
    for group in _by_flag(extra):
        kinds = [k for k in (secret_kind(t) for t in group) if k]
        if kinds:
            mistakes.add(f"sglang_router_extra_args: a value holds {kinds[0]}; secrets never go on the command line "
                         "(ps, the unit file, the plan and --diff show it)")
            continue
        if not group[0].startswith("-"):
            kept += group
            continue
        name = group[0].split("=", 1)[0]
        try:
            dest = table.dest(cli.resolve(name, table))
        except cli.CliError as exc:
            mistakes.add(f"sglang_router_extra_args: {name} is ambiguous to sglang-router {table.release} ({exc.message}); "
                         "write the whole flag name" if exc.message.startswith("ambiguous option") else
                         f"sglang_router_extra_args: sglang-router {table.release} has no flag {name}"
                         f"{knobs.suggest(name, table.flags)}")
            continue
        if dest in secrets:
            mistakes.add(f"sglang_router_extra_args: {name} would put a secret on the command line (visible in ps and "
                         "the unit file); the router's API key is not managed by this collection yet, so keep the "
                         "router on a private network")
        elif dest in owners:
            claims.append((group, *owners[dest]))
        else:
            kept += group
    mistakes.raise_any()
    return kept, claims
