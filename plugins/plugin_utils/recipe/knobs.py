# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playground knobs: each function takes a Build, returns a new one, and holds its own rules.

recipe_engine.KNOB_ORDER fixes the order they run in; the README documents it.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
from typing import Any, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils import backends
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import argv, cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (
    Catalog, Cell, Model, checkpoint_of, flag_table, flag_table_doc, managed)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.secret_shapes import secret_env_name, secret_kind
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import at_least
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.selection import coerce

PARALLEL_FLAGS = ("--tp-size", "--pp-size", "--quantization", "--dp-size", "--enable-dp-attention",
                  "--moe-a2a-backend", "--ep-size")


@dataclasses.dataclass(frozen=True)
class Build:
    sel: dict[str, Any]
    catalog: Catalog
    model: Model
    platform: dict[str, Any]
    cell: Cell
    version: str
    args: argv.Args
    env: dict[str, str]
    port: int
    dist_port: int
    warnings: tuple[str, ...] = ()
    #: the final command as the release's parser reads it (engine.final_checks fills it)
    namespace: Optional[dict[str, Any]] = None
    #: flags the operator gave that the collection sets itself: judged against the final command (engine.judge_claims)
    claims: tuple["Claim", ...] = ()
    #: the mistakes found so far; the engine raises them all at once when the build is done
    mistakes: tuple[str, ...] = ()

    def with_(self, **changes: Any) -> "Build":
        return dataclasses.replace(self, **changes)

    def warn(self, message: str) -> "Build":
        return self.with_(warnings=self.warnings + (message,))

    def refuse(self, exc: RecipeError) -> "Build":
        """The same build with a mistake noted (the next checks still run, so every mistake is said at once)."""
        return self.with_(mistakes=self.mistakes + tuple(exc.messages))

    @property
    def vendor(self) -> str:
        return str(self.platform.get("vendor"))

    @property
    def where(self) -> str:
        c = self.cell
        return f"{self.model.id} {c.gpu}/{c.quant}/{c.strategy}/{c.nodes} node{'s' if c.nodes > 1 else ''}"

    def int_flag(self, name: str, default: int = 1) -> int:
        value = argv.get(self.args, name)
        return int(value) if isinstance(value, str) and value.isdigit() else default


def nested(values: dict[str, Any], variable: str, kinds: dict[str, str]) -> dict[str, Any]:
    """A mapping's keys converted as the top-level variables are (selection.coerce: '8' is 8, 'false' is false), so
    a value means the same at every depth; the others are left as given."""
    out = dict(values)
    for key, kind in kinds.items():
        if out.get(key) is None:
            continue
        if kind == "number":
            value = out[key]
            if isinstance(value, str):
                try:
                    out[key] = float(value) if "." in value else int(value)
                except ValueError:
                    pass  # the knob names what it wants
            continue
        out[key] = coerce(out[key], kind, f"{variable}.{key}")
    return out


def _after_parallel(args: argv.Args) -> int:
    """Index after the last parallelism/MoE flag: where upstream puts the next group of flags."""
    positions = [argv.find(args, f) for f in PARALLEL_FLAGS]
    positions += [argv.find(args, "--served-model-name"), argv.find(args, "--model-path")]
    return max(positions) + 1


def _insert_group(args: argv.Args, group: argv.Args) -> argv.Args:
    at = _after_parallel(args)
    return args[:at] + group + args[at:]


def _put_near_parallel(args: argv.Args, name: str, value: argv.Value, origin: str) -> argv.Args:
    if argv.has(args, name):
        return argv.put(args, name, value, origin)
    return _insert_group(args, [argv.Arg(name, value, origin)])


def _divisors(n: int) -> str:
    return ", ".join(str(d) for d in range(2, n + 1) if n % d == 0)


# --- model path -------------------------------------------------------------------------------

def apply_model_path(b: Build) -> Build:
    """Local weights replace the hub id; clients keep the public name through --served-model-name."""
    checkpoint = checkpoint_of(b.model, b.cell.gpu, b.cell.quant)["id"]
    args = b.args
    served = b.sel["served_model_name"]
    if b.sel["model_path"]:
        args = argv.put(args, "--model-path", b.sel["model_path"], "sglang_model_path")
        served = served or checkpoint
    if served:
        args = argv.insert_after(argv.drop(args, "--served-model-name"), "--model-path",
                                 [argv.Arg("--served-model-name", served, "sglang_served_model_name")])
    return b.with_(args=args)


# --- DP attention -----------------------------------------------------------------------------

