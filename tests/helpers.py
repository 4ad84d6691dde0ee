"""Shared helpers for the tests: the upstream cells and the expected command per cell."""
from __future__ import annotations

import functools
import importlib.util
import os
import shlex
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM_DIR = ROOT / "tests" / "fixtures" / "upstream"
#: the seed: the cells as first transcribed from the page (2026-11-30, no commit recorded)
SEED = UPSTREAM_DIR / "glm-5.3-cookbook-cells.yaml"
MODELS_DIR = ROOT / "data" / "models"
#: the models imported from a cookbook page (data/models/<id>/model.yml names its page and variant)
PAGE_MODELS: list[str] = sorted(p.parent.name for p in MODELS_DIR.glob("*/model.yml")
                                if (yaml.safe_load(p.read_text()) or {}).get("cookbook"))
#: the GPUs the collection describes (data/gpus.yml); a page's cells on other GPUs are not imported
KNOWN_GPUS = set(yaml.safe_load((ROOT / "data" / "gpus.yml").read_text()))


def model_doc(model: str = "glm-5.3") -> dict[str, Any]:
    return yaml.safe_load((MODELS_DIR / model / "model.yml").read_text())


def revisions(model: str = "glm-5.3") -> list[str]:
    """The cookbook revisions shipped for a model, newest first (its model.yml)."""
    return list(model_doc(model)["cookbook_revisions"])


#: the cookbook revisions of GLM-5.3 we ship, newest first (data/models/glm-5.3/model.yml)
REVISIONS: list[str] = revisions("glm-5.3")


def page_of(model: str = "glm-5.3") -> tuple[str, str]:
    page = model_doc(model)["cookbook"]
    return str(page["page"]), str(page.get("variant", "default"))


def fixture_dir(model: str, revision: str) -> Path:
    return UPSTREAM_DIR / page_of(model)[0] / revision


