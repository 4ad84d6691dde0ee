# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every host's role variables, checked in one pass against the roles' meta/argument_specs.yml.

The checking itself is Ansible's (ArgumentSpecValidator, the validator each role runs on entry); this module
only reads each spec once, picks the variables a host sets, and turns every host's refusals into one message.
Controller side; the metalserve.sglang.check_variables action runs it.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values

#: the collection's roles/ (plugins/plugin_utils/checks/ is three levels below the collection's root)
ROLES_DIR = Path(__file__).resolve().parents[3] / "roles"


@lru_cache(maxsize=None)
def role_options(role: str, roles_dir: str = str(ROLES_DIR)) -> dict[str, Any]:
    """The options of a role's `main` entry point (read once per run, whatever the number of hosts)."""
    path = Path(roles_dir) / role / "meta" / "argument_specs.yml"
    if not path.is_file():
        raise ValueError(f"{role} is not a role of this collection with a meta/argument_specs.yml ({path} is missing)")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return dict(((data.get("argument_specs") or {}).get("main") or {}).get("options") or {})


def variable_names(specs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every variable any of the roles documents, in a stable order."""
    return sorted({name for options in specs.values() for name in options})


def secret_names(specs: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The variables any of the roles marks no_log."""
    return {name for options in specs.values() for name, option in options.items() if option.get("no_log")}


def _unrendered(value: Any) -> bool:
    """A string still holding Jinja after templating: ansible-core before 2.19 hands an undefined variable's
    template back as text through hostvars instead of failing."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_unrendered(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_unrendered(v) for v in value)
    return False


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
            detail = "" if name in secrets else f": {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
            broken[name] = f"{name} could not be templated{detail}"
            continue
        if _unrendered(value):
            broken[name] = f"{name} could not be templated (it still holds a template: is a variable it uses undefined?)"
            continue
        values[name] = value
    return values, broken


def role_errors(specs: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each role's refusals of these values (secrets masked), as Ansible's validator words them."""
    out: dict[str, list[str]] = {}
    for role, options in specs.items():
        given = {k: v for k, v in values.items() if k in options}
        result = ArgumentSpecValidator(dict(options)).validate(given, validate_role_argument_spec=True)
        if result.error_messages:
            secrets = set(result._no_log_values)  # noqa: SLF001 - the validator's own list of no_log values
            secrets |= {str(given[k]) for k, o in options.items() if o.get("no_log") and given.get(k) not in (None, "")}
            out[role] = [str(remove_values(m, secrets)) for m in result.error_messages]
    return out


def failure_text(errors: Mapping[str, Mapping[str, list[str]]], checked: int) -> str:
    """One message for all hosts: each refusal (the role whose spec refused, in Ansible's words) with the hosts
    it applies to, so a group_vars mistake on a rack reads as one line, not one per host."""
    hosts_of: dict[tuple[str, str], list[str]] = {}
    for host in sorted(errors):
        for role, messages in errors[host].items():
            for message in messages:
                hosts_of.setdefault((role, message), []).append(host)
    lines = [f"the variables of {len(errors)} of {checked} host(s) do not fit the roles' meta/argument_specs.yml "
             "(each variable is described in roles/<role>/README.md); nothing was changed:"]
    for (role, message), hosts in sorted(hosts_of.items()):
        lines.append(f"  {role}: {message} (on {', '.join(hosts)})")
    return "\n".join(lines)
