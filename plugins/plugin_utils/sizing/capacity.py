# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many nodes of each cookbook cell a target load needs, from the published speed points.

The cookbook publishes, per cell, a few speed points of sglang.bench_serving at one workload (random prompts of
ISL input and OSL output tokens, e.g. 8192/1024): at each --max-concurrency the TTFT, the TPOT and the total
(input + output) tokens/s per GPU. For a target load and TTFT/TPOT limits, each cell gets its best operating point:
the highest throughput at which TTFT and TPOT stay within the limits, on the straight lines between neighbouring
concurrency points (TTFT, TPOT and throughput each interpolated linearly in the concurrency), never below the
first published concurrency or above the last. One instance then serves, at the workload,

    requests/s           = tok_s_per_gpu x GPUs of the instance / (ISL + OSL)
    output tokens/s      = tok_s_per_gpu x GPUs of the instance x OSL / (ISL + OSL)

the target needs ceil(target / that) instances, and an instance of fewer GPUs than a node shares the node with
others (floor(node GPUs / instance GPUs) per node; one instance over N nodes takes N nodes). Arithmetic is exact
(fractions of the published decimals); the report rounds. Measured points (playbooks/benchmark.yml's
rendered/benchmark/<host>.json) are sized the same way, beside the published ones, when they ran the same workload.

Pure: capacity() returns plain data; markdown() and plot_png() present it (plot_png needs matplotlib).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Mapping

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (
    DATA_DIR,
    Catalog,
    Cell,
    benchmarks_path,
    load_catalog,
    read_yaml,
    with_revision,
)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

TARGET_KINDS = ("requests_per_s", "output_tokens_per_s")
KNOWN_KEYS = {"model", "gpu", "quant", "cookbook_revision", "ttft_ms", "tpot_ms", "recipes", "gpu_platforms",
              *TARGET_KINDS}


@dataclass(frozen=True)
class Point:
    """One speed point: at `concurrency` requests in flight, TTFT and TPOT (ms; None where the page measured none)
    and total tokens/s per GPU."""
    concurrency: Fraction
    ttft_ms: Fraction | None
    tpot_ms: Fraction | None
    tok_s_per_gpu: Fraction


@dataclass(frozen=True)
class Target:
    kind: str  # requests_per_s | output_tokens_per_s
    value: Fraction
    ttft_ms: Fraction | None  # limit; None: no limit
    tpot_ms: Fraction | None


