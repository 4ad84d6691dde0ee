"""Router semantics the site checker judges (checks/routing.py), against the sglang-router release the site runs.

Each command line below is started with the real `python -m sglang_router.launch_router` of sglang-router 0.3.2 (the
parser venv holds it): a line its ConfigValidator refuses exits at once with "Configuration error"; a line it takes
listens on its --port (its workers need not exist: it waits for them). The checker must refuse
exactly the lines the router refuses to start, saying so, and must refuse a static worker list that the router's own
Router.from_args drops for --service-discovery (read back from the router's RouterArgs).

Needs SGLANG_PARSER_PYTHON (`make slow`), or METALSERVE_ROUTER_PYTHON naming a Python with sglang-router 0.3.2.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.site import check_site

pytestmark = pytest.mark.slow
PYTHON = os.environ.get("METALSERVE_ROUTER_PYTHON") or os.environ.get("SGLANG_PARSER_PYTHON", "")
W1, W2 = "http://127.0.0.1:39001", "http://127.0.0.1:39002"
CASES: dict[str, list[str]] = {
    "power-of-two-one-worker": ["--worker-urls", W1, "--policy", "power_of_two"],
    "power-of-two-two-workers": ["--worker-urls", W1, W2, "--policy", "power_of_two"],
    "cache-aware-one-worker": ["--worker-urls", W1, "--policy", "cache_aware"],
    "pd-power-of-two-over-the-pair": ["--pd-disaggregation", "--prefill", W1, "--decode", W2, "--policy", "power_of_two"],
    "pd-decode-policy-one-decode": ["--pd-disaggregation", "--prefill", W1, "--decode", W2, "--decode-policy",
                                    "power_of_two"],
    "pd-prefill-policy-one-prefill": ["--pd-disaggregation", "--prefill", W1, "--decode", W2, "--prefill-policy",
                                      "power_of_two"],
    "discovery-without-selector": ["--worker-urls", W1, "--service-discovery"],
}
STARTED = "still serving"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def run_router(argv: list[str], wait: float = 180.0) -> str:
    """'still serving' once the router listens on its --port (sglang-router binds it only after its ConfigValidator
    passed), or the refusal it exits with. Not a fixed delay: on a loaded machine a refusal can take longer than a
    few seconds to come."""
    port = free_port()
    line = [PYTHON, "-m", "sglang_router.launch_router", *argv, "--host", "127.0.0.1", "--port", str(port),
            "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port())]
    with tempfile.TemporaryFile("w+") as log, subprocess.Popen(line, stdout=log, stderr=subprocess.STDOUT) as proc:
        deadline = time.monotonic() + wait
        while proc.poll() is None:
            if listening(port):
                proc.terminate()
                proc.wait(timeout=30)
                return STARTED
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait(timeout=30)
                raise AssertionError(f"sglang-router neither listened nor exited within {wait:.0f} s: {argv}")
            time.sleep(0.2)
        log.seek(0)
        out = log.read()
    refusal = [x for x in out.splitlines() if "Configuration error" in x]
    return refusal[0] if refusal else f"exit {proc.returncode}: {out[-500:]}"


def checker_verdict(argv: list[str]) -> list[str]:
    start = "/opt/sglang/venvs/0.5.23/bin/python -m sglang_router.launch_router " + " ".join(argv) + \
        " --host 0.0.0.0 --port 8000 --prometheus-port 29000"
    unit = "\n".join(["[Service]", "Type=exec", f"ExecStart={start}", ""])
    tree = {"r": {"machine": "10.0.9.10", "gpu": None, "vendor": None, "gpus_per_node": None,
                  "files": {"/etc/systemd/system/sglang-router.service": unit}}}
    return [m for _h, m in check_site(tree) if "refuses to start" in m]


@pytest.fixture(scope="module")
def router_python() -> str:
    if not PYTHON:
        pytest.skip("no sglang-router: run through `make slow` (SGLANG_PARSER_PYTHON)")
    return PYTHON


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_checker_refuses_what_the_router_refuses(router_python: str, case: str) -> None:
    real = run_router(CASES[case])
    said = checker_verdict(CASES[case])
    assert real == STARTED or "Configuration error" in real, real
    if real == STARTED:
        assert said == [], (case, said)
    else:
        reason = real.split("Configuration error: ", 1)[1].split(": ", 1)[-1]
        assert any(reason in m for m in said), (case, real, said)


def test_service_discovery_drops_the_static_worker_list(router_python: str) -> None:
    script = ("import json, sys\n"
              "from sglang_router.launch_router import parse_router_args\n"
              "from sglang_router.router import Router\n"
              "args = parse_router_args(json.loads(sys.argv[1]))\n"
              "Router.from_args(args)\n"
              "print(json.dumps(args.worker_urls))\n")
    dropped: dict[str, Any] = {}
    lines = {"static": ["--worker-urls", W1],
             "discovery": ["--worker-urls", W1, "--service-discovery", "--selector", "app=sglang"]}
    for name, argv in lines.items():
        proc = subprocess.run([router_python, "-c", script, json.dumps(argv)], capture_output=True, text=True,
                              check=True, timeout=120)
        dropped[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert dropped == {"static": [W1], "discovery": []}
    start = f"/opt/sglang/venvs/0.5.23/bin/python -m sglang_router.launch_router --worker-urls {W1} " \
            "--service-discovery --selector app=sglang --host 0.0.0.0 --port 8000"
    tree = {"r": {"machine": "10.0.9.10", "gpu": None, "vendor": None, "gpus_per_node": None,
                  "files": {"/etc/systemd/system/sglang-router.service": f"[Service]\nExecStart={start}\n"}}}
    assert any("drops the static worker list" in m for _h, m in check_site(tree))
