# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan artifact: the whole site's plan, with digests of everything it was planned from, so that a run that
sees part of the site applies its hosts' part of that plan instead of planning another site from what it sees.

A run that sees part of the site: an AWX/AAP job slice (each slice's inventory holds only its hosts, its groups
only those hosts: awx/main/models/inventory.py get_script_data), a run with --limit, or an inventory that holds
part of the site. Such a run cannot plan the site (ranks, heads, routers' workers and monitoring targets depend on
hosts it does not see); it takes its hosts' plans from the artifact, after checking, host by host, that what it
sees of each is what the artifact was planned from.

What is digested (the inputs of plan.plan_site()):
- per host: every variable inventory_vars.site_inputs() reads (sglang_*, monitoring_*, ansible_host,
  ansible_python_interpreter), the facts it reads (ansible_facts), and the groups the host belongs to; a secret
  (data/variables.yml `secret: true`, or a role setting marked no_log: runtime.secret_variables()) is digested by
  its presence only, never its value;
  playbook settings (data/variables.yml `playbooks`, such as the artifact's own path) are left out: they say where
  files go, not what a host gets;
- the collection: its version and every file the plan reads or runs (data/, plugins/plugin_utils/, the roles'
  defaults and argument specs), file by file.
The artifact stores digests only (and the plans, which hold placeholders where secrets go), so it can be
committed with the project. Pure functions over plain data, apart from collection_files() and load(), which read
files.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime

FORMAT = 1
KIND = "metalserve.sglang site plan"
ROOT = Path(__file__).resolve().parents[3]
#: what of the collection a plan depends on (globs under its root)
COLLECTION_INPUTS = ("data/**/*", "plugins/plugin_utils/**/*.py", "roles/*/defaults/main.yml",
                     "roles/*/meta/argument_specs.yml", "roles/*/meta/variables.yml", "roles/*/files/**/*",
                     "playbooks/templates/**/*")
#: how many hosts a message names before it counts the rest
NAMED = 8


def canonical(value: Any) -> str:
    """One text per value: sorted keys, no spaces; what a digest is taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def _secret_names() -> frozenset[str]:
    return runtime.secret_variables()


@functools.lru_cache(maxsize=1)
def _playbook_settings() -> frozenset[str]:
    return frozenset(load_catalog().variables.get("playbooks", {}))


def digested_value(name: str, value: Any) -> Any:
    """What stands for a variable in its digest: a secret's presence, else the value."""
    if name in _secret_names():  # exactly the no_log settings: a name hint ("key", "token") would hide real inputs
        return {"secret": "set" if value not in (None, "", [], {}) else "empty"}
    return value


def memberships(groups: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """{host: sorted groups it belongs to}, 'all' left out (every host is in it)."""
    out: dict[str, list[str]] = {}
    for group in sorted(groups):
        if group == "all":
            continue
        for host in groups[group]:
            out.setdefault(str(host), []).append(str(group))
    return out


def host_record(hv: Mapping[str, Any], member_of: Iterable[str]) -> dict[str, Any]:
    """One host's inputs as digests: {digest, vars: {name: digest}, facts: {name: digest}, groups: [...]}."""
    settings = _playbook_settings()
    record: dict[str, Any] = {
        "vars": {k: digest(digested_value(k, v)) for k, v in sorted(hv.items())
                 if k != "ansible_facts" and k not in settings},
        "facts": {k: digest(v) for k, v in sorted((hv.get("ansible_facts") or {}).items())},
        "groups": sorted(member_of),
    }
    record["digest"] = digest(record)
    return record


def host_records(hostvars: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Iterable[str]],
                 hosts: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    member = memberships(groups)
    return {h: host_record(hostvars[h], member.get(h, [])) for h in sorted(hosts if hosts is not None else hostvars)}


def collection_record(version: str, files: Mapping[str, str]) -> dict[str, Any]:
    """The collection a plan was made with: its version and {relative path: sha256} of the files it read."""
    record = {"version": str(version), "files": dict(sorted(files.items()))}
    return {**record, "digest": digest(record)}


@functools.lru_cache(maxsize=4)
def collection_files(root: Path = ROOT) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(version, ((path, sha256), ...)) of the collection at `root` (a checkout: galaxy.yml; an installed
    collection: MANIFEST.json). Read once per process."""
    version = "unknown"
    if (root / "MANIFEST.json").is_file():
        version = json.loads((root / "MANIFEST.json").read_text(encoding="utf-8"))["collection_info"]["version"]
    elif (root / "galaxy.yml").is_file():
        version = (yaml.safe_load((root / "galaxy.yml").read_text(encoding="utf-8")) or {}).get("version", "unknown")
    found = {}
    for pattern in COLLECTION_INPUTS:
        for path in root.glob(pattern):
            if path.is_file() and "__pycache__" not in path.parts:
                found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return str(version), tuple(sorted(found.items()))


def this_collection() -> dict[str, Any]:
    version, files = collection_files()
    return collection_record(version, dict(files))


def inputs(hostvars: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Iterable[str]],
           collection: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a site's plan is made from, as digests: {hosts: {host: record}, groups: {group: members},
    inputs_digest}. The same inputs give the same plans (the collection's digest covers the code that plans)."""
    hosts = host_records(hostvars, groups)
    members = {str(g): sorted(str(h) for h in m) for g, m in sorted(groups.items())}
    return {"hosts": hosts, "groups": members,
            "inputs_digest": digest({"collection": collection["digest"],
                                     "hosts": {h: r["digest"] for h, r in hosts.items()}, "groups": members})}


def make(site: Mapping[str, Any], hostvars: Mapping[str, Mapping[str, Any]], groups: Mapping[str, Iterable[str]],
         collection: Mapping[str, Any], made_from: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The artifact of a whole site's plan (plan.plan_site()'s result, planned without errors); `made_from`:
    inputs() of the same hostvars and groups, when the caller has it already."""
    if site.get("errors"):
        raise ValueError("a plan with errors makes no artifact")
    made_from = made_from or inputs(hostvars, groups, collection)
    plans, site_monitoring = dict(site["plans"]), dict(site.get("monitoring") or {})
    return {"kind": KIND, "format": FORMAT, "inputs_digest": made_from["inputs_digest"], "collection": dict(collection),
            "groups": made_from["groups"], "hosts": made_from["hosts"], "plans": plans, "monitoring": site_monitoring,
            "plans_digest": plans_digest(plans, site_monitoring)}


def plans_digest(plans: Mapping[str, Any], site_monitoring: Mapping[str, Any]) -> str:
    """The digest of what the artifact tells the nodes (its plans and the site's monitoring): a plan edited by hand
    or by a bad merge after the artifact was made no longer matches it, and is not applied."""
    return digest({"plans": plans, "monitoring": site_monitoring})


def text_made_from(path: Path, inputs_digest: str) -> str | None:
    """The text of the artifact at `path` when it was made from inputs with this digest (the same plans: nothing to
    write, no need to encode thousands of plans again), else None. Reads the file's lines up to the digest's."""
    try:
        with path.open(encoding="utf-8") as handle:
            for number, text in enumerate(handle):
                if text.startswith('"inputs_digest":'):
                    if text.rstrip(",\n") != f'"inputs_digest":{json.dumps(inputs_digest)}':
                        return None
                    return path.read_text(encoding="utf-8")
                if number > 1 and not text.startswith(('"', "{", "}")):
                    return None  # not a file dump() wrote
    except (OSError, UnicodeDecodeError):
        return None
    return None


def dump(artifact: Mapping[str, Any]) -> str:
    """The artifact's file text, deterministic (the same plan writes the same bytes): JSON with one line per host in
    `hosts` and `plans` (a diff names the hosts whose plan changed) and per other top-level key. Each line is
    encoded compactly by json's C encoder; an indented dump of a 2,048-host site would take seconds."""
    def line(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    parts = []
    for key in sorted(artifact):
        value = artifact[key]
        if key in ("hosts", "plans") and isinstance(value, Mapping) and value:
            body = ",\n".join(f"{line(str(h))}:{line(value[h])}" for h in sorted(value))
            parts.append(f"{line(key)}:{{\n{body}\n}}")
        else:
            parts.append(f"{line(key)}:{line(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def load(path: Path) -> dict[str, Any] | None:
    """The artifact at `path`, or None when there is no file; a file that is not an artifact raises ValueError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path} is not a plan artifact (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ValueError(f"{path} is not a plan artifact (no kind: {KIND!r})")
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} has format {data.get('format')!r}; this collection reads format {FORMAT}")
    return data


def partial_run(inventory_hosts: Iterable[str], run_hosts: Iterable[str], declared: bool) -> str | None:
    """Why a run of site.yml's planning play (hosts: all) applies the artifact instead of planning the site; None: it
    plans the site. `declared`: the artifact's path was given (sglang_plan_artifact), which says that the inventory
    may hold part of the site (an AWX/AAP job slice, an inventory subset) and that runs apply what was planned;
    without it, the inventory is the site and every run plans it, --limit runs included."""
    inventory, run = set(inventory_hosts), set(run_hosts)
    if not declared:
        # the inventory is the site: a --limit run still sees every host (cached facts for the others), so it plans
        # the whole site, with the site checker, as a full run does
        return None
    if run != inventory:
        return (f"--limit with sglang_plan_artifact: the run covers {len(run)} of the inventory's {len(inventory)} "
                "host(s)")
    return f"sglang_plan_artifact is set: the inventory's {len(inventory)} host(s) apply the site's plan from it"


def _names(hosts: list[str]) -> str:
    shown = ", ".join(hosts[:NAMED])
    return shown + (f" and {len(hosts) - NAMED} more" if len(hosts) > NAMED else "")


def changes(made: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between a host's record in the artifact and what this run sees (names, never values)."""
    out = []
    for key, label in (("vars", ""), ("facts", "ansible_facts.")):
        before, after = made.get(key) or {}, now.get(key) or {}
        for name in sorted(set(before) | set(after)):
            if name not in after:
                out.append(f"{label}{name} unset now (set when the artifact was made)")
            elif name not in before:
                out.append(f"{label}{name} set now (unset when the artifact was made)")
            elif before[name] != after[name]:
                out.append(f"{label}{name} changed")
    joined = sorted(set(now.get("groups") or []) - set(made.get("groups") or []))
    left = sorted(set(made.get("groups") or []) - set(now.get("groups") or []))
    if joined:
        out.append(f"joined group(s) {', '.join(joined)}")
    if left:
        out.append(f"left group(s) {', '.join(left)}")
    return out


def collection_changes(made: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    if made.get("digest") == now.get("digest"):
        return []
    out = []
    if made.get("version") != now.get("version"):
        out.append(f"version {made.get('version')} when the artifact was made, {now.get('version')} now")
    before, after = made.get("files") or {}, now.get("files") or {}
    differ = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if differ:
        out.append(f"{len(differ)} file(s) the plan reads differ: {_names(differ)}")
    return out or ["its digest differs"]


def verify(artifact: Mapping[str, Any], hostvars: Mapping[str, Mapping[str, Any]],
           groups: Mapping[str, Iterable[str]], run_hosts: Iterable[str], collection: Mapping[str, Any],
           whole_inventory: bool) -> list[str]:
    """Why the artifact cannot be applied to `run_hosts` (empty: it can). Each of the run's hosts must be in it and
    have the inputs it was planned from; the collection must be the one that made it. `whole_inventory`: the run
    sees every host of the site's inventory (--limit), so every host is checked and hosts added to it or gone from it
    are problems too."""
    problems = []
    if artifact.get("plans_digest") != plans_digest(artifact.get("plans") or {}, artifact.get("monitoring") or {}):
        problems.append("its plans are not the ones it was made with (edited by hand or by a merge since): an edited "
                        "plan skips every check")
    for line in collection_changes(artifact.get("collection") or {}, collection):
        problems.append(f"the collection: {line}")
    made = artifact.get("hosts") or {}
    # a run that sees the whole inventory (--limit) checks every host: a run host's plan reads its peers' (router
    # workers, firewall members, fan-out sources, monitoring targets), so a peer changed since is a stale plan too
    run = sorted(set(hostvars)) if whole_inventory else sorted(set(run_hosts))
    missing = [h for h in run if h not in made]
    if missing:
        problems.append(f"{_names(missing)}: not in the artifact (host(s) added since it was made)")
    if whole_inventory:
        gone = sorted(set(made) - set(hostvars))
        if gone:
            problems.append(f"{_names(gone)}: in the artifact, gone from the inventory")
        now_groups = {str(g): sorted(str(h) for h in m) for g, m in groups.items()}
        moved = sorted(g for g in set(now_groups) | set(artifact.get("groups") or {})
                       if now_groups.get(g) != (artifact.get("groups") or {}).get(g))
        if moved:
            problems.append(f"group(s) {_names(moved)}: other members than when the artifact was made")
    now = host_records(hostvars, groups, [h for h in run if h in made])
    own = set(run_hosts)
    by_change: dict[tuple[str, ...], list[str]] = {}
    for host, record in now.items():
        if record["digest"] == made[host].get("digest"):
            continue
        found = changes(made[host], record)
        if host not in own:
            # a peer outside the run: its facts come from a cache that may have expired; its variables and groups
            # are what its plan was made from here
            found = [c for c in found if not c.startswith("ansible_facts.")]
            if not found:
                continue
        by_change.setdefault(tuple(found) or ("inputs differ",), []).append(host)
    for what, hosts in sorted(by_change.items(), key=lambda item: item[1][0]):
        problems.append(f"{_names(hosts)}: {'; '.join(what)}")
    return problems


def refusal(path: str, artifact: Mapping[str, Any] | None, why_partial: str, problems: list[str],
            inventory: str) -> str:
    """The message of a run that refuses the artifact (or its absence), with how to make it."""
    make_it = (f"make it from the whole site: ansible-playbook metalserve.sglang.site -i {inventory} --tags plan "
               f"-e sglang_plan_artifact={path} (plans every host with the facts a run gathers and changes nothing; "
               "render.yml makes it too, from cached facts), then give it to the run (AWX/AAP: commit it with the "
               "project, or put it on a path every job mounts)")
    if artifact is None:
        return (f"refused before anything changed: this run covers part of the site ({why_partial}), so it applies "
                f"the site's plan artifact, and there is none at {path}; {make_it}")
    lines = [f"refused before anything changed: this run covers part of the site ({why_partial}), and the plan "
             f"artifact {path} (made from {len(artifact.get('hosts') or {})} host(s), inputs "
             f"{str(artifact.get('inputs_digest', ''))[:19]}) does not match what the run sees:"]
    lines += [f"  - {p}" for p in problems]
    lines.append(f"A plan made from other inputs is not applied; {make_it}.")
    return "\n".join(lines)


def applied(artifact: Mapping[str, Any], inventory_hosts: Iterable[str]) -> dict[str, Any]:
    """The part of the artifact a run uses: the plans of the hosts in its inventory, the site's monitoring."""
    plans = artifact.get("plans") or {}
    return {"plans": {h: plans[h] for h in sorted(set(inventory_hosts)) if h in plans},
            "monitoring": artifact.get("monitoring") or {}, "errors": {}}
