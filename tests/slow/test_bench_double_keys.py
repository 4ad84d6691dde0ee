"""The upgrade lab's client double (tests/doubles/bench_serving_double.py) writes the result keys SGLang's own
bench_serving writes, read from the release's sglang/benchmark/serving.py (the `result = {...}` of the function that
appends it to --output-file), so the collection's readers of those rows meet the same names as on a real node.
"""
from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

pytestmark = pytest.mark.slow


def real_result_keys(serving: Path) -> set[str]:
    """The string keys of every `result = {...}` dict literal in serving.py."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(serving.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "result" for t in node.targets)):
            keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return keys


def test_the_client_double_writes_the_keys_of_the_releases_bench_serving() -> None:
    python = os.environ.get("SGLANG_PARSER_PYTHON", "")
    if not python:
        pytest.skip("no SGLang parser venv (SGLANG_PARSER_PYTHON; `make slow` makes it)")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    serving = Path(purelib) / "sglang" / "benchmark" / "serving.py"
    real = real_result_keys(serving)
    assert {"mean_ttft_ms", "median_itl_ms", "total_throughput", "completed"} <= real, serving
    sys.path.insert(0, str(ROOT / "tests" / "doubles"))
    import bench_serving_double  # noqa: E402  pylint: disable=import-outside-toplevel

    args = bench_serving_double.parse(["--base-url", "http://127.0.0.1:1", "--max-concurrency", "2"])
    outs = [{"ok": True, "latency": 0.5, "ttft": 0.1, "itl": [0.01, 0.02], "tokens": 3}]
    written = set(bench_serving_double.result(args, outs, 1.0))
    assert isinstance(args, argparse.Namespace)
    assert written - real == set(), f"the client double writes keys SGLang's bench_serving does not: {written - real}"
