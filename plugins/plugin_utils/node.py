# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node has: the folders, programs, unit names and files of data/node.yml, their one home. Pure; controller only.

The plan reads them here; roles and playbooks through the lookup metalserve.sglang.node (plugins/lookup/node.py),
which calls get(). A value of data/node.yml may name a folder of its `folders` as {name}; get() returns it expanded.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

NODE_FILE = Path(__file__).resolve().parents[2] / "data" / "node.yml"
_FOLDER = re.compile(r"\{([a-z_]+)\}")


def _expand(value: Any, folders: dict[str, str]) -> Any:
    """{name} of a folder filled in (other {fields}, such as a URL's {distribution}, are left as they are)."""
    if isinstance(value, dict):
        return {k: _expand(v, folders) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, folders) for v in value]
    if isinstance(value, str):
        return _FOLDER.sub(lambda m: folders.get(m.group(1), m.group(0)), value)
    return value


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """data/node.yml with every {folder} expanded (read once; treat it as read-only). A folder may name another."""
    doc = yaml_read.safe_load(NODE_FILE.read_text(encoding="utf-8"))
    folders = dict(doc["folders"])
    for _depth in range(len(folders)):
        folders = {k: _FOLDER.sub(lambda m: doc["folders"][m.group(1)], v) for k, v in folders.items()}
        doc["folders"] = folders
    return _expand(doc, folders)


def expand(doc: Any) -> Any:
    """Another data file's values with data/node.yml's {folder} names filled in (a vendor's keyring in {apt_keyrings})."""
    return _expand(doc, table()["folders"])


def get(name: str) -> Any:
    """A value by its dotted name ('programs.docker', 'firewalls.imex.unit')."""
    node: Any = table()
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"data/node.yml has no {name!r} ({part!r} is not among "
                           f"{', '.join(sorted(node)) if isinstance(node, dict) else 'the values'})")
        node = node[part]
    return node


def folder(name: str) -> str:
    return str(get(f"folders.{name}"))


def program(name: str) -> str:
    return str(get(f"programs.{name}"))


def unit(name: str) -> str:
    return str(get(f"units.{name}"))


def path(name: str) -> str:
    return str(get(f"files.{name}"))


def systemd(name: str) -> str:
    return str(get(f"systemd.{name}"))


def unit_path(unit_name: str) -> str:
    """Where a unit of ours is written: the administrator's unit folder."""
    return f"{folder('units')}/{unit_name}"


def dropin_path(unit_name: str, file_name: str) -> str:
    """A drop-in of another package's unit (<units>/<unit>.d/<file>)."""
    return f"{folder('units')}/{unit_name}.d/{file_name}"


def instance_unit(instance: str) -> str:
    """The systemd unit of a serving instance (a server's, a replica's, a router's): sglang-<instance>.service."""
    return f"{systemd('unit_prefix')}{instance}{systemd('unit_suffix')}"


def container_name(instance: str) -> str:
    """The docker container of an instance and its units' SyslogIdentifier: sglang-<instance>."""
    return f"{systemd('unit_prefix')}{instance}"
