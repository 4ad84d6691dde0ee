# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is a checkpoint directory complete? Pure logic plus small file reads; standard library only.

A checkpoint is complete when config.json, model.safetensors.index.json and every shard its weight_map
names are present, each with the size (and, when asked, the sha256) that the source's manifest gives.
Without a manifest, shards are checked for presence and a non-empty size only.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from typing import Any, Callable

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


def expected_files(index_text: str | None) -> list[str]:
    """Files a checkpoint needs, from its safetensors index (or the single-file layout without one)."""
    if index_text is None:
        return ["config.json", SINGLE]
    index = json.loads(index_text)
    shards = sorted(set((index.get("weight_map") or {}).values()))
    if not shards:
        raise ValueError(f"{INDEX} has an empty weight_map")
    return ["config.json", INDEX] + shards


def manifest_from_hub(info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Hub's model info with files metadata (GET /api/models/<repo>/revision/<rev>?blobs=true)
    -> {file: {size, sha256}}; sha256 is known for LFS files (the shards)."""
    out: dict[str, dict[str, Any]] = {}
    for sibling in info.get("siblings") or []:
        name = sibling.get("rfilename")
        if not name:
            continue
        lfs = sibling.get("lfs") or {}
        out[name] = {"size": lfs.get("size", sibling.get("size")), "sha256": lfs.get("sha256")}
    return out


def sha256_of(path: str, chunk: int = 8 * 2**20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def _files_to_check(path: str, manifest: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(files the checkpoint needs, problems) from its index, else the manifest, else the single-file layout."""
    try:
        with open(os.path.join(path, INDEX), encoding="utf-8") as handle:
            index_text: str | None = handle.read()
    except OSError:
        index_text = None
    if index_text is not None:
        try:
            return expected_files(index_text), []
        except (ValueError, json.JSONDecodeError) as exc:
            return [INDEX], [f"{INDEX} is unreadable: {exc}"]
    if manifest:
        return sorted(f for f in manifest if f in ("config.json", INDEX) or f.endswith(".safetensors")), []
    if os.path.exists(os.path.join(path, SINGLE)):
        return expected_files(None), []
    return [INDEX], []


def check_dir(path: str, manifest: dict[str, dict[str, Any]] | None = None,
              verify_checksums: bool = False) -> dict[str, Any]:
    """Compare a directory with what it must hold. Never raises for a missing or partial directory."""
    manifest = manifest or {}
    files, problems = _files_to_check(path, manifest)
    missing, wrong_size, bad_checksum = [], [], []
    present = 0
    sizes = [manifest.get(f, {}).get("size") for f in files]
    expected_total = sum(int(x) for x in sizes) if sizes and all(x is not None for x in sizes) else None
    for name in files:
        full = os.path.join(path, name)
        want = manifest.get(name, {}).get("size")
        try:
            size = os.path.getsize(full)
        except OSError:
            missing.append(name)
            continue
        present += min(size, int(want)) if want is not None else size
        if want is not None and size != int(want):
            wrong_size.append(f"{name} ({size} of {want} bytes)")
        elif want is None and size == 0:
            wrong_size.append(f"{name} (empty)")
        elif verify_checksums and manifest.get(name, {}).get("sha256"):
            if sha256_of(full) != manifest[name]["sha256"]:
                bad_checksum.append(name)
    complete = not (missing or wrong_size or bad_checksum or problems)
    percent = 100 if complete else (int(100 * present / expected_total) if expected_total else None)
    return {"complete": complete, "files": files, "missing": missing, "wrong_size": wrong_size,
            "bad_checksum": bad_checksum, "present_bytes": present, "expected_bytes": expected_total,
            "percent": percent, "problems": problems}


def free_bytes(path: str) -> int | None:
    """Free bytes on the filesystem that holds `path` (or its nearest existing parent)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe) and probe != os.path.dirname(probe):
        probe = os.path.dirname(probe)
    try:
        stat = os.statvfs(probe)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def manifest_from_dir(path: str) -> dict[str, dict[str, Any]]:
    """Sizes of a source checkpoint directory (copy and rsync sources)."""
    out: dict[str, dict[str, Any]] = {}
    for root, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            out[os.path.relpath(full, path)] = {"size": os.path.getsize(full), "sha256": None}
    return out


def describe(result: dict[str, Any]) -> str:
    parts = []
    for key, label in (("missing", "missing"), ("wrong_size", "wrong size"), ("bad_checksum", "bad checksum")):
        if result[key]:
            shown = ", ".join(result[key][:5]) + (f" and {len(result[key]) - 5} more" if len(result[key]) > 5 else "")
            parts.append(f"{label}: {shown}")
    return "; ".join(result["problems"] + parts) or "complete"


class HubError(Exception):
    """The Hub's manifest could not be read (its message names the URL and whether a token was sent)."""


def hub_manifest(fetch: Callable[..., Any], hub: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest from the Hub's repo info (GET /api/models/<repo>/revision/<rev>?blobs=true). `fetch(url,
    headers)` returns (response or None, info) as Ansible's fetch_url does (the node's proxy settings and CA bundle
    apply); the token is read from hub['token_file'] on the node and sent as a bearer header."""
    # no default here: the plan owns the Hub's address (data/node.yml endpoints.hub) and the role passes it
    endpoint = str(hub.get("endpoint") or "").rstrip("/")
    if not endpoint:
        raise HubError("hub.endpoint: the Hub API's URL is required (the model_weights role passes the plan's "
                       "model_weights_hf_endpoint, or the Hugging Face Hub's)")
    repo, revision = hub["repo"], urllib.parse.quote(hub.get("revision") or "main", safe="")
    url = f"{endpoint}/api/models/{repo}/revision/{revision}?blobs=true"
    headers = {}
    if hub.get("token_file"):
        try:
            with open(hub["token_file"], encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError:
            token = ""
        if token:
            headers["Authorization"] = f"Bearer {token}"
    response, info = fetch(url, headers)
    if response is None or info.get("status") != 200:
        raise HubError(f"could not read the manifest from {url}: HTTP {info.get('status')} {info.get('msg', '')}"
                       f"{' (hub.token_file is set)' if headers else ' (no token: hub.token_file is not set)'}")
    return manifest_from_hub(json.loads(response.read()))


def staged(path: str, source_path: str | None, hub: dict[str, Any] | None, fetch: Callable[..., Any],
           verify_checksums: bool = False, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """What is staged at `path` against the manifest of its source (a copy source's folder, the Hub's repo info, or
    `manifest` as given): check_dir's answer with the manifest, a summary and the free bytes. Raises OSError or
    HubError when the manifest cannot be read."""
    if source_path:
        manifest = manifest_from_dir(source_path)
    elif hub:
        manifest = hub_manifest(fetch, hub)
    result = check_dir(path, manifest or {}, verify_checksums)
    result["manifest"] = manifest or {}
    result["summary"] = describe(result)
    result["free_bytes"] = free_bytes(path)
    return result
