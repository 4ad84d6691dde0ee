"""How long a no-change run of playbooks/upgrade.yml takes on labs of N servers and a router (tests only).

  upgrade_timing.py [--sizes 1,4,8] [--out .cache/upgrade-timing.json]

Per N: a plain lab (tests/lab/lab.py) converged by site.yml, then upgrade.yml against the same inventory three times
with nothing to move (every node already runs the target): the wall time of each, and the first run's task count.
The first of the three fills nothing new (site.yml cached the facts); the median is reported. Run it under
the lab's lock: `bash tests/lab/docker-lock.sh .venv/bin/python tests/lab/upgrade_timing.py`.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lab  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,4,8")
    ap.add_argument("--out", default=str(ROOT / ".cache" / "upgrade-timing.json"))
    args = ap.parse_args()
    results = {}
    for n in [int(x) for x in args.sizes.split(",")]:
        name = f"upgt{n}"
        lab.destroy(name)
        inv = lab.up(name, n, "plain")
        try:
            converge = lab.converge(name, False, [])
            if converge.returncode:
                raise SystemExit(f"site.yml failed on {name}")
            walls, recaps = [], ""
            for _round in range(3):
                start = time.monotonic()
                run = lab.run_ansible(["ansible-playbook", "-i", str(inv), "playbooks/upgrade.yml", "-e",
                                       f"upgrade_dir={lab.lab_dir(name)}/upgrade"], quiet=True)
                walls.append(round(time.monotonic() - start, 1))
                recaps = run.stdout
                if run.returncode or "nothing:" not in run.stdout:
                    raise SystemExit(f"upgrade.yml on {name} did not find nothing to do:\n{run.stdout[-3000:]}")
            changed = sum(int(c) for c in re.findall(r"changed=(\d+)", recaps))
            results[n] = {"servers": n, "hosts": n + 1, "wall_s": walls, "median_s": statistics.median(walls),
                          "changed": changed}
            print(f"[upgrade timing] N={n}: {walls} s, changed={changed}", flush=True)
        finally:
            lab.destroy(name)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