def exact(value: Any) -> Fraction:
    """A published or given number as an exact fraction (14.20 stays 1420/100, not a binary float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)):
        raise ValueError(f"{value!r} is not a number")
    return Fraction(str(value)) if not isinstance(value, Fraction) else value


def target_of(spec: Mapping[str, Any]) -> Target:
    """The target load and limits of a capacity request; every mistake named in one message."""
    problems = []
    unknown = sorted(set(spec) - KNOWN_KEYS)
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}")
    given = [k for k in TARGET_KINDS if spec.get(k) not in (None, "")]
    if len(given) != 1:
        problems.append(f"give exactly one of requests_per_s and output_tokens_per_s (the load at the published "
                        f"workload); got {', '.join(given) or 'neither'}")
    numbers: dict[str, Fraction | None] = {}
    for key in (*given, "ttft_ms", "tpot_ms"):
        raw = spec.get(key)
        if raw in (None, ""):
            numbers[key] = None
            continue
        try:
            numbers[key] = exact(raw)
        except (ValueError, ZeroDivisionError):
            problems.append(f"{key}: {raw!r} is not a number")
            continue
        if numbers[key] <= 0:  # type: ignore[operator]
            problems.append(f"{key}: {raw!r} must be greater than 0")
    if problems:
        raise RecipeError("capacity: " + "; ".join(problems))
    kind = given[0]
    return Target(kind=kind, value=numbers[kind], ttft_ms=numbers["ttft_ms"],  # type: ignore[arg-type]
                  tpot_ms=numbers["tpot_ms"])


def _maybe(value: Any) -> Fraction | None:
    return None if value is None else exact(value)


def points_of(speed: Iterable[Mapping[str, Any]]) -> list[Point]:
    out = sorted((Point(exact(s["concurrency"]), _maybe(s.get("ttft_ms")), _maybe(s.get("tpot_ms")),
                        exact(s["tok_s_per_gpu"])) for s in speed), key=lambda p: p.concurrency)
    if len({p.concurrency for p in out}) != len(out):
        raise ValueError("two speed points at the same concurrency")
    return out


def _between(a: Fraction | None, b: Fraction | None, t: Fraction) -> Fraction | None:
    return None if a is None or b is None else a + (b - a) * t


def at(a: Point, b: Point, concurrency: Fraction) -> Point:
    """The point at a concurrency between two published ones: each metric on the straight line between them."""
    if not a.concurrency <= concurrency <= b.concurrency:
        raise ValueError(f"concurrency {concurrency} is outside {a.concurrency}..{b.concurrency}: no extrapolation")
    t = (concurrency - a.concurrency) / (b.concurrency - a.concurrency)
    return Point(concurrency, _between(a.ttft_ms, b.ttft_ms, t), _between(a.tpot_ms, b.tpot_ms, t),
                 _between(a.tok_s_per_gpu, b.tok_s_per_gpu, t))


def _within(lo: Fraction, hi: Fraction, a: Fraction, b: Fraction, limit: Fraction | None,
            ca: Fraction, cb: Fraction) -> tuple[Fraction, Fraction] | None:
    """Narrow [lo, hi] to the concurrencies where the metric, a at ca and b at cb (linear), stays <= limit."""
    if limit is None:
        return lo, hi
    if a == b:
        return (lo, hi) if a <= limit else None
    edge = ca + (limit - a) * (cb - ca) / (b - a)
    lo, hi = (lo, min(hi, edge)) if b > a else (max(lo, edge), hi)
    return (lo, hi) if lo <= hi else None


def best_point(points: list[Point], ttft_ms: Fraction | None, tpot_ms: Fraction | None) -> Point | None:
    """The highest-throughput point within both limits on the piecewise-linear curve through `points`, from the
    first published concurrency to the last; None when no such point exists."""
    def ok(p: Point) -> bool:
        return (ttft_ms is None or p.ttft_ms <= ttft_ms) and (tpot_ms is None or p.tpot_ms <= tpot_ms)

    candidates = [p for p in points if ok(p)]
    for a, b in zip(points, points[1:]):
        span: tuple[Fraction, Fraction] | None = (a.concurrency, b.concurrency)
        for metric, limit in (("ttft_ms", ttft_ms), ("tpot_ms", tpot_ms)):
            if span is not None:
                span = _within(span[0], span[1], getattr(a, metric), getattr(b, metric), limit,
                               a.concurrency, b.concurrency)
        if span is not None:
            candidates += [at(a, b, span[0]), at(a, b, span[1])]
    if not candidates:
        return None
    return max(candidates, key=lambda p: (p.tok_s_per_gpu, -p.concurrency))


def per_instance(point: Point, gpus: int, isl: int, osl: int) -> dict[str, Fraction]:
    total = point.tok_s_per_gpu * gpus
    return {"requests_per_s": total / (isl + osl), "output_tokens_per_s": total * osl / (isl + osl)}


def cell_gpus(cell: Cell) -> int:
    """GPUs of one instance of the cell: --tp-size x --pp-size (1 where a cell has neither)."""
    flags = dict(cell.flags)
    return int(flags.get("--tp-size", 1)) * int(flags.get("--pp-size", 1))


def _f(value: Fraction, digits: int = 2) -> float:
    return round(float(value), digits)


def _why_not(points: list[Point], target: Target) -> str:
    fastest_ttft = min(points, key=lambda p: p.ttft_ms)  # type: ignore[arg-type,return-value]
    fastest_tpot = min(points, key=lambda p: p.tpot_ms)  # type: ignore[arg-type,return-value]
    parts = []
    if target.ttft_ms is not None and fastest_ttft.ttft_ms > target.ttft_ms:
        parts.append(f"its lowest published TTFT is {_f(fastest_ttft.ttft_ms, 1):g} ms (concurrency "
                     f"{fastest_ttft.concurrency}), over the {_f(target.ttft_ms, 1):g} ms limit")
    if target.tpot_ms is not None and fastest_tpot.tpot_ms > target.tpot_ms:
        parts.append(f"its lowest published TPOT is {_f(fastest_tpot.tpot_ms):g} ms (concurrency "
                     f"{fastest_tpot.concurrency}), over the {_f(target.tpot_ms):g} ms limit")
    return "; ".join(parts) or "no point meets both limits at once"


def judgeable(points: list[Point], target: Target) -> tuple[list[Point], str]:
    """The points that state every metric the target limits, and why the others cannot be judged."""
    lacking = [m for m, limit in (("TTFT", target.ttft_ms), ("TPOT", target.tpot_ms))
               if limit is not None and any(getattr(p, m.lower() + "_ms") is None for p in points)]
    kept = [p for p in points if (target.ttft_ms is None or p.ttft_ms is not None)
            and (target.tpot_ms is None or p.tpot_ms is not None)]
    why = f"the page published no {' and no '.join(lacking)} at some of its points" if lacking else ""
    return kept, why


def size(points: list[Point], gpus: int, nodes: int, node_gpus: int, isl: int, osl: int,
         target: Target) -> dict[str, Any]:
    """One cell (or one measured run): its operating point within the limits and the nodes the target needs."""
    points, lacking = judgeable(points, target)
    if not points:
        return {"status": "no published numbers", "reason": lacking}
    best = best_point(points, target.ttft_ms, target.tpot_ms)
    if best is None:
        return {"status": "no point meets the limits", "reason": _why_not(points, target)}
    capacity = per_instance(best, gpus, isl, osl)
    instances = math.ceil(target.value / capacity[target.kind])
    per_node = max(1, node_gpus // gpus) if nodes == 1 else 1
    need = instances * nodes if nodes > 1 else math.ceil(Fraction(instances, per_node))
    return {
        "status": "ok",
        "interpolated": best.concurrency not in {p.concurrency for p in points},
        "concurrency": _f(best.concurrency, 1),
        "ttft_ms": None if best.ttft_ms is None else _f(best.ttft_ms, 1),
        "tpot_ms": None if best.tpot_ms is None else _f(best.tpot_ms),
        "tok_s_per_gpu": _f(best.tok_s_per_gpu, 1),
        "instance": {"requests_per_s": _f(capacity["requests_per_s"], 3),
                     "output_tokens_per_s": _f(capacity["output_tokens_per_s"], 1)},
        "instances": instances, "instances_per_node": per_node, "nodes": need, "gpus": need * node_gpus,
    }


def _key(cell: Mapping[str, Any]) -> tuple[str, str, str, int]:
    return (str(cell["gpu"]), str(cell["quant"]), str(cell["strategy"]), int(cell["nodes"]))


def _model_cells(request: Mapping[str, Any], catalog: Catalog) -> tuple[Any, list[Cell]]:
    model_id = str(request.get("model") or "glm-5.3")
    if model_id not in catalog.models:
        raise RecipeError(f"capacity: model {model_id!r} is not one of {', '.join(sorted(catalog.models))}")
    model = with_revision(catalog.models[model_id], request.get("cookbook_revision"))
    gpu, quant = request.get("gpu"), request.get("quant")
    cells = [c for c in model.cells if (not gpu or c.gpu == gpu) and (not quant or c.quant == quant)]
    if not cells:
        offered = sorted({f"{c.gpu}/{c.quant}" for c in model.cells})
        raise RecipeError(f"capacity: {model_id} has no cell for gpu {gpu or 'any'} and quant {quant or 'any'} "
                          f"(cookbook revision {model.revision}); it has {', '.join(offered)}")
    return model, cells


def workloads(speed: Iterable[Mapping[str, Any]], isl: Any, osl: Any) -> dict[tuple[Any, Any], list[dict[str, Any]]]:
    """The published points grouped by the workload each ran at (a point's own isl/osl, else the file's), in order:
    points of different workloads are never interpolated together."""
    out: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for point in speed:
        out.setdefault((point.get("isl", isl), point.get("osl", osl)), []).append(dict(point))
    return out


def published_rows(base: dict[str, Any], entry: Mapping[str, Any] | None, isl: Any, osl: Any, node_gpus: int,
                   cell: Cell, target: Target, revision: str) -> list[dict[str, Any]]:
    """One row per workload the cell's published points ran at; a row saying why not where there are none."""
    groups = workloads((entry or {}).get("speed") or [], isl, osl)
    if not groups or not all(shape[0] and shape[1] for shape in groups):
        return [{**base, "source": "published", "status": "no published numbers", "points": [],
                 "reason": f"cookbook revision {revision} publishes no speed points for this cell"}]
    rows = []
    for (w_isl, w_osl), points in groups.items():
        row = {**base, "source": "published", "sglang": (entry or {}).get("sglang"), "isl": w_isl, "osl": w_osl,
               "latency": (entry or {}).get("latency"), "points": points,
               **size(points_of(points), cell_gpus(cell), cell.nodes, node_gpus, int(w_isl), int(w_osl), target)}
        if (entry or {}).get("simulated_accept_length"):
            row["simulated_accept_length"] = entry["simulated_accept_length"]  # type: ignore[index]
        rows.append(row)
    return rows


