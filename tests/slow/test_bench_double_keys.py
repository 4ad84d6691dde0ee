"""The upgrade lab's client double (tests/doubles/bench_serving_double.py) writes only result keys that SGLang's own
bench_serving writes in each release the lab's images stand in for (0.5.23 and 0.5.13.post1), read from the release's
sglang/benchmark/serving.py or sglang/bench_serving.py (the `result = {...}` appended to --output-file), and every key of those the collection
reads (plugins/plugin_utils/upgrade/state.py RUN_KEYS), so its readers meet the same rows as on a real node.
"""
from __future__ import annotations

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


PYTHONS = {"0.5.23": "SGLANG_PARSER_PYTHON", "0.5.13.post1": "SGLANG_PARSER_PYTHON_0_5_13_POST1"}


@pytest.mark.parametrize("release", sorted(PYTHONS))
def test_the_client_double_writes_the_keys_of_the_releases_bench_serving(release: str) -> None:
    python = os.environ.get(PYTHONS[release], "")
    if not python:
        pytest.skip(f"no SGLang {release} parser venv ({PYTHONS[release]}; `make slow` makes it)")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # 0.5.23 keeps the client in sglang/benchmark/serving.py (sglang/bench_serving.py is a shim there); 0.5.13.post1
    # in sglang/bench_serving.py
    serving = next((f for f in (Path(purelib) / "sglang" / "benchmark" / "serving.py",
                                Path(purelib) / "sglang" / "bench_serving.py") if f.exists()), None)
    assert serving is not None, f"SGLang {release} has its client in neither place under {purelib}/sglang"
    real = real_result_keys(serving)
    sys.path.insert(0, str(ROOT / "tests" / "doubles"))
    import bench_serving_double  # noqa: E402  pylint: disable=import-outside-toplevel
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.upgrade.state import RUN_KEYS  # noqa: E402

    args = bench_serving_double.parse(["--base-url", "http://127.0.0.1:1", "--max-concurrency", "2"])
    outs = [{"ok": True, "latency": 0.5, "ttft": 0.1, "itl": [0.01, 0.02], "tokens": 3}]
    written = set(bench_serving_double.result(args, outs, 1.0))
    assert written - real == set(), f"the double writes keys SGLang {release}'s bench_serving does not: {written - real}"
    read = set(RUN_KEYS) & real
    assert read and read - written == set(), f"the collection reads keys the double never writes: {read - written}"
