#!/usr/bin/env python3
"""Fault injection on a lab node, with the recovery time measured (tests only; copied onto the node).

  recovery.py kill UNIT [--url URL] [--timeout S]
      kill -9 the unit's main process; recovered when systemd runs a new main process and, with --url,
      that URL answers 200.
  recovery.py wait --url URL [--since EPOCH] [--timeout S]
      recovered when URL answers 200; the time counts from --since (e.g. before a restart) or from now.
Prints one JSON line: {"fault", "unit", "recovery_s", "old_pid", "new_pid"}; exits 1 when not recovered.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request


def main_pid(unit: str) -> int:
    out = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit], capture_output=True, text=True,
                         check=True).stdout.strip()
    return int(out or 0)


def healthy(url: str | None) -> bool:
    if not url:
        return True
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback URL given by the test
            return resp.status == 200
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["kill", "wait"])
    ap.add_argument("unit", nargs="?")
    ap.add_argument("--url")
    ap.add_argument("--since", type=float)
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    old = new = 0
    start = args.since or time.time()
    if args.mode == "kill":
        old = main_pid(args.unit)
        if not old:
            print(json.dumps({"fault": "kill-9", "unit": args.unit, "error": "unit has no main process"}))
            return 1
        start = time.time()
        os.kill(old, signal.SIGKILL)
    while time.time() - start < args.timeout:
        if args.unit:
            new = main_pid(args.unit)
        if (args.mode == "wait" or new not in (0, old)) and healthy(args.url):
            print(json.dumps({"fault": "kill-9" if args.mode == "kill" else "restart", "unit": args.unit,
                              "recovery_s": round(time.time() - start, 1), "old_pid": old, "new_pid": new}))
            return 0
        time.sleep(0.2)
    print(json.dumps({"fault": args.mode, "unit": args.unit, "error": f"not recovered in {args.timeout}s"}))
    return 1


if __name__ == "__main__":
    sys.exit(main())
