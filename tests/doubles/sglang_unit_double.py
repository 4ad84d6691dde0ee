"""TEST DOUBLE launcher: runs tests/doubles/openai_double.py where a unit's `sglang serve` would run (tests only).

A systemd drop-in of the test lab replaces a server unit's ExecStart with this script and the unit's name:

    [Service]
    ExecStart=
    ExecStart=/usr/bin/python3 /usr/local/lib/metalserve-test/sglang_unit_double.py %n

It reads the unit file the collection wrote (/etc/systemd/system/<name>), takes from its ExecStart the release (the
venv /opt/sglang/venvs/<release>/bin/sglang, or the image of a docker unit), --host, --port and --served-model-name,
and starts the double on that address, reporting that release as its version. How a release behaves is the test's
choice: /etc/metalserve-test/double-rules.json holds [{"match": "<text in the ExecStart line>", "args": [...]}] (with
"host": "<name>", a rule holds on that container only); the first rule whose text the line contains adds its
arguments (e.g. ["--tpot-ms", "20"] for a slower release, or ["--mode", "unhealthy"] for one that never answers
/health; later arguments win). No rule: 50 ms to the first token,
5 ms per token after it, healthy.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import socket
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES = Path("/etc/metalserve-test/double-rules.json")


def exec_start(unit_text: str) -> str:
    """The ExecStart line of a unit file, its continuation lines joined."""
    joined = unit_text.replace("\\\n", " ")
    for line in joined.splitlines():
        if line.startswith("ExecStart="):
            return line[len("ExecStart="):]
    raise SystemExit("no ExecStart in the unit")


def flag(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


def double_argv(line: str, rules: list[dict]) -> list[str]:
    argv = shlex.split(line)
    venv = re.search(r"/venvs/([^/]+)/bin/", line)
    image = next((a for a in argv if re.match(r"^[\w.:/-]+:[\w.-]+$|@sha256:", a) and "/" in a), None)
    release = venv.group(1) if venv else (image or "unknown")
    out = [sys.executable, str(HERE / "openai_double.py"), "--host", flag(argv, "--host", "0.0.0.0"),
           "--port", flag(argv, "--port", "30000"), "--model", flag(argv, "--served-model-name", "zai-org/GLM-5.3"),
           "--version", release, "--tpot-ms", "5", "--ttft-ms", "50"]
    for rule in rules:
        if rule["match"] in line and rule.get("host", socket.gethostname()) == socket.gethostname():
            return out + [str(a) for a in rule.get("args", [])]
    return out


def main() -> None:
    unit = Path("/etc/systemd/system") / sys.argv[1]
    rules = json.loads(RULES.read_text()) if RULES.exists() else []
    argv = double_argv(exec_start(unit.read_text()), rules)
    print("TEST DOUBLE of sglang serve:", " ".join(argv), flush=True)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
