"""TEST DOUBLE entry of the lab's stand-in SGLang images (tests/lab/registry.sh server; tests only).

A docker-mode unit runs `docker run ... <image> sglang serve <flags>` (or `python3 -m sglang.launch_server <flags>`),
and the upgrade's measurement runs `docker run --network host ... <image> python3 -m sglang.bench_serving <flags>`, both
written by the collection. In a stand-in image those commands reach this file (/usr/local/bin/sglang and the tiny
`sglang` package beside it), which starts:
  serve / launch_server   tests/doubles/openai_double.py on the --host/--port/--served-model-name the unit gave,
                          reporting the release the image was built for (/etc/metalserve-standin/release) and
                          behaving as the image was built to (/etc/metalserve-standin/behaviour.json: openai_double
                          arguments, e.g. ["--tpot-ms", "25"] for a slower build, ["--mode", "unhealthy"]);
  bench_serving           tests/doubles/bench_serving_double.py, the client double.
Nothing of SGLang is inside: the lab's nodes have no GPU, and the real image is unreachable here.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ETC = Path("/etc/metalserve-standin")


def flag(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else default


def server_argv(argv: list[str]) -> list[str]:
    """openai_double's command line for a `sglang serve` command line, with the image's release and behaviour."""
    release = (ETC / "release").read_text().strip() if (ETC / "release").exists() else "unknown"
    behaviour = json.loads((ETC / "behaviour.json").read_text()) if (ETC / "behaviour.json").exists() else []
    return [sys.executable, str(HERE / "openai_double.py"), "--host", flag(argv, "--host", "127.0.0.1"),
            "--port", flag(argv, "--port", "30000"), "--model", flag(argv, "--served-model-name", "default"),
            "--version", release, "--tpot-ms", "5", "--ttft-ms", "50", *[str(a) for a in behaviour]]


def main(module: str, argv: list[str]) -> None:
    if module in ("serve", "launch_server"):
        target = server_argv(argv)
        print("TEST DOUBLE of sglang serve (stand-in image):", " ".join(target), flush=True)
    elif module == "bench_serving":
        target = [sys.executable, str(HERE / "bench_serving_double.py"), *argv]
    else:
        raise SystemExit(f"stand-in image: `{module}` is not something this TEST DOUBLE answers")
    os.execv(target[0], target)


if __name__ == "__main__":
    # /usr/local/bin/sglang: `sglang serve ...`
    main(sys.argv[1] if len(sys.argv) > 1 else "", sys.argv[2:])
