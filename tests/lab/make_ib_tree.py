"""Build a /sys/class/infiniband tree (the kernel's documented layout) for tests that run roles on it.

Usage: make_ib_tree.py ROOT '{"mlx5_0": {"ports": {"1": {"state": "ACTIVE"}}}}'
The JSON is the device spec of tests/helpers.py:ib_tree (state, layer, rate, gids per port).
"""
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers import ib_tree  # noqa: E402


def main() -> int:
    root = Path(sys.argv[1])
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    spec = json.loads(sys.argv[2])
    for dev in spec.values():
        dev["ports"] = {int(k): v for k, v in dev.get("ports", {}).items()}
    ib_tree(root, spec, ("uverbs0", "rdma_cm"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
