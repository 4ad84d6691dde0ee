# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every host's role variables, checked in one pass against the roles' argument specs (roles/<role>/meta/argument_specs.yml).

The checking itself is Ansible's (ArgumentSpecValidator, the validator each role runs on entry); this module
only reads each spec once, picks the variables a host sets, and turns every host's refusals into one message.
Controller side; the metalserve.sglang.check_variables action runs it.
"""
from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.release import __version__ as ansible_version

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read

#: ansible-core before 2.19 returns an undefined variable's template as text through hostvars
TEMPLATES_COME_BACK_AS_TEXT = tuple(int(p) for p in re.findall(r"\d+", ansible_version)[:2]) < (2, 19)

#: the collection's roles/ (plugins/plugin_utils/checks/ is three levels below the collection's root)
ROLES_DIR = Path(__file__).resolve().parents[3] / "roles"


@lru_cache(maxsize=None)
def all_roles(roles_dir: str = str(ROLES_DIR)) -> list[str]:
    """Every role of the collection with an argument spec, by name."""
    return sorted(p.parent.parent.name for p in Path(roles_dir).glob("*/meta/argument_specs.yml"))


def role_options(role: str, roles_dir: str = str(ROLES_DIR)) -> dict[str, Any]:
    """The options of a role's `main` entry point (read once per run, whatever the number of hosts)."""
    path = Path(roles_dir) / role / "meta" / "argument_specs.yml"
    if not path.is_file():
        raise ValueError(f"{role} is not a role of this collection with a meta/argument_specs.yml ({path} is missing)")
    data = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
    return dict(((data.get("argument_specs") or {}).get("main") or {}).get("options") or {})


def variable_names(specs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every variable any of the roles documents, in a stable order."""
    return sorted({name for options in specs.values() for name in options})


def secret_names(specs: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The variables any of the roles marks no_log."""
    return {name for options in specs.values() for name, option in options.items() if option.get("no_log")}


def _unrendered(value: Any) -> bool:
    """A string still holding Jinja after templating: ansible-core before 2.19 hands an undefined variable's
    template back as text through hostvars instead of failing. From 2.19 on such a read fails, and a `{{` that is
    still there was meant literally (!unsafe), so nothing is refused."""
    if not TEMPLATES_COME_BACK_AS_TEXT:
        return False
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_unrendered(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_unrendered(v) for v in value)
    return False


def undefined_name_only(error: str) -> str:
    """Of a secret's templating error, only the name of the undefined variable it uses (names are not secret;
    other errors may quote the template, which may hold the secret)."""
    found = re.search(r"'([A-Za-z_][A-Za-z0-9_]*)' is undefined", error)
    return f": it uses the undefined variable {found.group(1)}" if found else ""


#: names that hold secrets although no role spec marks them no_log (inventory variables such as sglang_hf_token)
SECRET_HINTS = ("token", "key", "password", "secret")


def is_secret(name: str, secrets: frozenset[str] | set[str] = frozenset()) -> bool:
    return name in secrets or any(hint in name for hint in SECRET_HINTS)


def templating_problem(name: str, error: str, secret: bool) -> str:
    """The one wording for a variable that cannot be templated (the variable check and the plan both use it, so a
    mistake is said once): an undefined variable by its name; other errors by their first line, masked, except
    for secrets, whose template may be quoted in it."""
    detail = undefined_name_only(error)
    if not detail and not secret:
        detail = ": " + redact(error.splitlines()[0] if error else "it could not be rendered")
    return f"{name} could not be templated{detail}"


def read_values(names: list[str], has: Callable[[str], bool], get: Callable[[str], Any],
                secrets: frozenset[str] | set[str] = frozenset()) -> tuple[dict[str, Any], dict[str, str]]:
    """The variables a host sets, templated; a value that cannot be templated is a problem of its own (for a
    secret, without the templating error's text, which may quote the value)."""
    values: dict[str, Any] = {}
    broken: dict[str, str] = {}
    for name in names:
        if not has(name):
            continue
        try:
            value = get(name)
        except Exception as exc:  # noqa: BLE001 - an undefined or broken template is reported, not raised
            broken[name] = templating_problem(name, str(exc) or type(exc).__name__, is_secret(name, secrets))
            continue
        if _unrendered(value):
            broken[name] = f"{name} could not be templated (it still holds a template: is a variable it uses undefined?)"
            continue
        values[name] = value
    return values, broken


def _wants(option: Mapping[str, Any]) -> str:
    """What a role's spec accepts for one option, in a few words."""
    parts = [str(option.get("type", "str"))]
    if option.get("elements"):
        parts[0] += f" of {option['elements']}"
    if "default" in option and not option.get("no_log"):
        parts.append(f"default {option['default']!r}")
    return ", ".join(parts)


def role_errors(specs: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each role's refusals of these values, as Ansible's validator words them, with what the spec wants; secrets
    and anything that looks like a token are masked."""
    out: dict[str, list[str]] = {}
    for role, options in specs.items():
        given = {k: v for k, v in values.items() if k in options}
        if not given:
            continue  # nothing set: the role's defaults, which its spec describes
        try:
            key = (role, json.dumps(given, sort_keys=True))
        except (TypeError, ValueError):
            key = None
        if key is not None and key in _VERDICTS:  # a rack's hosts share their values: one verdict for all of them
            if _VERDICTS[key]:
                out[role] = list(_VERDICTS[key])
            continue
        result = ArgumentSpecValidator(dict(options)).validate(given, validate_role_argument_spec=True)
        if result.error_messages:
            secrets = set(result._no_log_values)  # noqa: SLF001 - the validator's own list of no_log values
            secrets |= {str(given[k]) for k, o in options.items() if o.get("no_log") and given.get(k) not in (None, "")}
            messages = []
            for message in result.error_messages:
                text = redact(str(remove_values(message, secrets)))
                named = re.search(r"argument '(\w+)'|value of (\w+) must be", text)
                name = next((n for n in named.groups() if n), None) if named else None
                if name in options:
                    text += f" ({name} wants {_wants(options[name])}; see roles/{role}/README.md)"
                messages.append(text)
            out[role] = messages
        if key is not None:
            if len(_VERDICTS) > 65536:
                _VERDICTS.clear()
            _VERDICTS[key] = tuple(out.get(role, ()))
    return out


#: role_errors' verdicts by (role, the values given), for the hosts of one run that share them
_VERDICTS: dict[tuple[str, str], tuple[str, ...]] = {}


@lru_cache(maxsize=None)
def role_outputs(role: str, roles_dir: str = str(ROLES_DIR)) -> frozenset[str]:
    """Names a role sets itself (register: and set_fact keys with its prefix in its tasks), which a later check of
    the same run must not take for typos."""
    prefix = re.escape(f"{role}_")
    found: set[str] = set()
    for path in sorted((Path(roles_dir) / role / "tasks").glob("*.yml")):
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(rf"register:\s*({prefix}\w+)", text))
        found.update(re.findall(rf"^\s+({prefix}\w+):", text, re.M))
    return frozenset(found)


@lru_cache(maxsize=None)
def retired(data_file: str = str(ROLES_DIR.parent / "data" / "variables.yml")) -> dict[str, dict[str, str]]:
    """Variables this collection no longer reads: {name: {replacement, retired_in}} (data/variables.yml `retired`)."""
    doc = yaml_read.safe_load(Path(data_file).read_text(encoding="utf-8")) or {}
    return {str(k): {"replacement": " ".join(str(v.get("replacement", "")).split()), "retired_in": str(v["retired_in"])}
            for k, v in (doc.get("retired") or {}).items()}


@lru_cache(maxsize=1)
def collection_version(root: str = str(ROLES_DIR.parent)) -> str:
    """This collection's version: MANIFEST.json of an installed collection, galaxy.yml of a checkout."""
    folder = Path(root)
    if (folder / "MANIFEST.json").is_file():
        return str(json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))["collection_info"]["version"])
    if (folder / "galaxy.yml").is_file():
        return str((yaml_read.safe_load((folder / "galaxy.yml").read_text(encoding="utf-8")) or {}).get("version"))
    return "unknown"


