# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One page cell as the collection's cell (data/models/<id>/cookbook/<revision>/cells.yml), or why it is left out.

The page writes each cell as `--flag value` strings with `--model-path {{MODEL_NAME}}` among them and
`--host {{HOST_IP}} --port {{PORT}}` at the end. The cell keeps the other flags as an ordered mapping under their full
names (argparse prefixes such as --tp become --tp-size); the engine adds model path (first), host and port. A value is
read as the shell reads the copied command (`'{"a": 1}'` is the JSON text without the quotes); integers become int,
everything else stays as written ("0.80" stays "0.80"). `{{MODEL_NAME}}` elsewhere (a speculative draft that is the
checkpoint itself) is the cell's checkpoint id; any other placeholder is left for the operator, so the cell is left
out. Every imported cell is read by the flag table of the release its image names (or the pinned release) exactly as
that release's parser reads it (recipe/cli.py); a cell the release refuses is left out with the parser's words.
Pure; controller only.
"""
from __future__ import annotations

import re
import shlex
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.cookbook.page import PageCell, nodes_of
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import parse_version

MODEL_NAME = "{{MODEL_NAME}}"
_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")
#: flags the engine writes itself for every cell (model path first, host and port last)
ENGINE_FLAGS = {"--model-path": "MODEL_NAME", "--host": "HOST_IP", "--port": "PORT"}


class LeftOut(ValueError):
    """A page cell the importer cannot carry, with the reason (shown in the import report and cells.yml)."""


def scalar(text: str, where: str) -> Any:
    """One flag value as a shell reads the copied command (quotes removed); integers stay integers, everything
    else is the exact string upstream wrote."""
    words = shlex.split(text)
    if len(words) != 1:
        raise LeftOut(f"{where}: the value {text!r} is {len(words)} shell words; expected one")
    word = words[0]
    return int(word) if word.isdigit() else word


def _placeholders(text: str) -> list[str]:
    return _PLACEHOLDER.findall(text)


def _engine_flag(name: str, value: str) -> bool:
    """--model-path {{MODEL_NAME}}, --host {{HOST_IP}}, --port {{PORT}}: the engine's own."""
    return name in ENGINE_FLAGS and value == "{{" + ENGINE_FLAGS[name] + "}}"


def flags_of(items: tuple[str, ...], checkpoint: str, aliases: dict[str, str], where: str) -> dict[str, Any]:
    """{--full-name: value} of the cell's flags, without the engine's own; True for a bare switch."""
    out: dict[str, Any] = {}
    seen_model = False
    for item in items:
        name, _sep, value = item.partition(" ")
        if _engine_flag(name, value.strip()):
            seen_model = seen_model or name == "--model-path"
            continue
        value = value.replace(MODEL_NAME, checkpoint)
        left = _placeholders(value)
        if left:
            raise LeftOut(f"{name} {value}: the page leaves {', '.join('{{' + p + '}}' for p in left)} for the "
                          "operator to fill in")
        name = aliases.get(name, name)
        if name in out:
            raise LeftOut(f"{where}: {name} appears twice")
        out[name] = scalar(value, f"{where} {name}") if value else True
    if not seen_model:
        raise LeftOut(f"{where}: no --model-path {MODEL_NAME} (the page gives the model another way)")
    return out


def env_of(items: tuple[str, ...], where: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise LeftOut(f"{where}: the environment entry {item!r} is not NAME=value")
        left = _placeholders(value)
        if left:
            raise LeftOut(f"env {key}: the page leaves {', '.join('{{' + p + '}}' for p in left)} for the operator "
                          "to fill in")
        out[key] = value
    return out


def argv_of(flags: dict[str, Any], checkpoint: str) -> list[str]:
    """The cell's command line as the page copies it, for the release's parser (engine flags with their values)."""
    argv = ["--model-path", checkpoint]
    for name, value in flags.items():
        argv += [name] if value is True else [name, str(value)]
    return argv + ["--host", "0.0.0.0", "--port", "30000"]


def spelled_for(argv: list[str], release: str, renames: list[dict[str, Any]]) -> list[str]:
    """argv with each renamed flag in the spelling the release's parser takes (data/sglang/versions.yml renames),
    as the engine writes it for that release."""
    out = list(argv)
    for rename in renames:
        new = parse_version(release) >= parse_version(str(rename["new_since"]))
        old_name, new_name = (rename["old"], rename["new"]) if new else (rename["new"], rename["old"])
        out = [new_name if token == old_name else token for token in out]
    return out


def release_reads(argv: list[str], table: dict[str, Any] | None, release: str,
                  renames: list[dict[str, Any]] | None = None) -> None:
    """Refuse a command the release's parser refuses (argparse's words), or a release without a flag table; a flag
    the collection renames per release is read in that release's spelling."""
    argv = spelled_for(argv, release, renames or [])
    if table is None:
        raise LeftOut(f"SGLang {release} (the release its image names) has no flag table in the collection; add one "
                      "with tools/sglang_flag_table.py from that release's wheel")
    try:
        cli.parse(argv, cli.Table.of(table))
    except cli.CliError as exc:
        raise LeftOut(f"SGLang {release}'s parser refuses the page's command: {exc}") from exc


def convert(cell: PageCell, checkpoint: str | None, aliases: dict[str, str]) -> dict[str, Any]:
    """The collection's cell for one page cell (flags, env, badge), or LeftOut."""
    if cell.problem:
        raise LeftOut(cell.problem)
    if not checkpoint:
        raise LeftOut(f"modelNames has no checkpoint for {cell.quant}")
    flags = flags_of(cell.flags, checkpoint, aliases, cell.label)
    return {"gpu": cell.gpu, "quant": cell.quant, "strategy": cell.strategy, "nodes": nodes_of(cell.nodes_text),
            "verified": cell.verified, "env": env_of(cell.env, cell.label), "flags": flags}
