# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How one cookbook revision's cell differs from the newest shipped revision's (pure functions).

A site that pins sglang_cookbook_revision to an older revision gets, per host, a warning naming what
the newest page does differently for the same GPU, precision, strategy and node count: flags added,
removed or changed, environment, image, the verified badge, or that the strategy is gone.
"""
from __future__ import annotations

from typing import Any, Callable

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import Cell, Model, Revision


def _flag(name: str, value: Any) -> str:
    return name if value is True else f"{name} {value}"


def _env(name: str, value: Any) -> str:
    return f"{name}={value}"


def changes(old: dict[str, Any], new: dict[str, Any], show: Callable[[str, Any], str] = _flag,
            what: str = "") -> list[str]:
    """What `new` does differently from `old`: adds (in `new`'s order), changes, drops (in `old`'s)."""
    added = [show(k, v) for k, v in new.items() if k not in old]
    changed = [f"{k} {old[k]} -> {v}" for k, v in new.items() if k in old and str(old[k]) != str(v)]
    dropped = [show(k, v) for k, v in old.items() if k not in new]
    return [f"{verb} {what}{', '.join(items)}" for verb, items in
            (("adds", added), ("changes", changed), ("drops", dropped)) if items]


def cell_changes(old: Cell, new: Cell, old_image: str | None = None, new_image: str | None = None) -> list[str]:
    out = changes(dict(old.flags), dict(new.flags))
    out += changes(old.env, new.env, _env, "env ")
    if old_image != new_image:
        out.append(f"runs image {new_image} instead of {old_image}")
    if old.verified != new.verified:
        out.append("is verified upstream" if new.verified else "is no longer verified upstream")
    return out


def _name(cell: Cell) -> str:
    return f"{cell.gpu}/{cell.quant}/{cell.strategy}/{cell.nodes} node{'s' if cell.nodes > 1 else ''}"


def same_command(a: Cell, b: Cell) -> bool:
    return dict(a.flags) == dict(b.flags) and a.env == b.env


def revision_warning(model: Model, cell: Cell) -> str | None:
    """The warning for a host whose cell comes from an older revision than the newest shipped one, or None
    when the cell is the newest's (or a site's own) or the newest revision has the very same cell."""
    if not model.revisions or not cell.revision or cell.origin != "cookbook":
        return None
    newest: Revision = model.revisions[0]
    if cell.revision == newest.id:
        return None
    old_rev = next(r for r in model.revisions if r.id == cell.revision)
    lead = (f"cookbook revision {cell.revision} (sglang_cookbook_revision) differs from the newest shipped revision "
            f"{newest.id} for {_name(cell)}")
    now = next((c for c in newest.cells if c.key == cell.key), None)
    if now is None:
        siblings = [c for c in newest.cells if (c.gpu, c.quant, c.nodes) == (cell.gpu, cell.quant, cell.nodes)]
        offer = ", ".join(c.strategy for c in siblings) or "nothing"
        same = [c.strategy for c in siblings if same_command(c, cell)]
        carried = f"; its {' and '.join(same)} carries these very flags" if same else ""
        return (f"{lead}: the {cell.strategy} strategy is gone there ({cell.quant} on {cell.gpu} offers {offer})"
                f"{carried}")
    image = (old_rev.images.get(cell.gpu) or {}).get("ref"), (newest.images.get(cell.gpu) or {}).get("ref")
    changes = cell_changes(cell, now, *image)
    if not changes:
        return None
    return f"{lead}: {newest.id} " + "; ".join(changes)
