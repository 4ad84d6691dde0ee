# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A process that holds GPU memory and nothing else, for node acceptance's real runs (tools/device).

Allocates GIB GiB on GPU 0 with torch (plain cudaMalloc through its caching allocator, touched once so the
pages are resident), writes its pid to READY, then sleeps until it is killed.
Usage: python3 tools/device/gpu_hog.py GIB READY
"""
from __future__ import annotations

import os
import sys
import time

import torch


def main() -> int:
    gib, ready = float(sys.argv[1]), sys.argv[2]
    held = torch.empty(int(gib * 2**30), dtype=torch.uint8, device="cuda:0")
    held.fill_(0x5A)
    torch.cuda.synchronize()
    with open(ready, "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()} {held.numel()}\n")
    while True:
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
