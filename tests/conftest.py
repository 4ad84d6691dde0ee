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


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ANN001, ARG001 - pytest hook
    generated = next((m for n, m in list(sys.modules.items()) if n.endswith("test_generated_sites")), None)
    if generated is not None and (generated.RAN["sites"] or generated.RAN["mutations"]):
        classes = len(generated.RAN["by_class"])
        terminalreporter.write_line(f"generated sites: {generated.RAN['sites']} planned clean; {generated.RAN['mutations']} "
                                    f"mutations of {classes} classes refused naming their host")
    """Print the size of the bad-input matrix (tests/bad_inputs.yml) and how its tests did."""
    import yaml  # noqa: PLC0415

    matrix = yaml.safe_load((ROOT / "tests" / "bad_inputs.yml").read_text())
    ran = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
           if "bad_inputs" in r.nodeid and "[" in r.nodeid and r.when == "call"]
    if not ran:
        return
    failed = sum(1 for r in ran if r.outcome == "failed")
    sizes = ", ".join(f"{layer} {len(cases)}" for layer, cases in matrix.items())
    terminalreporter.write_line(f"bad-input matrix: {sum(len(c) for c in matrix.values())} cases ({sizes}); "
                                f"{len(ran)} run here, {failed} failed")