def measured_rows(base: dict[str, Any], runs: list[Mapping[str, Any]], shapes: set[tuple[Any, Any]],
                  node_gpus: int, cell: Cell, target: Target) -> list[dict[str, Any]]:
    """The cell's measured runs (benchmark.yml), each sized at its workload when the page published that one."""
    rows = []
    for run in runs:
        if _key(run.get("cell") or {}) != cell.key:
            continue
        common = {**base, "source": f"measured on {run.get('host')}", "sglang": run.get("sglang"), "latency": "P50",
                  "isl": run.get("isl"), "osl": run.get("osl"), "points": [dict(p) for p in run.get("points") or []]}
        if (run.get("isl"), run.get("osl")) not in shapes:
            published = " or ".join(f"{i} / {o}" for i, o in sorted(shapes, key=str)) or "none"
            reason = f"measured at ISL {run.get('isl')} / OSL {run.get('osl')}, not the published {published}"
            rows.append({**common, "status": "other workload", "reason": reason})
        elif not run.get("points"):
            rows.append({**common, "status": "no published numbers", "reason": "the run holds no speed point"})
        else:
            rows.append({**common, **size(points_of(run["points"]), int(run.get("gpus") or cell_gpus(cell)),
                                          cell.nodes, node_gpus, int(run["isl"]), int(run["osl"]), target)})
    return rows


