# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer of systemd unit text: every unit and drop-in the plan renders (servers, routers, exporters, the
IMEX channel, the weights fan-out, the nftables tables) is made by unit_file(). Pure.

A unit reads: its comment lines, then each [Section] with its lines, one blank line between sections.
"""
from __future__ import annotations

import functools
import re

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node

#: the first comment of the units the serving roles write
HEADER = "Managed by metalserve.sglang; local changes are overwritten."
_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_@%+=:,./\-\[\]]+$")


def quote(token: str) -> str:
    """One argv token for ExecStart: % and $ escaped, quoted when it holds anything else special."""
    text = token.replace("%", "%%").replace("$", "$$")
    if _SAFE_TOKEN.match(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def exec_line(argv: list[str]) -> str:
    """ExecStart= value, one flag per continuation line for readability."""
    return _exec_line(tuple(argv))


@functools.lru_cache(maxsize=4096)
def _exec_line(argv: tuple[str, ...]) -> str:
    out = ""
    for i, token in enumerate(argv):
        sep = "" if i == 0 else (" \\\n    " if token.startswith("--") else " ")
        out += sep + quote(token)
    return out


def unit_file(comments: list[str], sections: dict[str, list[str]]) -> str:
    """The text of a unit or a drop-in: '# ' comment lines, then [Section] and its lines for each section."""
    lines = [f"# {comment}" for comment in comments]
    for i, (name, body) in enumerate(sections.items()):
        lines += ([""] if i else []) + [f"[{name}]", *body]
    return "\n".join(lines) + "\n"


def service_unit(comments: list[str], description: str, unit: list[str], service: list[str]) -> str:
    """A unit that multi-user.target wants: [Unit] Description and `unit`, [Service] `service`, [Install]."""
    return unit_file(comments, {"Unit": [f"Description={description}", *unit], "Service": service,
                                "Install": [f"WantedBy={node.systemd('multi_user')}"]})