def apply_dp_attention(b: Build) -> Build:
    """inherit | off | N. Off drops --dp-size and --enable-dp-attention only (DeepEP, chunked
    prefill, max-running and cell env stay). N must divide the TP size."""
    value = b.sel["dp_attention"]
    if value in ("inherit", None):
        return b
    if value in ("off", False, "false"):
        return b.with_(args=argv.drop(b.args, "--dp-size", "--enable-dp-attention"))
    tp = b.int_flag("--tp-size")
    size = int(value) if isinstance(value, int) and not isinstance(value, bool) else (
        int(value) if isinstance(value, str) and value.isdigit() else None)
    if size is None:
        raise RecipeError(f"sglang_dp_attention: {value!r} is not inherit, off or a size; sizes that divide "
                          f"TP {tp}: {_divisors(tp)}")
    if size < 2 or tp % size:
        raise RecipeError(f"sglang_dp_attention: {size} must divide the TP size {tp} of {b.where} and be at "
                          f"least 2; use one of {_divisors(tp)}, or off")
    args = b.args
    if argv.has(args, "--dp-size"):
        args = argv.put(args, "--dp-size", str(size), "sglang_dp_attention")
    else:
        args = argv.insert_after(args, "--tp-size", [argv.Arg("--dp-size", str(size), "sglang_dp_attention")])
    if not argv.has(args, "--enable-dp-attention"):
        args = argv.insert_after(args, "--dp-size", [argv.Arg("--enable-dp-attention", None, "sglang_dp_attention")])
    return b.with_(args=args)


# --- MoE ----------------------------------------------------------------------------------------

def apply_moe(b: Build) -> Build:
    """moe_a2a: deepep adds --moe-a2a-backend deepep; ep: N sets --ep-size N (N divides TP)."""
    args = b.args
    if not b.model.moe and (b.sel["moe_a2a"] == "deepep" or b.sel["ep"] is not None):
        used = "sglang_moe_a2a" if b.sel["moe_a2a"] == "deepep" else "sglang_ep"
        raise RecipeError(f"{used}: {b.model.id} is a dense model (no experts; model.yml moe: false), so there is no "
                          "MoE all-to-all or expert parallelism to set. Drop it")
    if b.sel["moe_a2a"] == "deepep":
        owner = vendor_of_value("--moe-a2a-backend", "deepep")
        if owner and owner != b.vendor:
            raise RecipeError(f"sglang_moe_a2a: deepep (DeepEP) runs on {owner.upper()} GPUs only "
                              f"(data/sglang/vendors.yml); {b.cell.gpu} is {b.vendor.upper()}. Drop sglang_moe_a2a "
                              "for these hosts")
        args = _put_near_parallel(args, "--moe-a2a-backend", "deepep", "sglang_moe_a2a")
    ep = b.sel["ep"]
    if ep is not None:
        tp = b.int_flag("--tp-size")
        if ep < 1 or tp % ep:
            raise RecipeError(f"sglang_ep: {ep} must divide the TP size {tp} of {b.where}; use one of "
                              f"1, {_divisors(tp)}")
        args = _put_near_parallel(args, "--ep-size", str(ep), "sglang_ep")
    return b.with_(args=args)


def vendor_of_value(flag: str, value: str) -> Optional[str]:
    """The GPU vendor whose kernels a backend flag's value names (data/sglang/vendors.yml backend_words), or None."""
    return (backends.backend_vendor(value) or None) if flag.endswith("-backend") else None


# --- speculative decoding ----------------------------------------------------------------------

def apply_speculative(b: Build) -> Build:
    """A preset replaces every --speculative-* flag of the cell. MTP and DFLASH are NVIDIA only;
    DFLASH rejects DP-attention and needs a release newer than 0.5.18."""
    choice = b.sel["speculative"]
    args = b.args
    if choice != "inherit":
        first = next((i for i, a in enumerate(args) if a.name.startswith("--speculative-")), -1)
        args = argv.drop_prefix(args, "--speculative-")
        if choice != "off":
            preset = b.model.speculative_presets.get(choice)
            if preset is None:
                raise RecipeError(f"sglang_speculative: {choice!r} is not a preset of {b.model.id}; presets: "
                                  f"{', '.join(['inherit', 'off', *b.model.speculative_presets])}")
            _check_preset(b, choice, preset, args)
            group = [argv.Arg(k, argv.as_value(v), "sglang_speculative") for k, v in preset["flags"].items()]
            at = first if first >= 0 else _after_parallel(args)
            args = args[:at] + group + args[at:]
            if preset.get("note"):
                b = b.warn(preset["note"])
    if b.sel["draft_model_path"]:
        if not argv.has(args, "--speculative-draft-model-path"):
            drafts = [name for name, p in b.model.speculative_presets.items()
                      if "--speculative-draft-model-path" in (p.get("flags") or {})]
            raise RecipeError("sglang_draft_model_path: only a draft-model preset uses it (sglang_speculative: "
                              f"{' or '.join(drafts) or f'none of {b.model.id}'}); the chosen command has no "
                              "--speculative-draft-model-path")
        args = argv.put(args, "--speculative-draft-model-path", b.sel["draft_model_path"], "sglang_draft_model_path")
    return b.with_(args=args)