def _minor(version: str) -> tuple[int, int]:
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]]
    return (parts + [0, 0])[0], (parts + [0, 0])[1]


def retired_verdict(name: str, version: str | None = None) -> tuple[str, str] | None:
    """("warning" or "error", message) for a retired name, None for any other: it warns through the minor release that
    retired it, naming what replaced it, and is refused from the next minor release on."""
    entry = retired().get(name)
    if entry is None:
        return None
    since = entry["retired_in"]
    current = _minor(version or collection_version())
    major, minor = _minor(since)
    if current <= (major, minor):
        return "warning", (f"{name} is retired in {since} and ignored: {entry['replacement']}. From {major}.{minor + 1}.0 "
                           "a host that sets it is refused")
    return "error", f"{name} is retired (since {since}): {entry['replacement']}"


def _owner(name: str, specs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The role whose prefix a name carries (the longest that fits); sglang_* names are the plan's to judge."""
    owners = [r for r in specs if name.startswith(f"{r}_") and not r.startswith("sglang_")]
    return max(owners, key=len) if owners else None


def unknown_names(names: Iterable[str], specs: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Names the collection owns but does not read, each with what to use: a retired variable (what replaced it); a
    name under a role's prefix that the role does not document (the collection owns every prefix it ships: its
    nearest known name, or where the role's variables are listed); and a name under no prefix of ours that is a
    near miss of one of our variables (model_weight_source). Names a role sets itself are not typos; sglang_* names
    are the plan's to judge (placement.variable_errors). Each name is judged once per set of roles (a site's hosts
    share their variable names)."""
    out: dict[str, list[str]] = {}
    key = tuple(sorted(specs))
    for name in sorted(set(names)):
        found = _judge_name(name, key)
        if found:
            out.setdefault(found[0], []).append(found[1])
    return out


@lru_cache(maxsize=65536)
def _judge_name(name: str, roles: tuple[str, ...]) -> tuple[str, str] | None:
    """(role, problem) of one variable name, or None (see unknown_names)."""
    specs = {role: role_options(role) for role in roles}
    known = _known_names(roles)
    if name in known or name.startswith("_") or name.startswith("sglang_"):
        return None
    if any(name in role_outputs(r) for r in roles):
        return None
    owner = _owner(name, specs)
    gone = retired_verdict(name)
    if gone is not None:  # a warning while it is new (the plan gives it), a refusal after
        return (owner or "retired", gone[1]) if gone[0] == "error" else None
    if owner:
        close = difflib.get_close_matches(name, list(specs[owner]), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"its variables are listed in roles/{owner}/README.md"
        return owner, f"{name} is not a variable of {owner} (the collection owns the {owner}_ prefix); {hint}"
    # a near miss shares the start of a name of ours (model_weight_ for model_weights_); others are the site's own
    stems = {n.split("_", 1)[0][:5] for n in known}
    if name.split("_", 1)[0][:5] not in stems:
        return None
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.85)
    if close and close[0].split("_", 1)[0][:5] == name.split("_", 1)[0][:5]:
        role = next(r for r in roles if close[0] in specs[r])
        return role, f"{name} is not a variable of this collection; did you mean {close[0]}?"
    return None


@lru_cache(maxsize=64)
def _known_names(roles: tuple[str, ...]) -> frozenset[str]:
    return frozenset(n for role in roles for n in role_options(role))


#: common token formats (Hugging Face, OpenAI/Anthropic-style keys, GitHub, GitLab, Slack, AWS access key ids); not
#: a key in a dotted path (stages.weights.settings.hf_endpoint names a setting, not a token)
TOKEN = re.compile(r"(?<!\.)\b(hf_[A-Za-z0-9]{6,}|sk-[A-Za-z0-9_-]{6,}|gh[pousr]_[A-Za-z0-9]{10,}|glpat-[A-Za-z0-9_-]{10,}"
                   r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})")


def host_errors(specs: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any], names: Iterable[str],
                broken: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """One host's refusals, per role: its values (templated) against each role's spec, the names it sets that the
    collection owns but does not read, and the variables that could not be templated (`broken`, under
    "templating"). check_variables (Ansible's hostvars) and render_plan (the values the plan read) both judge here."""
    found = role_errors(specs, values)
    for role, typos in unknown_names(names, specs).items():
        found.setdefault(role, []).extend(typos)
    if broken:
        found["templating"] = sorted(broken.values())
    return found


def site_errors(hostvars: Mapping[str, Mapping[str, Any]], names: Mapping[str, Iterable[str]],
                roles: list[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """Every host's refusals (host_errors) from plain values already read, such as the plan's inputs
    (inventory_vars.site_inputs), which hold every variable under the collection's prefixes: what check_variables
    says of the same hosts, without templating their variables a second time. `names`: every variable name each host
    has (its typos are judged by name)."""
    specs = {role: role_options(role) for role in (roles or all_roles())}
    wanted, secrets = variable_names(specs), secret_names(specs)
    out: dict[str, dict[str, list[str]]] = {}
    for host, plain in hostvars.items():
        values, broken = read_values(wanted, plain.__contains__, plain.__getitem__, secrets)
        found = host_errors(specs, values, names.get(host, list(plain)), broken)
        if found:
            out[host] = found
    return out


def merge_errors(into: dict[str, dict[str, list[str]]], found: Mapping[str, Mapping[str, list[str]]]) -> None:
    """Add refusals (per host, per role) to those already given, each once (check_variables' handed over and the
    plan's own check name the same mistake in the same words)."""
    for host, roles in found.items():
        for role, problems in roles.items():
            known = into.setdefault(host, {}).setdefault(role, [])
            known.extend(p for p in problems if p not in known)


def redact(text: str) -> str:
    """A token pasted into the wrong variable must not reach the log through an error that quotes the value."""
    return TOKEN.sub(lambda m: m.group(0)[:3] + "********", text)


def failure_text(errors: Mapping[str, Mapping[str, list[str]]], checked: int) -> str:
    """One message for all hosts: each refusal (the role whose spec refused, in Ansible's words) with the hosts
    it applies to, so a group_vars mistake on a rack reads as one line, not one per host."""
    hosts_of: dict[tuple[str, str], list[str]] = {}
    for host in sorted(errors):
        for role, messages in errors[host].items():
            for message in messages:
                hosts_of.setdefault((role, message), []).append(host)
    lines = [f"the variables of {len(errors)} of {checked} host(s) do not fit the roles' meta/argument_specs.yml "
             "(each variable is described in roles/<role>/README.md):"]
    for (role, message), hosts in sorted(hosts_of.items()):
        lines.append(f"  {role}: {message} (on {', '.join(hosts)})")
    return "\n".join(lines)
