# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A checkpoint's bytes on each GPU against the GPU's memory: the one owner of that arithmetic. Pure.

The planner's fit (site/coherence.weights_fit: the weights leave the KV cache room) and the site checker's (checks/
views.py: the weights fit in --mem-fraction-static of each GPU, as the release parses the rendered command) both ask
here; the facts are in data/ (a checkpoint's size_gb in data/models/<id>/model.yml, a GPU's vram_gb in data/gpus.yml
or a site's sglang_gpu_platforms, SGLang's memory reserve in data/sglang/memory.yml).

Tensor and pipeline parallelism split the weights over TP x PP GPUs. Expert parallelism (--ep-size) splits the experts
among the same GPUs instead of slicing each one, so a GPU holds the same share; DP attention replicates the attention
weights in each of its groups, a few percent of a MoE checkpoint, which this leaves out.
"""
from __future__ import annotations

import functools
from pathlib import Path

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

DATA = Path(__file__).resolve().parents[3] / "data"
MIB_PER_GB = 1e9 / 2 ** 20


def per_gpu_gb(size_gb: float, tp: int, pp: int) -> float:
    """The checkpoint's GB on each of the TP x PP GPUs it is sharded over."""
    return float(size_gb) / max(1, int(tp) * int(pp))


def share(size_gb: float, vram_gb: float, tp: int, pp: int) -> float:
    """The share of each GPU's memory the weights take."""
    return per_gpu_gb(size_gb, tp, pp) / float(vram_gb)


@functools.lru_cache(maxsize=1)
def _reserve() -> tuple[float, float]:
    doc = yaml_read.safe_load((DATA / "sglang" / "memory.yml").read_text(encoding="utf-8"))
    return float(doc["reserve_floor_mib"]), float(doc["reserve_floor_above_mib"])


def default_fraction(vram_gb: float) -> float:
    """The most --mem-fraction-static SGLang takes when the command leaves it unset: its memory minus the reserve
    floor SGLang keeps on a large GPU (data/sglang/memory.yml), over its memory."""
    floor_mib, above_mib = _reserve()
    vram_mib = float(vram_gb) * MIB_PER_GB
    return (vram_mib - floor_mib) / vram_mib if vram_mib > above_mib else 1.0
