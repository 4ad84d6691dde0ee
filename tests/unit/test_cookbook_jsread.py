"""The importer's reader of a cookbook page (plugins/plugin_utils/cookbook/jsread.py) against JavaScript itself: node
evaluates every upstream page and benchmarks file (tests/eval_page.mjs) and each literal the reader returns must be
the value node computes; what the reader keeps as Opaque (callbacks, expressions) node may compute as it likes.
The tests of the importer read the pages through the same reader, so this is what makes their expectations the
page's own."""
from __future__ import annotations

import json
import shutil
import subprocess
from decimal import Decimal
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.jsread import Opaque, read_js_export
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

PAGES = sorted((ROOT / "tests" / "fixtures" / "upstream").glob("*/*/*.jsx"))
NODE = shutil.which("node")


def differences(ours: Any, theirs: Any, path: str) -> list[str]:
    if isinstance(ours, Opaque):
        return []
    if isinstance(ours, dict):
        if not isinstance(theirs, dict):
            return [f"{path}: {type(theirs).__name__} in JavaScript"]
        out = [f"{path}.{k}: only JavaScript has it" for k in theirs if k not in ours]
        out += [f"{path}.{k}: only ours has it" for k, v in ours.items() if k not in theirs and not isinstance(v, Opaque)]
        return out + [d for k in ours if k in theirs for d in differences(ours[k], theirs[k], f"{path}.{k}")]
    if isinstance(ours, list):
        if not isinstance(theirs, list) or len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items, JavaScript {theirs!r:.60}"]
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(ours, (int, Decimal)) and not isinstance(ours, bool):
        same = isinstance(theirs, (int, float)) and not isinstance(theirs, bool) and float(ours) == float(theirs)
        return [] if same else [f"{path}: {ours} here, {theirs!r} in JavaScript"]
    return [] if ours == theirs else [f"{path}: {ours!r:.60} here, {theirs!r:.60} in JavaScript"]


@pytest.mark.skipif(NODE is None, reason="node is not installed (it is on the CI machine: apt's nodejs)")
def test_every_page_reads_as_javascript_evaluates_it() -> None:
    proc = subprocess.run([str(NODE), str(ROOT / "tests" / "eval_page.mjs"), *map(str, PAGES)], capture_output=True,
                          text=True, check=True, timeout=120)
    evaluated = json.loads(proc.stdout)
    assert len(PAGES) >= 30
    checked = 0
    for page in PAGES:
        for name, value in evaluated[str(page)].items():
            assert differences(read_js_export(page.read_text(encoding="utf-8"), name), value, name) == [], page
            checked += 1
    assert checked == len(PAGES)
