# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which stage reads which variable on which host, and the variables an inventory sets where nothing reads them.
Pure; controller only.

Who reads a variable comes from data, never from a list of cases here:

    a role's variable        the role's meta/argument_specs.yml names it; playbooks/site.yml says on which hosts the
                             role runs (its play's `hosts:` and the `when:` of the task that includes it, evaluated
                             against each host's plan as site.yml evaluates it)
    an inventory variable    data/variables.yml; the plan reads it for every host
    narrower                 `read_on` beside the variable (data/variables.yml, roles/<role>/meta/variables.yml):
                             the kinds of host it acts on, any of them (host_kinds)

A variable the inventory sets (a role's default is never in a host's variables) that nothing reads on a host is
reported naming who set it (the inventory's sources: the group_vars or host_vars that hold it, inventory_vars.
variable_origins) and where it would act. What can never act is refused: a host's own setting, or a group's that no
host of that group reads (a router setting on a server rack). A group that spans kinds of host, with some hosts that
read it and some that do not, gets a warning on the others; a site-wide setting (group `all`, extra vars) is the
site's default and is said only when no host of the site reads it (a warning). Linear in the site's variables.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

ROOT = Path(__file__).resolve().parents[3]
SITE_PLAYBOOK = ROOT / "playbooks" / "site.yml"
#: the stage name of variables the plan itself reads (data/variables.yml)
PLAN = "plan"
#: the sections of data/variables.yml the plan reads for every host, and the kinds of host they act on unless a
#: variable says otherwise (`playbooks` variables are the controller's: never judged)
SECTION_READERS = {"recipe": ("server",), "placement": ("server",)}
#: a group that reaches every host: its values are the site's defaults
SITE_WIDE = ("all",)
EXTRA_VARS = "extra vars (-e)"
#: the groups site.yml's plan play makes from each host's plan (group_by key sglang_role_<role>)
_ROLE_GROUP = re.compile(r"^sglang_role_(\w+)$")
#: the task keywords that apply a role inside a play's tasks
ROLE_TASKS = ("ansible.builtin.import_role", "import_role", "ansible.builtin.include_role", "include_role")
_PLAN_PATH = re.compile(r"metalserve_site\.plans\[inventory_hostname\]((?:\.\w+)+)")

KIND_WORDS = {"server": "servers (sglang_role: server)", "router": "routers (sglang_role: router)",
              "none": "hosts with sglang_role: none", "nvidia": "NVIDIA nodes", "amd": "AMD nodes",
              "docker": "docker installs", "uv": "uv installs", "monitoring": "the hosts of the monitoring group",
              "site": "the one host the site-wide settings are read from"}


# --- what the data says -----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def stage_hosts() -> dict[str, tuple[tuple[frozenset[str], Optional[str], str], ...]]:
    """{role: ((host roles its play runs on, the `when` of its include or None, what site.yml calls it), ...)} read
    from playbooks/site.yml. A play on a pattern this does not read (not all, not sglang_role_*) runs everywhere."""
    plays = yaml_read.safe_load(SITE_PLAYBOOK.read_text(encoding="utf-8")) or []
    out: dict[str, list[tuple[frozenset[str], Optional[str], str]]] = {}
    for play in plays:
        kinds = _play_kinds(str(play.get("hosts") or ""))
        for item in play.get("roles") or []:
            role = str(item.get("role") if isinstance(item, dict) else item).rsplit(".", 1)[-1]
            out.setdefault(role, []).append((kinds, _when(item.get("when") if isinstance(item, dict) else None),
                                             str(play.get("name") or "")))
        for task in play.get("tasks") or []:
            included = next((task[key].get("name") for key in ROLE_TASKS if isinstance(task.get(key), dict)), None)
            if included:
                role = str(included).rsplit(".", 1)[-1]
                out.setdefault(role, []).append((kinds, _when(task.get("when")), str(task.get("name") or "")))
    return {role: tuple(entries) for role, entries in out.items()}


def _play_kinds(pattern: str) -> frozenset[str]:
    kinds = set()
    for part in pattern.split(":"):
        found = _ROLE_GROUP.match(part.strip())
        if not found:
            return frozenset(("server", "router", "none"))  # all, or a pattern this does not read: everywhere
        kinds.add(found.group(1))
    return frozenset(kinds)


def _when(value: Any) -> Optional[str]:
    if not value:
        return None
    conditions = value if isinstance(value, list) else [value]
    return " and ".join(f"({c})" for c in conditions)


@functools.lru_cache(maxsize=1)
def variable_readers() -> dict[str, tuple[str, tuple[str, ...]]]:
    """{variable: (stage, kinds it acts on; empty: every host its stage runs on)} for every variable the collection
    documents: data/variables.yml's (stage `plan`) and every role option (stage: its role)."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    doc = yaml_read.safe_load((ROOT / "data" / "variables.yml").read_text(encoding="utf-8")) or {}
    for section, default in SECTION_READERS.items():
        for name, spec in (doc.get(section) or {}).items():
            out[name] = (PLAN, tuple((spec or {}).get("read_on") or default))
    for spec_file in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = spec_file.parent.parent.name
        options = ((yaml_read.safe_load(spec_file.read_text(encoding="utf-8")) or {}).get("argument_specs", {})
                   .get("main", {}).get("options") or {})
        notes_file = spec_file.parent / "variables.yml"
        notes = ((yaml_read.safe_load(notes_file.read_text(encoding="utf-8")) or {}).get("variables") or {}) \
            if notes_file.is_file() else {}
        for name in options:
            out.setdefault(name, (role, tuple((notes.get(name) or {}).get("read_on") or ())))
    return out


# --- which host is what -----------------------------------------------------------------------------------------

def host_kinds(plan: Mapping[str, Any], monitors: set[str], site_host: str) -> frozenset[str]:
    """The kinds of a planned host, as `read_on` names them."""
    kinds = {str(plan.get("role"))}
    if plan.get("vendor"):
        kinds.add(str(plan["vendor"]))
    method = (plan.get("install") or {}).get("method")
    if method:
        kinds.add(str(method))
    if plan["host"] in monitors:
        kinds.add("monitoring")
    if plan["host"] == site_host:
        kinds.add("site")
    return frozenset(kinds)


class Stages:
    """Whether a role's stage runs on a host: its site.yml play and the `when` of its include, evaluated against the
    host's plan with Jinja (the conditions read a few fields of the plan: the verdict is kept per distinct value of
    those fields, so thousands of hosts cost a few evaluations)."""

    def __init__(self) -> None:
        self._verdicts: dict[tuple[str, tuple[str, ...]], bool] = {}
        self._compiled: dict[str, Any] = {}

    def runs(self, role: str, plan: Mapping[str, Any]) -> Optional[bool]:
        """True or False; None for a role site.yml does not run itself (included by another role: not judged)."""
        entries = stage_hosts().get(role)
        if entries is None:
            return None
        return any(plan.get("role") in kinds and (when is None or self._holds(when, plan))
                   for kinds, when, _name in entries)

    def _holds(self, when: str, plan: Mapping[str, Any]) -> bool:
        paths = _PLAN_PATH.findall(when)
        if "metalserve_site" in _PLAN_PATH.sub("", when) or not paths:
            return True  # a condition on something else than the host's plan: assume it runs (never a false refusal)
        key = (when, tuple(repr(_dig(plan, p)) for p in paths))
        if key not in self._verdicts:
            self._verdicts[key] = self._evaluate(when, plan)
        return self._verdicts[key]

    def _evaluate(self, when: str, plan: Mapping[str, Any]) -> bool:
        try:
            import jinja2  # noqa: PLC0415 - ansible-core's own dependency; only needed when a stage has a condition
            if when not in self._compiled:
                self._compiled[when] = jinja2.Environment().compile_expression(when)
            return bool(self._compiled[when](metalserve_site={"plans": {"h": plan}}, inventory_hostname="h"))
        except Exception:  # noqa: BLE001 - a condition this cannot evaluate: assume the stage runs
            return True


def _dig(plan: Mapping[str, Any], path: str) -> Any:
    value: Any = plan
    for part in path.strip(".").split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def reads(name: str, plan: Mapping[str, Any], kinds: frozenset[str], stages: Stages) -> Optional[bool]:
    """Whether anything reads `name` on this host; None when the collection cannot tell (not a variable it
    documents, or its role is not one site.yml runs)."""
    found = variable_readers().get(name)
    if found is None:
        return None
    stage, read_on = found
    if stage != PLAN:
        runs = stages.runs(stage, plan)
        if runs is None or not runs:
            return runs
    return not read_on or any(k in kinds for k in read_on)


# --- the check ----------------------------------------------------------------------------------------------------

Verdict = tuple[str, str, str]  # (host, "error" or "warning", message)


def unread_variables(plans: Mapping[str, Mapping[str, Any]], hostvars: Mapping[str, Mapping[str, Any]],
                     groups: Mapping[str, list[str]], origins: Optional[Mapping[str, Mapping[str, list[str]]]],
                     site_host: str, monitoring_group: str = "monitoring",
                     applied: Optional[Mapping[str, frozenset[str]]] = None) -> list[Verdict]:
    """Every variable an inventory sets on a planned host that nothing reads there, judged per source (see the
    module's docstring). Without `origins` the sources are inferred from the values (inferred_origins), and a value
    that a host which reads the variable holds too is taken for the site's default (never reported). `applied`: the
    roles the running play applies itself, {role: hosts}: there a refusal becomes a warning (the play may apply the
    role where site.yml never would, as molecule does; site.yml and render.yml still refuse it)."""
    monitors = set(groups.get(monitoring_group, []))
    stages = Stages()
    kinds = {h: host_kinds(p, monitors, site_host) for h, p in plans.items()}
    inferred = origins is None
    if origins is None:
        origins = inferred_origins(hostvars, groups, {n for h in plans for n in hostvars.get(h, {})
                                                      if n in variable_readers()})
    verdicts = {(h, n): reads(n, p, kinds[h], stages) for h, p in plans.items() for n in (origins.get(h) or {})}
    shared = {(n, repr(hostvars[h].get(n))) for (h, n), v in verdicts.items() if v} if inferred else set()
    readers: dict[tuple[str, str], list[str]] = {}  # (variable, source) -> hosts that read it
    unread: dict[tuple[str, str], list[str]] = {}   # (variable, source) -> hosts that do not
    for (host, name), verdict in verdicts.items():
        if verdict is None or (not verdict and (name, repr(hostvars[host].get(name))) in shared):
            continue
        for source in origins[host][name]:
            (readers if verdict else unread).setdefault((name, source), []).append(host)
    out: list[Verdict] = []
    would: dict[str, list[str]] = {}  # variable -> the hosts it would act on, for the reported ones only
    for (name, source), hosts in sorted(unread.items()):
        level = _level(source, bool(readers.get((name, source))))
        if level is None:
            continue
        if name not in would:
            would[name] = sorted(h for h, p in plans.items() if reads(name, p, kinds[h], stages))
        role = variable_readers()[name][0]
        for host in hosts:
            role_from = (origins.get(host) or {}).get("sglang_role") or []
            here = "warning" if level == "error" and host in (applied or {}).get(role, ()) else level
            out.append((host, here, unread_text(name, source, host, plans[host], would[name],
                                                readers.get((name, source), []), site_host, role_from)))
    return out


def _level(source: str, some_read_it: bool) -> Optional[str]:
    if source in SITE_WIDE or source == EXTRA_VARS:
        return None if some_read_it else "warning"
    if source.startswith("host "):
        return "error"
    return "warning" if some_read_it else "error"


def unread_text(name: str, source: str, host: str, plan: Mapping[str, Any], would: list[str], here: list[str],
                site_host: str, role_from: list[str]) -> str:
    """The message: the variable, who set it, why nothing reads it on this host (what the host is, and who made it
    so when its sglang_role was set: a group that overrode a router's role shows here), where it would act."""
    where = reader_words(name, site_host)
    # a role set in two places (a group that overrode a router's role, say) is named with both
    what = host_words(plan) + (f", sglang_role from {' and '.join(source_words(s) for s in role_from)}"
                               if len(role_from) > 1 else "")
    if here:  # one text for every host of the group it does not act on (the play output names them once)
        return (f"{name}: set by {source_words(source)}, acts on {_some(sorted(here))} only (it is read {where}); the "
                "group's other hosts never read it")
    if "site" in variable_readers()[name][1]:
        return (f"{name}: set by {source_words(source)} for {host} ({what}), where nothing reads it: it is "
                f"read {where}; set it in group_vars/all (or the monitoring group's)")
    on = f" (here: {_some(would)})" if would else " (no host of this inventory is one)"
    return (f"{name}: set by {source_words(source)} for {host} ({what}), where nothing reads it: it is "
            f"read {where}{on}; move it to the group_vars or host_vars of those hosts, or drop it")


def reader_words(name: str, site_host: str) -> str:
    stage, read_on = variable_readers()[name]
    if "site" in read_on:
        return f"once for the whole site, from {site_host} (the first host of the monitoring group, else of the site)"
    kinds = " or ".join(KIND_WORDS.get(k, k) for k in read_on)
    if stage == PLAN:
        return f"by the plan of {kinds}"
    return f"by the {stage} role" + (f" on {kinds}" if kinds else f", which site.yml runs on {_role_hosts(stage)}")


def _role_hosts(role: str) -> str:
    """Where site.yml runs a role, in words: its plays' hosts, and whether an include has a condition."""
    entries = stage_hosts().get(role) or ()
    kinds = sorted({k for ks, _w, _n in entries for k in ks})
    words = " and ".join(KIND_WORDS.get(k, k) for k in kinds)
    return words + (" that its condition selects" if any(w for _k, w, _n in entries) else "")


def host_words(plan: Mapping[str, Any]) -> str:
    """A host in a few words: what it is, as the plan made it."""
    role = plan.get("role")
    method = str((plan.get("install") or {}).get("method") or "")
    if role == "server":
        vendor = str(plan.get("vendor") or "").upper()
        details = ", ".join(x for x in (str((plan.get("recipe") or {}).get("gpu") or ""), method) if x)
        return f"{'an' if vendor[:1] in ('A', 'N') else 'a'} {vendor + ' ' if vendor else ''}server" + \
            (f", {details}" if details else "")
    if role == "router":
        return "a router" + (f", {method}" if method else "")
    return "a host with sglang_role: none"


def source_words(source: str) -> str:
    if source.startswith("host ") or source == EXTRA_VARS:
        return source.replace("host ", "the host_vars of ", 1) if source.startswith("host ") else source
    return f"the group_vars of {source}"


def _some(hosts: list[str], shown: int = 3) -> str:
    return ", ".join(hosts[:shown]) + (f" and {len(hosts) - shown} more" if len(hosts) > shown else "")


# --- where a value came from, without Ansible's inventory -----------------------------------------------------------

def inferred_origins(hostvars: Mapping[str, Mapping[str, Any]], groups: Mapping[str, list[str]],
                     names: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """Sources of each host's variables when Ansible's inventory is not at hand (a direct call of plan_site): the
    largest group whose every host holds the same value (all, when the whole site does), else the host itself."""
    wanted = set(names)
    out: dict[str, dict[str, list[str]]] = {h: {} for h in hostvars}
    ordered = sorted(((g, [h for h in m if h in hostvars]) for g, m in groups.items()), key=lambda gm: -len(gm[1]))
    for name in sorted(wanted):
        holders = {h: repr(v[name]) for h, v in hostvars.items() if name in v}
        if not holders:
            continue
        for host in holders:
            out[host][name] = []
        for group, members in ordered:
            if not members or members[0] not in holders or any(holders.get(h) != holders[members[0]] for h in members):
                continue
            for host in members:
                if not out[host][name]:
                    out[host][name] = [group]
        for host in holders:
            if not out[host][name]:
                out[host][name] = [f"host {host}"]
    return out
