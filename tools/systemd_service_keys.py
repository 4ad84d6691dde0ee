"""Write data/systemd/service-keys.yml: the keys systemd accepts in a unit's [Service] section, read from the installed
systemd's own unit-file parser table (load-fragment-gperf, compiled into libsystemd-core-<version>.so: every entry is
a "Service.<Key>" string there). Run it on a node of the oldest systemd the collection converges when that changes.
Usage: python tools/systemd_service_keys.py [path/to/libsystemd-core-<version>.so]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# one-owner: where Debian's systemd package keeps its shared library on the machine that runs this tool (not a node)
SEARCH = ("/usr/lib/x86_64-linux-gnu/systemd", "/usr/lib/aarch64-linux-gnu/systemd", "/usr/lib/systemd", "/lib/systemd")


def library() -> Path:
    for folder in SEARCH:
        found = sorted(Path(folder).glob("libsystemd-core-*.so"))
        if found:
            return found[-1]
    raise SystemExit("no libsystemd-core-<version>.so found (install systemd)")


def main(argv: list[str]) -> int:
    lib = Path(argv[1]) if len(argv) > 1 else library()
    version = re.search(r"libsystemd-core-(\d+)", lib.name).group(1)
    data = lib.read_bytes()
    keys = sorted({m.decode() for m in re.findall(rb"(?<![A-Za-z0-9.])Service\.([A-Z][A-Za-z0-9]+)(?=\x00)", data)})
    if len(keys) < 100:
        raise SystemExit(f"{lib}: only {len(keys)} Service.* keys found; not a systemd core library?")
    lines = ["---", f"# The keys systemd {version} accepts in a unit's [Service] section: its unit-file parser table",
             "# (src/core/load-fragment-gperf.gperf.in, compiled into libsystemd-core; read by",
             "# tools/systemd_service_keys.py from Debian 12's systemd package). A key outside it is \"Unknown key ... ignoring\"",
             "# to systemd (systemd-analyze verify): the plan refuses such a line in sglang_server_hardening.",
             f"systemd: \"{version}\"", "keys:"]
    lines += [f"  - {k}" for k in keys]
    (ROOT / "data" / "systemd" / "service-keys.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(keys)} keys of systemd {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
