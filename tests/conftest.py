"""Make `ansible_collections.metalserve.sglang` importable from this checkout.

The checkout is linked at .build/collections/ansible_collections/metalserve/sglang (the Makefile
does the same for ansible-playbook), and Ansible's collection path points there too, so tests that
go through Ansible's own loader and tests that import the engine see the same files.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "metalserve" / "sglang"

if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(ROOT, target_is_directory=True)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(COLLECTIONS))
os.environ.setdefault("ANSIBLE_CONFIG", str(ROOT / "ansible.cfg"))
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
