"""Wait until an SGLang server (or router) answers its health URL; exit 1 on timeout.

Installed by metalserve.sglang.sglang_server and run as ExecStartPost (with --pid $MAINPID), so the unit
becomes `active` only once the server serves, and fails at once when the server process dies while
loading (systemd would otherwise wait for this script until TimeoutStartSec). Standard library only.
"""
import argparse
import os
import sys
import time
import urllib.request


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--interval", type=float, default=5)
    ap.add_argument("--pid", type=int, default=0, help="give up as soon as this process is gone")
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if args.pid:
            try:
                os.kill(args.pid, 0)
            except ProcessLookupError:
                print(f"the server process {args.pid} exited before {args.url} answered", file=sys.stderr)
                return 1
            except PermissionError:
                pass
        try:
            with urllib.request.urlopen(args.url, timeout=5) as response:  # noqa: S310 - a local http URL
                if response.status == 200:
                    return 0
        except OSError:
            pass
        time.sleep(args.interval)
    print(f"{args.url} did not answer within {args.timeout}s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
