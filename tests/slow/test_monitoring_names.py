"""The metric names and router flags the monitoring plan uses, against the installed SGLang 0.5.23 and
sglang-router 0.3.2 themselves (the parser venv: tests/slow/sglang_parser_venv.sh, SGLANG_PARSER_PYTHON)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FIXTURES

pytestmark = pytest.mark.slow
PARSER_PY = os.environ.get("SGLANG_PARSER_PYTHON", "")
MON = FIXTURES / "monitoring"


def installed(module: str) -> Path:
    if not PARSER_PY:
        pytest.fail("SGLANG_PARSER_PYTHON is not set: `make slow` builds the parser venv and sets it")
    out = subprocess.run([PARSER_PY, "-c", f"import importlib.util as u; print(u.find_spec('{module}').origin)"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def test_the_sglang_metric_list_is_the_installed_releases() -> None:
    """tests/fixtures/monitoring/sglang-0.5.23-metrics.txt is what SGLang 0.5.23's own source declares."""
    source = installed("sglang.srt.observability.metrics_collector")
    proc = subprocess.run([sys.executable, str(MON / "extract_sglang_metrics.py"), str(source)], capture_output=True,
                          text=True, check=True)
    assert proc.stdout == (MON / "sglang-0.5.23-metrics.txt").read_text()


def test_metrics_and_health_stay_open_without_the_api_key() -> None:
    """The reason a head's --port is left out of the monitoring firewall and needs no credential to scrape."""
    text = installed("sglang.srt.utils.auth").read_text()
    assert re.search(r'path\.startswith\("/health"\)', text) and re.search(r'path\.startswith\("/metrics"\)', text)


def test_a_members_port_serves_only_health_and_metrics() -> None:
    """node_rank >= 1 runs SGLang's health-only server on --port, with /metrics when metrics are on."""
    common = installed("sglang.srt.utils.common").read_text()
    body = common.split("def launch_dummy_health_check_server", 1)[1].split("\ndef ", 1)[0]
    routes = re.findall(r'@app\.get\("([^"]+)"\)', body)
    assert sorted(routes) == ["/health", "/health_generate", "/ping"] and "add_prometheus_middleware(app)" in body
    engine = installed("sglang.srt.entrypoints.engine").read_text()
    assert "launch_dummy_health_check_server(" in engine


def test_router_prometheus_flags_and_default() -> None:
    proc = subprocess.run([PARSER_PY, "-m", "sglang_router.launch_router", "--help"], capture_output=True, text=True,
                          check=True)
    text = " ".join(proc.stdout.split())
    assert "--prometheus-port PROMETHEUS_PORT Port to expose Prometheus metrics (default: 29000)" in text
    assert "--prometheus-host PROMETHEUS_HOST" in text
