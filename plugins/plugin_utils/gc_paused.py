# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Python's cyclic garbage collector paused while a whole site is planned.

An action runs in a worker Ansible forks from its main process for one task, and the worker holds the main
process's heap (the parsed inventory: thousands of hosts' variables). Planning a big site allocates millions of
small objects, so the collector runs its full passes over that inherited heap again and again while finding almost
nothing to free: at 2,048 servers, 0.5 s of render.yml's plan step (docs/performance.md). What a paused collector
leaves behind is freed when the worker exits at the end of the task; reference counting frees everything else as usual.
"""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block, and back as it was after it (also when the block raises)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