def capacity(request: Mapping[str, Any], measured: Iterable[Mapping[str, Any]] = (),
             data_dir: Path = DATA_DIR, catalog: Catalog | None = None) -> dict[str, Any]:
    """Per cell of the model on the GPU (all its GPUs when gpu is unset; one precision when quant is set), the
    nodes a target load needs from the published speed points of the cookbook revision (one row per workload the
    points ran at), and from each measured run of the same cell and workload (playbooks/benchmark.yml's
    rendered/benchmark/<host>.json) beside it.

    request: {model, gpu, quant, cookbook_revision, requests_per_s | output_tokens_per_s, ttft_ms, tpot_ms,
              recipes, gpu_platforms (a site's additions, as the recipe filter takes them: a model of the site's
              own folder is sized from its own benchmarks.yml)}."""
    if not isinstance(request, Mapping):
        raise RecipeError(f"capacity: expected a mapping such as {{model: glm-5.3, gpu: h200, requests_per_s: 10}}, "
                          f"got {type(request).__name__}")
    target = target_of(request)
    catalog = catalog or load_catalog(request.get("recipes"), request.get("gpu_platforms"), data_dir)
    model, cells = _model_cells(request, catalog)
    path = benchmarks_path(model.id, model.revision or None, data_dir, model=model)
    doc = read_yaml(path) if path.exists() else {}
    load = doc.get("workload") or {}
    published = {_key(e): e for e in doc.get("cells") or []}
    runs = [m for m in measured if m.get("model") == model.id]
    rows = []
    for cell in cells:
        node_gpus = int(catalog.gpus.get(cell.gpu, {}).get("gpus_per_node") or cell_gpus(cell))
        base = {"gpu": cell.gpu, "quant": cell.quant, "strategy": cell.strategy, "nodes_per_instance": cell.nodes,
                "gpus_per_instance": cell_gpus(cell), "verified": cell.verified}
        cell_rows = published_rows(base, published.get(cell.key), load.get("isl"), load.get("osl"), node_gpus, cell,
                                   target, model.revision)
        shapes = {(r["isl"], r["osl"]) for r in cell_rows if r.get("isl")} or {(load.get("isl"), load.get("osl"))}
        rows += cell_rows + measured_rows(base, runs, shapes, node_gpus, cell, target)
    return {
        "model": model.id, "display_name": model.display_name, "gpu": request.get("gpu") or None,
        "quant": request.get("quant") or None, "cookbook_revision": model.revision or None,
        "benchmarks_source": doc.get("source"),
        "workload": {"dataset": load.get("dataset"), "isl": load.get("isl"), "osl": load.get("osl")},
        "target": {"kind": target.kind, "value": float(target.value),
                   "ttft_ms": None if target.ttft_ms is None else float(target.ttft_ms),
                   "tpot_ms": None if target.tpot_ms is None else float(target.tpot_ms)},
        "rows": rows,
    }


