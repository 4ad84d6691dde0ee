"""Completeness of a checkpoint folder: index, shards, sizes, checksums, progress."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.plugins.module_utils import weights_manifest as wm
from ansible_collections.metalserve.sglang.tests.helpers import ROOT


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    subprocess.run([sys.executable, str(ROOT / "tests" / "lab" / "make_checkpoint.py"), str(src), "--shards", "3",
                    "--shard-mib", "1"], check=True)
    return src


def copy(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        if f.name not in skip:
            (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_complete_copy(source: Path, tmp_path: Path) -> None:
    manifest = wm.manifest_from_dir(str(source))
    result = wm.check_dir(str(copy(source, tmp_path / "dst")), manifest, verify_checksums=True)
    assert result["complete"] and result["percent"] == 100
    assert result["files"] == ["config.json", "model.safetensors.index.json", "model-00001-of-00003.safetensors",
                               "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"]
    assert result["present_bytes"] == result["expected_bytes"] == sum(v["size"] for v in manifest.values())
    assert wm.describe(result) == "complete"


def test_missing_wrong_size_and_bad_checksum(source: Path, tmp_path: Path) -> None:
    manifest = wm.manifest_from_dir(str(source))
    dst = copy(source, tmp_path / "dst", skip=("model-00002-of-00003.safetensors",))
    shard3 = dst / "model-00003-of-00003.safetensors"
    shard3.write_bytes(shard3.read_bytes()[:1000])
    shard1 = dst / "model-00001-of-00003.safetensors"
    data = bytearray(shard1.read_bytes())
    data[0] ^= 0xFF
    shard1.write_bytes(bytes(data))
    manifest["model-00001-of-00003.safetensors"]["sha256"] = hashlib.sha256(
        (source / "model-00001-of-00003.safetensors").read_bytes()).hexdigest()
    result = wm.check_dir(str(dst), manifest, verify_checksums=True)
    assert not result["complete"]
    assert result["missing"] == ["model-00002-of-00003.safetensors"]
    assert result["wrong_size"] == [f"model-00003-of-00003.safetensors (1000 of {manifest['model-00003-of-00003.safetensors']['size']} bytes)"]
    assert result["bad_checksum"] == ["model-00001-of-00003.safetensors"]
    assert 0 < result["percent"] < 100
    assert wm.describe(result).startswith("missing: model-00002-of-00003.safetensors; wrong size: model-00003")


def test_without_a_manifest_only_presence_counts(source: Path, tmp_path: Path) -> None:
    dst = copy(source, tmp_path / "dst")
    (dst / "model-00002-of-00003.safetensors").write_bytes(b"")
    result = wm.check_dir(str(dst))
    assert result["wrong_size"] == ["model-00002-of-00003.safetensors (empty)"] and result["percent"] is None


def test_empty_folder_with_and_without_manifest(source: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    bare = wm.check_dir(str(empty))
    assert bare["missing"] == ["model.safetensors.index.json"] and not bare["complete"]
    with_manifest = wm.check_dir(str(empty), wm.manifest_from_dir(str(source)))
    assert len(with_manifest["missing"]) == 5 and with_manifest["percent"] == 0
    assert wm.check_dir(str(tmp_path / "nowhere"))["complete"] is False


def test_single_file_layout_and_broken_index(tmp_path: Path) -> None:
    single = tmp_path / "single"
    single.mkdir()
    (single / "config.json").write_text("{}")
    (single / "model.safetensors").write_bytes(b"x" * 10)
    assert wm.check_dir(str(single))["complete"]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.safetensors.index.json").write_text("{not json")
    result = wm.check_dir(str(broken))
    assert not result["complete"] and result["problems"][0].startswith("model.safetensors.index.json is unreadable")
    (broken / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    assert "empty weight_map" in wm.check_dir(str(broken))["problems"][0]


def test_hub_metadata_becomes_a_manifest() -> None:
    info = {"siblings": [{"rfilename": "config.json", "size": 120},
                         {"rfilename": "model-00001-of-00002.safetensors", "size": 5,
                          "lfs": {"sha256": "ab" * 32, "size": 5_000_000_000}}]}
    assert wm.manifest_from_hub(info) == {"config.json": {"size": 120, "sha256": None},
                                          "model-00001-of-00002.safetensors": {"size": 5_000_000_000, "sha256": "ab" * 32}}


def test_free_bytes_walks_up_to_an_existing_parent(tmp_path: Path) -> None:
    assert wm.free_bytes(str(tmp_path / "not" / "yet" / "there")) == wm.free_bytes(str(tmp_path)) > 0
