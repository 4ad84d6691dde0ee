"""Rewrite roles/<role>/meta/variables.yml in one layout: short entries on one line, long ones as blocks.

Usage: python tools/format_variables.py roles/<role> [...]
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

HEADER = "---\n# Descriptions of the role's variables; tools/write_argument_specs.py turns them into argument_specs.yml.\n"


class Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> Any:
        return super().increase_indent(flow, False)


def entry(name: str, info: dict[str, Any]) -> str:
    flow = yaml.dump({name: info}, Dumper=Dumper, default_flow_style=None, width=10_000, sort_keys=False).strip()
    inline = "  " + flow.replace(f"{name}: ", f"{name}: ", 1)
    if len(inline) <= 118 and "\n" not in flow:
        return inline + "\n"
    block = yaml.dump({name: info}, Dumper=Dumper, default_flow_style=False, width=110, sort_keys=False)
    return "".join("  " + line + "\n" for line in block.splitlines())


def main(paths: list[str]) -> int:
    for role in paths:
        path = Path(role) / "meta" / "variables.yml"
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        head = {k: v for k, v in doc.items() if k not in ("variables", "entry_points")}
        text = HEADER + yaml.dump(head, Dumper=Dumper, sort_keys=False, width=110) + "variables:\n"
        text += "".join(entry(n, i) for n, i in doc["variables"].items())
        if doc.get("entry_points"):
            text += yaml.dump({"entry_points": doc["entry_points"]}, Dumper=Dumper, sort_keys=False, width=110)
        if yaml.safe_load(text) != doc:
            raise SystemExit(f"{path}: the rewrite would change the content")
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