def importer() -> Any:
    """tools/import_cookbook_cells.py as a module (the wrapper over plugins/plugin_utils/cookbook that data/ and the
    fixture site are imported with)."""
    spec = importlib.util.spec_from_file_location("import_cookbook_cells", ROOT / "tools" / "import_cookbook_cells.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def read_js_export(text: str, name: str) -> Any:
    """The page's literal (plugins/plugin_utils/cookbook/jsread.py, the importer's reader)."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.jsread import read_js_export as read
    return read(text, name)


def upstream(revision: str | None = None, model: str = "glm-5.3") -> dict[str, Any]:
    """One revision of a model's upstream page in the seed's shape (model_names, docker_images, placeholders, cells),
    read from the unedited upstream file: the cells of the model's variant on the GPUs data/gpus.yml knows.
    No revision: the GLM-5.3 seed transcription."""
    if revision is None:
        return yaml.safe_load(SEED.read_text(encoding="utf-8"))
    fixture = fixture_dir(model, revision)
    source = yaml.safe_load((fixture / "source.yml").read_text(encoding="utf-8"))
    config = read_js_export((fixture / source["config_file"]).read_text(encoding="utf-8"), "config")
    _page, variant = page_of(model)
    names = dict(config["modelNames"])
    return {"revision": revision, "model": model, "variant": variant, "config": config,
            "model_names": {k.split("|")[1]: v for k, v in names.items() if k.startswith(variant + "|")},
            "model_names_by_gpu": {k: v for k, v in names.items() if k.count("|") == 2},
            "docker_images": dict(config["dockerImages"]),
            "placeholders": {k: config["placeholders"][k]["default"] for k in ("HOST_IP", "PORT")},
            "cells": [c for c in config["cells"]
                      if c["match"].get("variant", "default") == variant and c["match"]["hw"] in KNOWN_GPUS]}


def checkpoint_name(cell: dict[str, Any], doc: dict[str, Any]) -> str:
    """The page's model name for a cell, looked up as its engine does: `hw|variant|quant`, then `variant|quant`."""
    m = cell["match"]
    variant = doc.get("variant", "default")
    return doc.get("model_names_by_gpu", {}).get(f"{m['hw']}|{variant}|{m['quant']}") or doc["model_names"][m["quant"]]


def upstream_nodes(value: str) -> int:
    return 1 if value == "single" else int(value.split("-")[1])


def selection_of(cell: dict[str, Any], **extra: Any) -> dict[str, Any]:
    m = cell["match"]
    return {"gpu": m["hw"], "quant": m["quant"], "strategy": m["strategy"], "nodes": upstream_nodes(m["nodes"]),
            **extra}


def upstream_tokens(cell: dict[str, Any], doc: dict[str, Any], rank: int = 0, head: str = "10.0.0.1") -> list[str]:
    """The cookbook's command for a cell, with placeholders filled, each flag item read as a shell reads the copied
    command, and the multi-node rule applied exactly as the cookbook states it (independent of our engine)."""
    model = checkpoint_name(cell, doc)
    tokens: list[str] = []
    for item in cell["flags"]:
        item = (item.replace("{{MODEL_NAME}}", model).replace("{{HOST_IP}}", doc["placeholders"]["HOST_IP"])
                .replace("{{PORT}}", doc["placeholders"]["PORT"]))
        tokens.extend(shlex.split(item))
    nodes = upstream_nodes(cell["match"]["nodes"])
    if nodes > 1:
        for anchor in ("--enable-dp-attention", "--dp", "--tp", "--model-path"):
            if anchor in tokens:
                at = tokens.index(anchor) + (1 if anchor == "--enable-dp-attention" else 2)
                tokens[at:at] = ["--nnodes", str(nodes), "--node-rank", str(rank), "--dist-init-addr", f"{head}:20000"]
                break
    return tokens


def cookbook_alone(cell: dict[str, Any]) -> dict[str, Any]:
    """The knobs that render a cell as the cookbook writes it: metrics off (ours), and parsers on only where the
    cell itself names them (Qwen3.8-27B's do; GLM-5.3's and DeepSeek-V4's take them from the parser card)."""
    names = any(item.split()[0] in ("--reasoning-parser", "--tool-call-parser") for item in cell["flags"])
    return {"parsers": names, "metrics": False}


def model_path_first(tokens: list[str]) -> list[str]:
    """The same command with `--model-path X` moved to the front, where the engine writes it for every model (the
    GLM-5.3 page puts it first; DeepSeek-V4 and Qwen3.8 put --trust-remote-code before it)."""
    i = tokens.index("--model-path")
    return tokens[i:i + 2] + tokens[:i] + tokens[i + 2:]


FIXTURES = ROOT / "tests" / "fixtures"
REAL_X2 = FIXTURES / "nvidia" / "h200-x2-fc"
SYNTH_X8 = FIXTURES / "nvidia" / "h200-x8-synthetic"


def capture_fields(capture: Path) -> tuple[str, ...]:
    header = (capture / "query-gpu-header.csv").read_text().splitlines()[0]
    return tuple(h.split(" [")[0] for h in header.split(", "))


def capture_rows(capture: Path) -> str:
    """The captured CSV without its header and units: what --format=csv,noheader,nounits prints."""
    lines = (capture / "query-gpu-header.csv").read_text().splitlines()[1:]
    return "\n".join(line.replace(" MiB", "") for line in lines) + "\n"


def sysfs_from_capture(capture: Path, root: Path) -> Path:
    """A /sys + /proc tree holding what the capture read from them (PCI devices, driver version, modules)."""
    for line in (capture / "pci-devices.txt").read_text().splitlines():
        bdf, vendor, device, klass, numa = line.split()
        d = root / "sys" / "bus" / "pci" / "devices" / bdf
        d.mkdir(parents=True)
        for name, value in (("vendor", vendor), ("device", device), ("class", klass), ("numa_node", numa)):
            (d / name).write_text(value + "\n")
    (root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (root / "proc" / "driver" / "nvidia" / "version").write_text((capture / "proc-driver-version.txt").read_text())
    modules = [line for line in (capture / "modules.txt").read_text().splitlines() if " Live " in line]
    (root / "proc" / "modules").write_text("\n".join(modules) + "\n")
    return root


def ib_tree(root: Path, devices: dict[str, dict[str, Any]], dev_entries: tuple[str, ...] = ()) -> Path:
    """Build /sys/class/infiniband (kernel ABI Documentation/ABI/stable/sysfs-class-infiniband) under root.

    devices: {mlx5_0: {guid, numa, pci, netdevs: [...], ports: {1: {state, phys, layer, rate,
    gids: {index: (gid, type, ndev)}}}}}. Built from the documented layout, not captured.
    """
    for name, spec in devices.items():
        pci_dir = root / "sys" / "devices" / "pci0000:00" / spec.get("pci", "0000:17:00.0")
        (pci_dir / "net").mkdir(parents=True, exist_ok=True)
        (pci_dir / "numa_node").write_text(f"{spec.get('numa', -1)}\n")
        for netdev in spec.get("netdevs", []):
            (pci_dir / "net" / netdev).mkdir(exist_ok=True)
        dev = root / "sys" / "class" / "infiniband" / name
        dev.mkdir(parents=True)
        (dev / "device").symlink_to(os.path.relpath(pci_dir, dev))  # relative: the tree can be mounted elsewhere
        (dev / "node_guid").write_text(spec.get("guid", "0c42:a103:0000:0001") + "\n")
        (dev / "node_type").write_text("1: CA\n")
        (dev / "fw_ver").write_text("28.43.1014\n")
        for port, p in spec.get("ports", {}).items():
            pd = dev / "ports" / str(port)
            for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
                (pd / sub).mkdir(parents=True, exist_ok=True)
            (pd / "state").write_text({"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN", "INIT": "2: INIT"}[p["state"]] + "\n")
            (pd / "phys_state").write_text(("5: LinkUp" if p["state"] != "DOWN" else "3: Disabled") + "\n")
            (pd / "link_layer").write_text(p.get("layer", "InfiniBand") + "\n")
            (pd / "rate").write_text(p.get("rate", "400 Gb/sec (4X NDR)") + "\n")
            (pd / "lid").write_text(p.get("lid", "0x0") + "\n")
            for i in range(8):
                gid, gtype, ndev = p.get("gids", {}).get(i, ("0000:0000:0000:0000:0000:0000:0000:0000", None, None))
                (pd / "gids" / str(i)).write_text(gid + "\n")
                if gtype:
                    (pd / "gid_attrs" / "types" / str(i)).write_text(gtype + "\n")
                    (pd / "gid_attrs" / "ndevs" / str(i)).write_text(ndev + "\n")
    if dev_entries:
        (root / "dev" / "infiniband").mkdir(parents=True)
        for entry in dev_entries:
            (root / "dev" / "infiniband" / entry).write_text("")
    return root


def raw_from_capture(capture: Path, **extra: Any) -> dict[str, Any]:
    """What gpu_facts collects on a node, taken from a capture folder (for gpu_probe.compose)."""
    pci = [dict(zip(("bdf", "vendor", "device", "class", "numa_node"), line.split()))
           for line in (capture / "pci-devices.txt").read_text().splitlines()] \
        if (capture / "pci-devices.txt").exists() else []
    fields = ("index", "name", "uuid", "pci.bus_id", "pci.device_id", "memory.total", "driver_version",
              "compute_cap", "persistence_mode", "mig.mode.current")
    header = [h.split(" [")[0] for h in (capture / "query-gpu-header.csv").read_text().splitlines()[0].split(", ")]
    rows = []
    for line in (capture / "query-gpu-header.csv").read_text().splitlines()[1:]:
        values = dict(zip(header, line.split(", ")))
        rows.append(", ".join(values[f].split(" ")[0] if f == "memory.total" else values[f] for f in fields))
    raw = {"nvidia_query": "\n".join(rows) + "\n", "nvidia_xml": (capture / "q.xml").read_text(),
           "nvidia_topo": (capture / "topo-m.txt").read_text(), "pci": pci,
           "proc_version": ((capture if (capture / "proc-driver-version.txt").exists() else REAL_X2)
                            / "proc-driver-version.txt").read_text(),
           "proc_modules": "nvidia 14299136 - - Live 0x0 (O)\nnvidia_uvm 1830912 - - Live 0x0 (O)\n",
           "processes": set(), "secure_boot": None}
    raw.update(extra)
    return raw


# --- the fixture site of imported cookbook pages (tests/fixtures/cookbook-site, issue 38) ------------------------

COOKBOOK_SITE = FIXTURES / "cookbook-site"
COOKBOOK_MODELS = COOKBOOK_SITE / "models"


def site_spec() -> dict[str, Any]:
    return yaml.safe_load((COOKBOOK_SITE / "imports.yml").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def site_models() -> dict[str, dict[str, Any]]:
    """{model id: its model.yml} of the fixture site (read once; treat as read-only)."""
    return {p.parent.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(COOKBOOK_MODELS.glob("*/model.yml"))}


def site_cells(model: str) -> list[dict[str, Any]]:
    doc = site_models()[model]
    rev = doc["cookbook_revisions"][0]
    return yaml.safe_load((COOKBOOK_MODELS / model / "cookbook" / rev / "cells.yml").read_text(encoding="utf-8"))["cells"]


def page_folder(model: str) -> Path:
    doc = site_models()[model]
    return UPSTREAM_DIR / doc["cookbook"]["page"] / doc["cookbook_revisions"][0]


@functools.lru_cache(maxsize=None)
def page_config(folder: Path) -> dict[str, Any]:
    """The page's config literal (read once per folder; treat as read-only)."""
    source = yaml.safe_load((folder / "source.yml").read_text(encoding="utf-8"))
    return read_js_export((folder / source["config_file"]).read_text(encoding="utf-8"), "config")


def _default_overlays(config: dict[str, Any], flags: list[str]) -> list[str]:
    """The page's overlay rows at their defaults, as its deployment panel composes the command (none of the site's
    pages has a strategy overlay; their other overlays strip their prefixes and add the default option's flags)."""
    for dim in config.get("overlayDims") or []:
        option = next(o for o in dim["options"] if o["id"] == dim.get("default"))
        flags = [f for f in flags if not any(f.split()[0].startswith(p) for p in dim.get("stripPrefixes") or [])]
        tail = [f for f in flags if f.split()[0] in ("--host", "--port")]
        flags = [f for f in flags if f not in tail] + list(option.get("flags") or []) + tail
    return flags


def page_cell(config: dict[str, Any], variant: str, key: tuple[str, str, str, int]) -> dict[str, Any]:
    """The page's cell of one variant for (gpu, quant, strategy, nodes); a page without a strategy dimension has one
    operating point, which the collection names balanced."""
    for cell in config["cells"]:
        m = cell["match"]
        found = (m["hw"], m["quant"], m.get("strategy", "balanced"), upstream_nodes(m["nodes"]))
        if m.get("variant", "default") == variant and found == key:
            return cell
    raise KeyError(key)


def page_tokens(config: dict[str, Any], variant: str, cell: dict[str, Any], rank: int = 0,
                head: str = "10.0.0.1") -> list[str]:
    """The page's command for a cell, as the cookbook's copy button gives it: placeholders filled with the page's
    defaults and the cell's model name, each item read as a shell reads it, the multi-node rule as the page states."""
    m = cell["match"]
    model = config["modelNames"].get(f"{m['hw']}|{variant}|{m['quant']}") or config["modelNames"][f"{variant}|{m['quant']}"]
    defaults = {k: v["default"] for k, v in config["placeholders"].items()}
    doc = {"model_names": {m["quant"]: model}, "variant": variant, "placeholders": defaults}
    items = [f.replace("{{MODEL_NAME}}", model) for f in _default_overlays(config, list(cell["flags"]))]
    return upstream_tokens({**cell, "flags": items}, doc, rank, head)


def page_selection(model: str, cell: dict[str, Any]) -> tuple[dict[str, Any], list[str], str]:
    """(the recipe selection that renders an imported cell as the page writes it: the page's parsers only where the
    cell names them, metrics off; the page's own cell; its variant) for a model of the fixture site."""
    variant = site_models()[model]["cookbook"]["variant"]
    config = page_config(page_folder(model))
    theirs = page_cell(config, variant, (cell["gpu"], cell["quant"], cell["strategy"], cell["nodes"]))
    names = {f.split()[0] for f in theirs["flags"]}
    sel = {"model": model, "gpu": cell["gpu"], "quant": cell["quant"], "strategy": cell["strategy"],
           "nodes": cell["nodes"], "recipes": [str(COOKBOOK_MODELS)], "gpu_platforms": site_spec()["sglang_gpu_platforms"],
           "metrics": False, "parsers": {"reasoning": "--reasoning-parser" in names, "tool_call": "--tool-call-parser" in names}}
    return sel, page_tokens(config, variant, theirs, 0), variant


def page_env(model: str, cell: dict[str, Any]) -> dict[str, str]:
    """The environment the page sets for a cell (its `env` entries, NAME=value)."""
    variant = site_models()[model]["cookbook"]["variant"]
    theirs = page_cell(page_config(page_folder(model)), variant, (cell["gpu"], cell["quant"], cell["strategy"],
                                                                  cell["nodes"]))
    return dict(item.split("=", 1) for item in theirs.get("env") or [])


def page_tokens_at(model: str, cell: dict[str, Any], rank: int) -> list[str]:
    variant = site_models()[model]["cookbook"]["variant"]
    config = page_config(page_folder(model))
    theirs = page_cell(config, variant, (cell["gpu"], cell["quant"], cell["strategy"], cell["nodes"]))
    return page_tokens(config, variant, theirs, rank)