# --- presentation ------------------------------------------------------------------------------------

UNITS = {"requests_per_s": "requests/s", "output_tokens_per_s": "output tokens/s"}


def _limits(t: Mapping[str, Any]) -> str:
    parts = [f"TTFT <= {t['ttft_ms']:g} ms" if t.get("ttft_ms") is not None else "",
             f"TPOT <= {t['tpot_ms']:g} ms" if t.get("tpot_ms") is not None else ""]
    return " and ".join(p for p in parts if p) or "no latency limit"


def _g(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def markdown(result: Mapping[str, Any]) -> str:
    """rendered/SIZING.md: the target, then one row per cell (and per measured run) with its nodes or why none."""
    t, w = result["target"], result["workload"]
    unit = UNITS[t["kind"]]
    lines = [f"# Sizing: {result['display_name']} for {t['value']:g} {unit}", "",
             f"Target: {t['value']:g} {unit} at the published workload (random prompts, ISL {w['isl']} / OSL "
             f"{w['osl']}), {_limits(t)}. Published speed points: cookbook revision {result['cookbook_revision']} "
             f"({result['benchmarks_source']}).", "",
             "Each cell runs at the highest throughput whose TTFT and TPOT stay within the limits, interpolated "
             "linearly between the published concurrencies and never beyond the first or last of them. One "
             "instance serves tok/s/GPU x its GPUs / (ISL + OSL) requests/s; instances smaller than a node share "
             "it (several servers per node). Rows `measured on <host>` size the same cell from "
             "playbooks/benchmark.yml's run on that host (median TTFT and TPOT).", "",
             "| GPU | Precision | Strategy | Source | Concurrency | TTFT ms | TPOT ms | tok/s/GPU | "
             "per instance | instances | nodes | GPUs |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    notes = []
    for r in result["rows"]:
        badge = "" if r["verified"] else " (unverified)"
        shape = (f"{r['gpus_per_instance']} GPU{'s' if r['gpus_per_instance'] > 1 else ''}"
                 + (f" over {r['nodes_per_instance']} nodes" if r["nodes_per_instance"] > 1 else ""))
        run_at = (r.get("isl"), r.get("osl"))
        other = f" at ISL {run_at[0]} / OSL {run_at[1]}" if run_at[0] and run_at != (w["isl"], w["osl"]) else ""
        head = f"| {r['gpu']} | {r['quant']} | {r['strategy']}{badge} | {r['source']}{other} |"
        if r["status"] == "ok":
            per = r["instance"]["requests_per_s"] if t["kind"] == "requests_per_s" else \
                r["instance"]["output_tokens_per_s"]
            conc = f"{r['concurrency']:g}" + (" (interpolated)" if r["interpolated"] else "")
            packing = f" ({r['instances_per_node']} per node)" if r["instances_per_node"] > 1 else ""
            lines.append(f"{head} {conc} | {_g(r['ttft_ms'])} | {_g(r['tpot_ms'])} | {r['tok_s_per_gpu']:g} | "
                         f"{per:g} {unit} ({shape}) | {r['instances']}{packing} | **{r['nodes']}** | {r['gpus']} |")
        else:
            lines.append(f"{head} - | - | - | - | - | - | **{r['status']}** | - |")
            notes.append(f"- {r['gpu']}/{r['quant']}/{r['strategy']} ({r['source']}): {r['status']}: {r['reason']}")
        if r.get("simulated_accept_length"):
            notes.append(f"- {r['gpu']}/{r['quant']}/{r['strategy']}: upstream pinned the speculative accept length "
                         f"(SGLANG_SIMULATE_ACC_LEN={r['simulated_accept_length']}) for these points; a real "
                         "deployment's differs.")
    if any(r.get("isl") and (r.get("isl"), r.get("osl")) != (w["isl"], w["osl"]) for r in result["rows"]):
        notes.append(f"- Rows `at ISL i / OSL o` ran at another workload than ISL {w['isl']} / OSL {w['osl']} (the page "
                     "published those points so): they size the same target at their own workload.")
    if notes:
        lines += ["", *notes]
    ok = [r for r in result["rows"] if r["status"] == "ok"]
    if not ok:
        lines += ["", f"**No cell meets the limits** ({_limits(t)}) at any published point: relax a limit, or "
                      "measure the cells on your own nodes (playbooks/benchmark.yml) and size again."]
    else:
        fewest = min(ok, key=lambda r: (r["gpus"], r["nodes"]))
        lines += ["", f"Fewest GPUs: {fewest['gpu']}/{fewest['quant']}/{fewest['strategy']} ({fewest['source']}), "
                      f"{fewest['nodes']} node(s), {fewest['gpus']} GPUs."]
    return "\n".join(lines) + "\n"


def plot_png(result: Mapping[str, Any]) -> bytes | None:
    """TTFT and TPOT against tokens/s per GPU for every cell's points (published solid, measured dashed), with
    the limits and each cell's operating point. None without matplotlib."""
    try:
        import io  # noqa: PLC0415

        import matplotlib  # noqa: PLC0415
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return None
    t = result["target"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, metric, limit, label in ((axes[0], "ttft_ms", t.get("ttft_ms"), "TTFT ms"),
                                     (axes[1], "tpot_ms", t.get("tpot_ms"), "TPOT ms")):
        for r in result["rows"]:
            pts = r.get("points") or []
            if not pts:
                continue
            name = f"{r['gpu']}/{r['quant']}/{r['strategy']}" + ("" if r["source"] == "published" else " measured")
            line, = ax.plot([p["tok_s_per_gpu"] for p in pts], [p[metric] for p in pts],
                            "o-" if r["source"] == "published" else "s--", label=name)
            if r["status"] == "ok":
                ax.plot([r["tok_s_per_gpu"]], [r[metric]], "*", markersize=14, color=line.get_color())
        if limit is not None:
            ax.axhline(limit, color="red", linestyle=":", label=f"limit {limit:g} ms")
        # linear axes: along a segment TTFT, TPOT and throughput are all linear in the concurrency, so the drawn
        # lines are exactly the interpolation and each star sits on its cell's line
        ax.set_xlabel("tokens/s per GPU (input + output)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{result['display_name']}: published speed points and operating points (stars)")
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def measured_run(host: str, model: str, cell: Mapping[str, Any], gpus: int, runs: Iterable[Mapping[str, Any]],
                 sglang: str, isl: int | None, osl: int | None) -> dict[str, Any]:
    """The machine-readable form of one benchmark.yml run (rendered/benchmark/<host>.json) that capacity() reads:
    per concurrency the median TTFT and TPOT and the total tokens/s per GPU of sglang.bench_serving."""
    points = []
    for run in sorted(runs, key=lambda r: int(r["max_concurrency"] or 0)):
        points.append({"concurrency": int(run["max_concurrency"] or 0),
                       "ttft_ms": round(float(run.get("median_ttft_ms", run["mean_ttft_ms"])), 2),
                       "tpot_ms": round(float(run["median_tpot_ms"]), 3),
                       "tok_s_per_gpu": round(float(run["total_throughput"]) / gpus, 1)})
    return {"host": host, "model": model,
            "cell": {k: cell.get(k) for k in ("gpu", "quant", "strategy", "nodes", "cookbook_revision")},
            "gpus": gpus, "sglang": sglang, "isl": isl, "osl": osl, "points": points}