def _check_preset(b: Build, choice: str, preset: dict[str, Any], args: argv.Args) -> None:
    vendors = preset.get("vendors") or []
    if vendors and b.vendor not in vendors:
        raise RecipeError(
            f"sglang_speculative: {choice} is not available on {b.cell.gpu} ({b.vendor}): upstream has not validated "
            f"the spec-decode draft kernel there ({b.model.id} offers it on {', '.join(vendors)}); use "
            "sglang_speculative: off, or inherit to keep the cell's own")
    minimum = preset.get("min_sglang")
    if minimum and not at_least(b.version, minimum):
        raise RecipeError(
            f"sglang_speculative: {choice} needs SGLang >= {minimum}; the command targets {b.version}. "
            f"Set sglang_version / sglang_image to a newer release, or pick an MTP preset")
    if preset.get("rejects_dp_attention") and argv.has(args, "--enable-dp-attention"):
        raise RecipeError(
            f"sglang_speculative: {choice} rejects DP-attention, which the {b.cell.strategy} cell turns on; "
            f"set sglang_dp_attention: off as well")


# --- context parallelism -----------------------------------------------------------------------

def apply_context_parallel(b: Build) -> Build:
    """Prefill CP: single node, not AMD, interleave only, size = TP/DP with DP-attention off.
    layer_split also needs a PD prefill worker on the mooncake backend."""
    cp = b.sel["context_parallel"]
    if cp is None:
        return b
    unknown = set(cp) - {"size", "strategy", "layer_split", "enabled"}
    if unknown:
        raise RecipeError(f"sglang_context_parallel: unknown key(s) {', '.join(sorted(unknown))}; "
                          "known: size, strategy, layer_split, enabled")
    cp = nested(cp, "sglang_context_parallel", {"enabled": "bool", "size": "int", "layer_split": "bool"})
    if cp.get("enabled", True) is False:
        return b
    if b.cell.nodes > 1:
        raise RecipeError(f"sglang_context_parallel: prefill context parallelism is single-node only (SGLang "
                          f"asserts tp <= 8); {b.where} spans {b.cell.nodes} nodes. Drop it or use sglang_nodes: 1")
    if b.vendor == "amd":
        raise RecipeError(f"sglang_context_parallel: prefill CP is CUDA-only upstream; {b.cell.gpu} is AMD. Drop it")
    rules = b.model.context_parallel
    if not rules.get("strategies"):
        raise RecipeError(f"sglang_context_parallel: {b.model.id} has no prefill context parallelism (its cookbook page "
                          "offers none; model.yml context_parallel). Drop it")
    strategy = cp.get("strategy", "interleave")
    unavailable = rules.get("unavailable_strategies") or {}
    if strategy in unavailable:
        raise RecipeError(f"sglang_context_parallel.strategy: {strategy}: {unavailable[strategy]}")
    if strategy not in (rules.get("strategies") or []):
        raise RecipeError(f"sglang_context_parallel.strategy: {strategy!r} is not one of "
                          f"{', '.join(rules.get('strategies') or []) or '(none for this model)'}")
    if argv.has(b.args, "--enable-dp-attention"):
        raise RecipeError("sglang_context_parallel: interleave CP fails SGLang's dp_size == 1 check with "
                          f"DP-attention, which the {b.cell.strategy} cell turns on; set sglang_dp_attention: off")
    tp, dp = b.int_flag("--tp-size"), b.int_flag("--dp-size")
    size = cp.get("size", tp // dp)
    if isinstance(size, bool) or not isinstance(size, int) or size != tp // dp:
        raise RecipeError(f"sglang_context_parallel.size: {size!r} must equal TP/DP = {tp}/{dp} = {tp // dp}")
    group = [argv.Arg("--attn-cp-size", str(size), "sglang_context_parallel"),
             argv.Arg("--enable-prefill-cp", None, "sglang_context_parallel"),
             argv.Arg("--cp-strategy", strategy, "sglang_context_parallel")]
    if cp.get("layer_split"):
        pd = b.sel["pd"] or {}
        if not rules.get("layer_split"):
            raise RecipeError(f"sglang_context_parallel.layer_split: {b.model.id} does not support LayerSplit")
        if pd.get("role") != "prefill" or pd.get("transfer_backend", "mooncake") != "mooncake":
            raise RecipeError("sglang_context_parallel.layer_split: LayerSplit runs only on a PD prefill worker "
                              "with the mooncake backend; set sglang_pd: {role: prefill, transfer_backend: mooncake}")
        group.insert(0, argv.Arg("--enable-dsa-cache-layer-split", None, "sglang_context_parallel.layer_split"))
    return b.with_(args=_insert_group(argv.drop(b.args, *(a.name for a in group)), group))


# --- HiCache ------------------------------------------------------------------------------------

HICACHE_POLICIES = ("write_back", "write_through", "write_through_selective")
HICACHE_BACKENDS = ("file", "mooncake")


def apply_hicache(b: Build) -> Build:
    """Hierarchical KV cache; a storage backend adds the page-first direct-IO layout."""
    hc = b.sel["hicache"]
    if hc in (None, False):
        return b
    if hc is True:
        hc = {}
    if not isinstance(hc, dict):
        raise RecipeError(f"sglang_hicache: expected a mapping such as {{enabled: true, ratio: 2}}, got "
                          f"{type(hc).__name__} {hc!r}")
    unknown = set(hc) - {"enabled", "ratio", "size", "write_policy", "storage_backend"}
    if unknown:
        raise RecipeError(f"sglang_hicache: unknown key(s) {', '.join(sorted(unknown))}; known: enabled, ratio, "
                          "size, write_policy, storage_backend")
    hc = nested(hc, "sglang_hicache", {"enabled": "bool", "ratio": "number", "size": "int"})
    if hc.get("enabled", True) is False:
        return b
    ratio = hc.get("ratio", 2)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
        raise RecipeError(f"sglang_hicache.ratio: {ratio!r} must be a positive number (host cache size / device cache size)")
    policy = hc.get("write_policy", "write_through")
    if policy not in HICACHE_POLICIES:
        raise RecipeError(f"sglang_hicache.write_policy: {policy!r} is not one of {', '.join(HICACHE_POLICIES)}")
    origin = "sglang_hicache"
    group = [argv.Arg("--enable-hierarchical-cache", None, origin),
             argv.Arg("--hicache-ratio", str(ratio), origin),
             argv.Arg("--hicache-size", str(hc.get("size", 0)), origin),
             argv.Arg("--hicache-write-policy", policy, origin)]
    backend = hc.get("storage_backend")
    if backend not in (None, "none"):
        if backend not in HICACHE_BACKENDS:
            raise RecipeError(f"sglang_hicache.storage_backend: {backend!r} is not one of {', '.join(HICACHE_BACKENDS)}")
        group += [argv.Arg("--hicache-mem-layout", "page_first_direct", origin),
                  argv.Arg("--hicache-io-backend", "direct", origin),
                  argv.Arg("--hicache-storage-backend", backend, origin),
                  argv.Arg("--hicache-storage-prefetch-policy", "wait_complete", origin)]
    args = argv.drop(b.args, *(a.name for a in group))
    return b.with_(args=args + group)


# --- Hopper FP8 KV cache --------------------------------------------------------------------------

def apply_kv_cache_fp8(b: Build) -> Build:
    """The model's Hopper FP8 KV-cache flags (model.yml hopper_fp8_kv_flags; GLM-5.3: fp8_e4m3 with the
    flashmla_sparse_q8 / flashmla_kv DSA kernels). Hopper only (Blackwell already defaults to fp8_e4m3)."""
    if not b.sel["kv_cache_fp8"]:
        return b
    if not b.model.hopper_fp8_kv_flags:
        raise RecipeError(f"sglang_kv_cache_fp8: {b.model.id} has no Hopper FP8 KV-cache recipe (model.yml "
                          "hopper_fp8_kv_flags); set the KV-cache flags you want with sglang_extra_args instead")
    if b.platform.get("arch") != "hopper":
        raise RecipeError(
            f"sglang_kv_cache_fp8: the FP8 KV-cache path of {b.model.id} is for Hopper (H200); "
            f"{b.cell.gpu} is {b.platform.get('arch')}"
            + (" and already uses an fp8_e4m3 KV cache by default" if b.platform.get("arch") == "blackwell" else "")
            + ". Drop sglang_kv_cache_fp8")
    args = b.args
    for name, value in b.model.hopper_fp8_kv_flags.items():
        args = argv.put(args, name, argv.as_value(value), "sglang_kv_cache_fp8")
    return b.with_(args=args)


# --- prefill/decode disaggregation -------------------------------------------------------------

PD_ROLES = ("prefill", "decode")
PD_BACKENDS = ("mooncake", "nixl")


def check_pd(pd: Any) -> dict[str, Any] | None:
    if pd is None:
        return None
    if not isinstance(pd, dict):
        raise RecipeError(f"sglang_pd: expected a mapping such as {{role: prefill}}, got {type(pd).__name__} {pd!r}")
    unknown = set(pd) - {"role", "transfer_backend", "ib_device", "bootstrap_port"}
    if unknown:
        raise RecipeError(f"sglang_pd: unknown key(s) {', '.join(sorted(unknown))}; known: role, transfer_backend, "
                          "ib_device, bootstrap_port")
    pd = nested(pd, "sglang_pd", {"bootstrap_port": "int"})
    if pd.get("role") not in PD_ROLES:
        raise RecipeError(f"sglang_pd.role: {pd.get('role')!r} is not one of {', '.join(PD_ROLES)}")
    backend = pd.get("transfer_backend", "mooncake")
    if backend not in PD_BACKENDS:
        raise RecipeError(f"sglang_pd.transfer_backend: {backend!r} is not one of {', '.join(PD_BACKENDS)}")
    port = pd.get("bootstrap_port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        raise RecipeError(f"sglang_pd.bootstrap_port: {port!r} is not a TCP port (1-65535)")
    return pd


def apply_pd(b: Build) -> Build:
    """--disaggregation-mode/-transfer-backend; the HCA only when asked; GB300 + mooncake env."""
    pd = check_pd(b.sel["pd"])
    if pd is None:
        return b
    origin = "sglang_pd"
    backend = pd.get("transfer_backend", "mooncake")
    group = [argv.Arg("--disaggregation-mode", pd["role"], origin),
             argv.Arg("--disaggregation-transfer-backend", backend, origin)]
    if pd.get("ib_device"):
        group.append(argv.Arg("--disaggregation-ib-device", str(pd["ib_device"]), origin))
    bootstrap = pd.get("bootstrap_port")
    if pd["role"] == "prefill" and bootstrap not in (None, b.catalog.ports["pd_bootstrap"]):
        group.append(argv.Arg("--disaggregation-bootstrap-port", str(bootstrap), origin))
    env = dict(b.env)
    if backend == "mooncake":
        env.update({k: str(v) for k, v in (b.platform.get("pd_mooncake_env") or {}).items()})
    return b.with_(args=argv.drop(b.args, *(a.name for a in group)) + group, env=env)


# --- parsers --------------------------------------------------------------------------------------

def apply_parsers(b: Build) -> Build:
    """Default on: the model's parsers (model.yml parsers, the parser card of its cookbook page; GLM-5.3:
    --reasoning-parser glm45 --tool-call-parser glm47). A parser the cell already names is set to the model's; off
    drops it, as the page's parser card does for cells that carry theirs (Qwen3.8-27B's)."""
    value = b.sel["parsers"]
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "on", "off"):
        value = value.lower() in ("true", "yes", "on")
    if isinstance(value, bool):
        wanted = {"reasoning": value, "tool_call": value}
    elif isinstance(value, dict):
        unknown = set(value) - {"reasoning", "tool_call"}
        if unknown:
            raise RecipeError(f"sglang_parsers: unknown key(s) {', '.join(sorted(unknown))}; known: reasoning, tool_call")
        value = nested(value, "sglang_parsers", {"reasoning": "bool", "tool_call": "bool"})
        wanted = {"reasoning": value.get("reasoning", True) is not False, "tool_call": value.get("tool_call", True) is not False}
    else:
        raise RecipeError(f"sglang_parsers: expected true/false or {{reasoning: bool, tool_call: bool}}, got {value!r}")
    args = b.args
    for kind, flag in (("reasoning", "--reasoning-parser"), ("tool_call", "--tool-call-parser")):
        parser = b.model.parsers.get(kind)
        if wanted[kind] and parser:
            args = argv.put(args, flag, parser, "sglang_parsers")
        elif wanted[kind] and isinstance(value, dict):
            raise RecipeError(f"sglang_parsers.{kind}: {b.model.id} names no {kind} parser (model.parsers.{kind})")
        elif not wanted[kind]:
            args = argv.drop(args, flag)
    return b.with_(args=args)


# --- metrics --------------------------------------------------------------------------------------

METRICS_FLAG = "--enable-metrics"


def apply_metrics(b: Build) -> Build:
    """Default on: --enable-metrics, so the server serves Prometheus metrics on its own --port at /metrics
    (node_rank >= 1 members serve them from SGLang's health-only server on the same port).

    A release whose flag table lacks the switch is refused rather than silently left without it: the site's
    scrape configuration expects /metrics on every server, and a server without it would show as down."""
    if not b.sel["metrics"]:  # a bool: selection.normalize coerced it (data/variables.yml)
        return b
    table = flag_table(b.version)
    if table is not None and METRICS_FLAG not in table:
        raise RecipeError(f"sglang_metrics: SGLang {b.version} has no {METRICS_FLAG} (its flag table), so the server "
                          "cannot serve Prometheus metrics; set sglang_metrics: false for these hosts (the site's "
                          "scrape configuration then leaves their /metrics out and only probes /health), or render "
                          "for a release that has it")
    return b.with_(args=argv.put(b.args, METRICS_FLAG, None, "sglang_metrics"))


# --- extra and removed args ------------------------------------------------------------------------
#
# Every flag name an operator gives (sglang_extra_args, sglang_remove_args) or a site recipe's cell carries is read
# the way the target release's parser reads it (recipe/cli.py over its flag table): a unique prefix, an alias or a
# --flag=value form is the same dest as the canonical flag, so no spelling gets past an owner (data/sglang/managed.yml)
# and an edit replaces the flag the command already has instead of adding a second spelling of it.

@dataclasses.dataclass(frozen=True)
class Flag:
    """A flag name as given, the option string the target release's parser reads it as, and its dest there."""

    written: str
    name: str
    dest: Optional[str]


@functools.lru_cache(maxsize=None)
def cli_table(version: str) -> Optional[cli.Table]:
    """The target release's flag table as recipe/cli.py reads it, or None when none is shipped."""
    doc = flag_table_doc(version)
    return cli.Table.of(doc) if doc else None


def canonical_flag(name: Any, aliases: dict[str, str], variable: str) -> str:
    text = str(name).strip()
    if not text or text.strip("-") == "":
        raise RecipeError(f"{variable}: {name!r} is not a flag name")
    if not text.startswith("--"):
        text = "--" + text.lstrip("-")
    return aliases.get(text, text)


def spelled(name: str, version: str, renames: list[dict[str, Any]]) -> str:
    """A renamed flag under the spelling the release knows (data/sglang/versions.yml renames)."""
    for rule in renames:
        if name in (rule["old"], rule["new"]):
            return rule["new"] if at_least(version, rule["new_since"]) else rule["old"]
    return name


def resolve_flag(raw: Any, variable: str, catalog: Catalog, version: str) -> Flag:
    """A flag name as the release's parser reads it (a unique prefix expanded, an alias kept: both name its dest);
    a name it does not know is left for translate() to refuse with its suggestions, an ambiguous prefix is refused
    here."""
    written = str(raw).strip()
    name = spelled(canonical_flag(raw, catalog.versions["aliases"], variable), version,
                   catalog.versions.get("renames", []))
    table = cli_table(version)
    if table is None:
        return Flag(written, name, None)
    try:
        option = cli.resolve(name, table)
    except cli.CliError as exc:
        if exc.message.startswith("ambiguous option"):
            raise RecipeError(f"{variable}: {written} is ambiguous to SGLang {version} ({exc.message}); write the "
                              "whole flag name") from None
        return Flag(written, name, None)
    return Flag(written, option, table.dest(option))


@functools.lru_cache(maxsize=None)
def owners(version: str) -> dict[str, tuple[str, str, str]]:
    """{dest: (flag, owner, scope)} of data/sglang/managed.yml's serve flags in one release (scope: collection,
    knobs or secret)."""
    table = cli_table(version)
    owned = managed()["serve"]
    out: dict[str, tuple[str, str, str]] = {}
    for scope in ("collection", "knobs"):
        for flag, owner in owned[scope].items():
            if table is not None and flag in table.flags:
                out[table.dest(flag)] = (flag, str(owner), scope)
    for flag in owned["secret"]:
        if table is not None and flag in table.flags:
            out[table.dest(flag)] = (flag, "", "secret")
    return out


@dataclasses.dataclass(frozen=True)
class Claim:
    """A flag the collection sets, given by the operator too (extra or removed args, a site recipe's cell): accepted
    when the release's parser reads it as the value the collection gives (agreement), refused when it contradicts
    it. `value`: True for a switch, a str or tuple for values, None for a removal."""

    variable: str
    flag: Flag
    value: Any
    canonical: str
    owner: str


def owned(flag: Flag, variable: str, version: str, knob_owned: bool = True) -> Optional[tuple[str, str]]:
    """(canonical flag, owning variable) of a flag the collection sets (data/sglang/managed.yml), under any spelling;
    a secret flag is refused here."""
    found = owners(version).get(flag.dest or "") if flag.dest else None
    if found is None:
        return None
    canonical, owner, scope = found
    if scope == "secret":
        raise RecipeError(f"{variable}: {shown_flag(flag, canonical, version)} would put a secret on the command line "
                          "(visible in ps and the unit file); secrets go only into the 0600 environment/config files "
                          "(sglang_api_key)")
    if scope == "collection" or knob_owned:
        return canonical, owner
    return None


def shown_flag(flag: Flag, canonical: str, version: str) -> str:
    """A flag as the operator wrote it, with what the release reads it as when that differs."""
    return flag.written if flag.written == canonical else f"{flag.written} (to SGLang {version} the same as {canonical})"


def check_secret_value(value: Any, what: str) -> None:
    """Refuse a value shaped like a secret (data/secrets.yml), naming where it is and its kind, never the value."""
    values = value if isinstance(value, (list, tuple)) else [value]
    for item in values:
        kind = secret_kind(item)
        if kind:
            raise RecipeError(f"{what} holds {kind}; secrets never go on the command line, into the plan or into "
                              "rendered/ (ps, the unit file and --diff show them). Keep it in a vaulted variable the "
                              "collection passes as a secret (sglang_hf_token, sglang_api_key)")


def extra_pairs(extra: Any, b: Build) -> list[tuple[Flag, Any]]:
    """sglang_extra_args as (flag, value) pairs; value True = switch, False = remove, list = several."""
    variable = "sglang_extra_args"
    if extra is None:
        return []

    def flag(name: Any) -> Flag:
        return resolve_flag(name, variable, b.catalog, b.version)

    if isinstance(extra, dict):
        return [(flag(k), v) for k, v in extra.items()]
    if not isinstance(extra, (list, tuple)):
        raise RecipeError(f"{variable}: expected a mapping {{--flag: value}} or a list of tokens, got "
                          f"{type(extra).__name__} {extra!r}")
    tokens: list[str] = []
    for item in extra:
        if isinstance(item, (dict, list)):
            raise RecipeError(f"{variable}: list items must be strings such as '--flag value', got {item!r}")
        tokens.extend(str(item).split())
    table = flag_table(b.version)
    pairs: list[tuple[Flag, Any]] = []
    for token in tokens:
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            pairs.append((flag(name), value if eq else True))
        elif not pairs:
            raise RecipeError(f"{variable}: {token!r} comes before any --flag")
        else:
            found, previous = pairs[-1]
            entry = (table or {}).get(found.name)
            multi = entry is not None and entry["nargs"] not in (0, 1, "?")
            if previous is True:
                pairs[-1] = (found, token)
            elif multi:
                pairs[-1] = (found, (list(previous) if isinstance(previous, list) else [previous]) + [token])
            else:
                raise RecipeError(f"{variable}: {found.written} takes one value, got {previous!r} and {token!r}")
    return pairs


def same_dest(args: argv.Args, flag: Flag, version: str) -> list[int]:
    """Where the command already has this flag, under any spelling of its dest."""
    table = cli_table(version)
    out = []
    for i, arg in enumerate(args):
        if arg.name == flag.name:
            out.append(i)
        elif flag.dest is not None and table is not None and arg.name in table.flags \
                and table.dest(arg.name) == flag.dest:
            out.append(i)
    return out


def apply_extra_args(b: Build) -> Build:
    """Each pair of sglang_extra_args on the command, each judged on its own (a refused pair is noted and the rest
    still apply, so every mistake is said at once); a flag the collection sets becomes a Claim."""
    args = b.args
    try:
        pairs = extra_pairs(b.sel["extra_args"], b)
    except RecipeError as exc:
        return b.refuse(exc)
    for flag, value in pairs:
        try:
            args, b = _extra_pair(args, b, flag, value)
        except RecipeError as exc:
            b = b.refuse(exc)
    return b.with_(args=args)


def _extra_pair(args: argv.Args, b: Build, flag: Flag, value: Any) -> tuple[argv.Args, Build]:
    variable = "sglang_extra_args"
    removal = value is False or value is None
    mine = owned(flag, variable, b.version)  # a secret flag is refused here
    if not removal:
        check_secret_value(value, f"{variable}: {flag.written}")
    if mine is not None:
        return args, b.with_(claims=b.claims + (Claim(variable, flag, None if removal else value, *mine),))
    where = same_dest(args, flag, b.version)
    if removal:
        return [a for i, a in enumerate(args) if i not in where], b
    check_parser(b, flag, value)
    name = args[where[0]].name if where else flag.name
    new = argv.Arg(name, argv.as_value(value), origin_of(variable, flag.written, name, value))
    if where:
        return [new if i == where[0] else a for i, a in enumerate(args) if i == where[0] or i not in where], b
    return args + [new], b


def origin_of(variable: str, written: str, name: str, value: Any) -> str:
    """Who put a flag on the command, as later messages name it: the variable, and the flag as the operator wrote it
    when the command carries it under another name (an alias such as --tensor-parallel-size, a prefix)."""
    if written == name:
        return variable
    values = [] if value is True else [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
    return f"{variable} ({' '.join([written, *values])})"


PARSER_FLAGS = {"tool_call_parser": "tool_call", "reasoning_parser": "reasoning"}


def check_parser(b: Build, flag: Flag, value: Any) -> None:
    """Another parser than the model's parser card over the card's own (sglang_parsers leaves it on): tool calls or
    reasoning stay raw text in `content`. With the card's parser turned off (sglang_parsers), or for a model without
    a card, sglang_extra_args may name one."""
    kind = PARSER_FLAGS.get(flag.dest or "")
    card = b.model.parsers.get(kind) if kind else None
    if not card or str(value) == str(card):
        return
    wanted = b.sel["parsers"]
    on = wanted.get(kind, True) is not False if isinstance(wanted, dict) else str(wanted).lower() not in (
        "false", "no", "off")
    if on:
        raise RecipeError(f"sglang_extra_args: {flag.written} {value} replaces {b.model.id}'s {kind.replace('_', '-')} "
                          f"parser {card} (its parser card, which sglang_parsers turns on); another parser leaves "
                          f"{'tool calls' if kind == 'tool_call' else 'the reasoning'} as raw text in `content`. "
                          f"Drop it, or turn the card's off first (sglang_parsers: {{{kind}: false}})")


def apply_remove_args(b: Build) -> Build:
    names = b.sel["remove_args"] or []
    args = b.args
    for raw in names:
        try:
            flag = resolve_flag(raw, "sglang_remove_args", b.catalog, b.version)
            mine = owned(flag, "sglang_remove_args", b.version)
        except RecipeError as exc:
            b = b.refuse(exc)
            continue
        if mine is not None:
            b = b.with_(claims=b.claims + (Claim("sglang_remove_args", flag, None, *mine),))
            continue
        where = same_dest(args, flag, b.version)
        if not where:
            b = b.warn(f"sglang_remove_args: {flag.written} is not in the command of {b.where}; nothing removed")
        args = [a for i, a in enumerate(args) if i not in where]
    return b.with_(args=args)


def cell_args(b: Build) -> Build:
    """The cell's flags as the release reads them (a prefix such as --tp becomes the flag it stands for); a flag the
    collection sets in a site recipe's cell is a Claim (judged against the final command), and no cell may carry a
    secret."""
    site = b.cell.origin == "site"
    variable = f"sglang_recipes (cell {b.cell.gpu}/{b.cell.quant}/{b.cell.strategy})"
    args = []
    claims = list(b.claims)
    for arg in b.args:
        if arg.origin == "cell":  # the model path the engine put first
            args.append(arg)
            continue
        try:
            flag = resolve_flag(arg.name, variable, b.catalog, b.version)
            mine = owned(flag, variable, b.version, knob_owned=False) if site else None
            check_secret_value(arg.value, f"{variable}: {flag.written}" if site else f"cell {b.cell.gpu}: {flag.written}")
        except RecipeError as exc:
            b = b.refuse(exc)
            continue
        if mine is not None:
            claims.append(Claim(variable, flag, True if arg.value is None else arg.value, *mine))
            continue
        args.append(arg._replace(name=flag.name) if flag.dest is not None else arg)
    return b.with_(args=args, claims=tuple(claims))


def check_env(env: dict[str, Any]) -> None:
    """sglang_env ends up in the plan, rendered/ and --diff: no secret-shaped value (secret-named variables are refused
    by input_checks.check_env)."""
    for key, value in env.items():
        if not secret_env_name(key):  # a secret-named one is refused once, by its name (input_checks.check_env)
            check_secret_value(value, f"sglang_env.{key}")


def apply_listen(b: Build) -> Build:
    """--host and --port close the command, as upstream writes them."""
    args = argv.drop(b.args, "--host", "--port")
    return b.with_(args=args + [argv.Arg("--host", b.sel["host"], "sglang_host"),
                                argv.Arg("--port", str(b.port), "sglang_port")])


def suggest(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    return f"; did you mean {', '.join(close)}?" if close else ""
