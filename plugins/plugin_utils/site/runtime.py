# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a host runs what its plan says: install paths and release, the image after the mirror, unit
settings, the files' paths, and the few values only the node can tell. Pure.

One owner for every value a node gets besides the SGLang command: render.yml and the roles both take
them from the plan these functions fill, so a role never recomputes one. Inputs are the host's
inventory variables (group_vars, host_vars, extra vars: what Ansible's hostvars hold) over the role
defaults in roles/<role>/defaults/main.yml. A role variable set anywhere render.yml cannot see (a play's
`vars:`) is refused by the role (tasks/main.yml compares what it sees with plan.inputs).
"""
from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from ansible.module_utils.common import validation

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError, RecipeErrors
from ansible_collections.metalserve.sglang.plugins.plugin_utils import node, yaml_read

ROOT = Path(__file__).resolve().parents[3]
#: where the roles install their helper scripts on a node (data/node.yml)
HEALTH_SCRIPT = node.path("health_script")
SYSTEM_PYTHON = node.program("python")
#: the serving user's home (uv units): systemd creates it (StateDirectory); caches land there
SERVICE_HOME = node.folder("service_home")
#: the role whose defaults hold each setting prefix
ROLE_PREFIXES = {"sglang_install_": "sglang_install", "sglang_server_": "sglang_server",
                 "sglang_router_service_": "sglang_router"}
# docker reference: [registry[:port]/]path[:tag][@sha256:digest], lower-case path components
# (a first component is a registry only when it has a dot or a port, or is localhost, as docker reads it)
_IMAGE = re.compile(r"^(?:(?:localhost|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+|[a-zA-Z0-9-]+(?=:[0-9]))(?::[0-9]+)?/)?"
                    r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
                    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
_MIRROR = re.compile(r"^[a-zA-Z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9._-]+)*/?$")


@functools.lru_cache(maxsize=None)
def role_defaults(role: str) -> dict[str, Any]:
    """A role's literal defaults (a templated default, such as a secret taken from another variable, is
    the role's own business and never part of a plan)."""
    text = (ROOT / "roles" / role / "defaults" / "main.yml").read_text(encoding="utf-8")
    return {k: v for k, v in (yaml_read.safe_load(text) or {}).items() if not (isinstance(v, str) and "{{" in v)}


@functools.lru_cache(maxsize=None)
def role_spec_options(role: str) -> tuple[str, ...]:
    """The variables a role documents in meta/argument_specs.yml (entry point main)."""
    path = ROOT / "roles" / role / "meta" / "argument_specs.yml"
    if not path.exists():
        return ()
    spec = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
    return tuple((spec.get("argument_specs", {}).get("main", {}).get("options") or {}).keys())


@functools.lru_cache(maxsize=None)
def secret_options() -> frozenset[str]:
    """Role settings whose meta/argument_specs.yml marks them no_log: never part of a plan (no file a plan writes
    depends on them: the environment files carry placeholders the serving roles fill on the node)."""
    out = set()
    for path in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        spec = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
        options = spec.get("argument_specs", {}).get("main", {}).get("options") or {}
        out.update(name for name, opt in options.items() if (opt or {}).get("no_log"))
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def secret_variables() -> frozenset[str]:
    """Every variable whose value is a secret: data/variables.yml's `secret: true` ones and every role option its
    argument spec marks no_log (the plan artifact and the upgrade state record only whether they are set)."""
    doc = yaml_read.safe_load((ROOT / "data" / "variables.yml").read_text(encoding="utf-8")) or {}
    names = {name for section in doc.values() if isinstance(section, dict)
             for name, spec in section.items() if isinstance(spec, dict) and spec.get("secret")}
    return frozenset(names | set(secret_options()))


@functools.lru_cache(maxsize=None)
def converge_only() -> frozenset[str]:
    """Role settings that change nothing a node gets, only what a run does (a check's threshold, a timeout, whether a
    reboot is allowed): roles/<role>/meta/variables.yml marks them `converge_only` with the reason. The plan leaves
    them out (a play may set them), and render.yml shows nothing of them."""
    out = set()
    for path in sorted((ROOT / "roles").glob("*/meta/variables.yml")):
        doc = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
        out.update(name for name, info in (doc.get("variables") or {}).items() if (info or {}).get("converge_only"))
    return frozenset(out)


def without_secrets(values: Mapping[str, Any]) -> dict[str, Any]:
    """Role settings as a plan may hold them: the no_log ones left out."""
    secret = secret_options()
    return {k: v for k, v in sorted(values.items()) if k not in secret}


def plan_inputs(values: Mapping[str, Any]) -> dict[str, Any]:
    """The role settings a plan was made from (what a role compares with what it sees): no secrets, nothing
    converge-only."""
    skip = converge_only()
    return {k: v for k, v in without_secrets(values).items() if k not in skip}


@functools.lru_cache(maxsize=None)
def role_spec_types(role: str) -> dict[str, str]:
    """The type each option of a role's meta/argument_specs.yml declares (str when it declares none)."""
    path = ROOT / "roles" / role / "meta" / "argument_specs.yml"
    if not path.exists():
        return {}
    spec = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
    options = spec.get("argument_specs", {}).get("main", {}).get("options") or {}
    return {name: str((opt or {}).get("type", "str")) for name, opt in options.items()}


@functools.lru_cache(maxsize=1)
def option_types() -> dict[str, str]:
    """Every role option's declared type, by name."""
    out: dict[str, str] = {}
    for path in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        out.update(role_spec_types(path.parent.parent.name))
    return out


#: Ansible's own converters, as its argument-spec validation applies them (ansible.module_utils.common.validation)
CHECKERS = {"str": validation.check_type_str, "int": validation.check_type_int, "bool": validation.check_type_bool,
            "float": validation.check_type_float, "list": validation.check_type_list,
            "dict": validation.check_type_dict, "path": validation.check_type_path, "raw": validation.check_type_raw}


def _coerce(name: str, value: Any, kind: str, default: Any = None) -> Any:
    """A setting from the inventory, converted as the role's argument spec converts it ('30' is 30, 'yes' is true):
    the plan and the role read the same value, at any depth of the inventory."""
    try:
        if kind == "str" and isinstance(value, (dict, list, tuple)):
            raise TypeError
        return CHECKERS.get(kind, validation.check_type_raw)(value)
    except (TypeError, ValueError) as exc:
        hint = f"; the role's default is {default!r}" if default is not None else ""
        raise RecipeError(f"{name}: expected {kind} (its argument spec), got {type(value).__name__} {value!r}{hint}") \
            from exc


@functools.lru_cache(maxsize=None)
def role_ranges(role: str) -> dict[str, tuple[int, int | None]]:
    """{option: (lowest, highest or None)} for the options whose `range` roles/<role>/meta/variables.yml gives (the
    argument spec types them only; tools/write_argument_specs.py writes the range into their description)."""
    path = ROOT / "roles" / role / "meta" / "variables.yml"
    notes = (yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}).get("variables") or {} if path.exists() else {}
    return {name: (int(info["range"][0]), None if info["range"][1] is None else int(info["range"][1]))
            for name, info in notes.items() if (info or {}).get("range")}


def _in_range(name: str, value: Any, bounds: tuple[int, int | None] | None, default: Any) -> None:
    """Refuse a number outside the option's range, in the words its description uses."""
    if bounds is None or isinstance(value, bool) or not isinstance(value, int):
        return
    low, high = bounds
    if value < low or (high is not None and value > high):
        wants = f"from {low} to {high}" if high is not None else f"{low} or more"
        raise RecipeError(f"{name}: {value} is out of range; it takes {wants} (the role's default is {default!r})")


def _node_path(name: str, value: Any, kind: str, default: Any) -> None:
    """Refuse a path option (its spec's type `path`; a role's literal defaults are paths on the node) that is not
    absolute in normal form: a relative one lands under whatever folder the role runs in, and one with '..' names
    another folder than it says (rendered/ would place its files outside the host's folder). Empty means unset."""
    if kind != "path" or not isinstance(value, str) or not value:
        return
    if not value.startswith("/") or value.startswith("//") or posixpath.normpath(value) != (value.rstrip("/") or "/"):
        example = f"; write one on the node, such as the role's default {default!r}" if default else ""
        raise RecipeError(f"{name}: {value!r} is not an absolute path in normal form (no '..', '.' or '//'){example}")


def checked_settings(hv: dict[str, Any], role: str) -> tuple[dict[str, Any], list[str]]:
    """Every literal setting of a role for one host: the inventory's value (converted as its argument spec
    converts it, and within the option's range), else the role default; each value refused is said and replaced by
    the default, so that a caller which must go on (the site-wide monitoring settings) plans the rest and reports
    every mistake."""
    kinds, ranges = role_spec_types(role), role_ranges(role)
    out, problems = {}, []
    for name, default in role_defaults(role).items():
        try:
            value = _coerce(name, hv[name], kinds.get(name, "raw"), default) if hv.get(name) is not None else default
            _in_range(name, value, ranges.get(name), default)
            _node_path(name, value, kinds.get(name, "raw"), default)
            out[name] = value
        except RecipeError as exc:
            out[name] = default
            problems.append(str(exc))
    return out, problems


def settings(hv: dict[str, Any], role: str) -> dict[str, Any]:
    """checked_settings(), refusing every value the role's argument spec refuses in one error."""
    out, problems = checked_settings(hv, role)
    if problems:
        raise RecipeErrors(problems)
    return out


def check_image(ref: str, variable: str) -> None:
    if not isinstance(ref, str) or not _IMAGE.match(ref):
        raise RecipeError(f"{variable}: {ref!r} is not an image reference; write [registry/]name[:tag] or "
                          "name@sha256:<64 hex digits> (lower-case name, no spaces)")


def mirrored(image: str, mirror: str) -> str:
    """The reference a node pulls: the mirror prefix in front of the image (docker.io/ dropped)."""
    if not mirror:
        return image
    if not _MIRROR.match(mirror):
        raise RecipeError(f"sglang_install_registry_mirror: {mirror!r} is not a registry prefix; write "
                          "host[:port][/path]/, e.g. registry.example.com:5000/")
    name = image[len("docker.io/"):] if image.startswith("docker.io/") else image
    return mirror.rstrip("/") + "/" + name


def install_spec(hv: dict[str, Any], method: str, release: str, image: str | None) -> dict[str, Any]:
    """What the sglang_install role puts on the node and where the units find it: the release, and for uv the
    venv, the requirements, uv and the package indexes, the marker file the venv is recognised by; for docker the
    image after the mirror and the registry login (its password is the role's, never the plan's)."""
    s = settings(hv, "sglang_install")
    root = s["sglang_install_root"].rstrip("/")  # absolute in normal form: settings() (_node_path)
    router_release = str(s["sglang_install_router_version"] or pinned_router())
    spec: dict[str, Any] = {"method": method, "release": release, "router_release": router_release,
                            "root": root, "image": None, "venv": None}
    if method == "uv":
        venv = f"{root}/venvs/{release}"
        requirements = [f"sglang=={release}", f"sglang-router=={router_release}"] + \
            [str(p) for p in s["sglang_install_extra_packages"]]
        index = (["--no-index"] if s["sglang_install_offline"] else []) \
            + (["--index-url", s["sglang_install_index_url"]] if s["sglang_install_index_url"] else [])
        spec.update(venv=venv, python=f"{venv}/bin/python", sglang=f"{venv}/bin/sglang",
                    uv_version=str(s["sglang_install_uv_version"]), uv=f"{root}/tools/bin/uv",
                    base_python=str(s["sglang_install_python"]), requirements=requirements,
                    pip_args=index + [f"--find-links={u}" for u in s["sglang_install_find_links"]],
                    uv_args=index + [f"--extra-index-url={u}" for u in s["sglang_install_extra_index_urls"]]
                    + [f"--find-links={u}" for u in s["sglang_install_find_links"]],
                    uv_cache_dir=str(s["sglang_install_uv_cache_dir"]), keep_venvs=int(s["sglang_install_keep_venvs"]),
                    # a pip requirements file: the indexes and wheel folders, then the requirements, so a venv is built
                    # again whenever either changes, and what it was built from can be read back on the node
                    marker={"path": f"{venv}/.metalserve-requirements", "mode": "0644", "owner": "root", "group": "root",
                            "content": "\n".join(index_lines(s) + requirements) + "\n"})
    else:
        if not image:
            raise RecipeError("sglang_image: the recipe names no image for this GPU and sglang_image is unset; set "
                              "sglang_image, add images: {<gpu>: {ref: <image>}} to the site recipe "
                              "(sglang_recipes), or use sglang_install_method: uv")
        check_image(image, "sglang_image")
        spec.update(image=mirrored(image, s["sglang_install_registry_mirror"]), python="python3", sglang="sglang",
                    registry_url=str(s["sglang_install_registry_url"] or ""),
                    registry_username=str(s["sglang_install_registry_username"] or ""))
    return spec


def index_lines(s: dict[str, Any]) -> list[str]:
    """The package sources of a venv in requirements-file form (pip and uv read these option lines)."""
    return ((["--no-index"] if s["sglang_install_offline"] else [])
            + ([f"--index-url {s['sglang_install_index_url']}"] if s["sglang_install_index_url"] else [])
            + [f"--extra-index-url {u}" for u in s["sglang_install_extra_index_urls"]]
            + [f"--find-links {u}" for u in s["sglang_install_find_links"]])


@functools.lru_cache(maxsize=1)
def pinned_router() -> str:
    """The sglang-router release of data/sglang/versions.yml (router_pinned): its one owner."""
    return str(yaml_read.safe_load((ROOT / "data" / "sglang" / "versions.yml").read_text(encoding="utf-8"))["router_pinned"])


def host_python(hv: dict[str, Any]) -> str:
    """The node's Python for our helper scripts: the inventory's interpreter when it is a path."""
    given = str(hv.get("ansible_python_interpreter") or "")
    return given if given.startswith("/") else SYSTEM_PYTHON


@functools.lru_cache(maxsize=1)
def docker_unit() -> str:
    """The Docker Engine's systemd unit (data/docker/daemon.yml)."""
    return str(yaml_read.safe_load((ROOT / "data" / "docker" / "daemon.yml").read_text(encoding="utf-8"))["unit"])


@functools.lru_cache(maxsize=1)
def ordered_after() -> dict[str, list[str]]:
    """The units a server starts after, by vendor: the NVIDIA driver's own (data/nvidia/services.yml), and the
    container engine's (data/docker/daemon.yml) everywhere. A unit a node lacks is ignored by systemd."""
    nvidia = yaml_read.safe_load((ROOT / "data" / "nvidia" / "services.yml").read_text(encoding="utf-8"))["units"]
    docker = docker_unit()
    return {"nvidia": [nvidia["persistenced"], nvidia["fabricmanager"], nvidia["imex"], docker], "amd": [docker]}


def server_settings(hv: dict[str, Any], instance: str, install: dict[str, Any], vendor: str = "") -> dict[str, Any]:
    s = settings(hv, "sglang_server")
    config_dir = s["sglang_server_config_dir"].rstrip("/")  # absolute in normal form: settings() (_node_path)
    return {
        "user": s["sglang_server_user"], "group": s["sglang_server_group"],
        "python": install["python"] if install["method"] == "uv" else host_python(hv),
        "health_script": HEALTH_SCRIPT, "health_wait": bool(s["sglang_server_health_wait"]),
        "health_timeout": health_timeout(s),
        "timeout_start": s["sglang_server_timeout_start"], "restart_sec": s["sglang_server_restart_sec"],
        "start_limit_burst": s["sglang_server_start_limit_burst"],
        "start_limit_interval": s["sglang_server_start_limit_interval"],
        "stop_timeout": s["sglang_server_stop_timeout"], "limit_nofile": s["sglang_server_limit_nofile"],
        "after": list(dict.fromkeys(ordered_after().get(vendor, [])
                                    + unit_names(s["sglang_server_after_units"], "sglang_server_after_units"))),
        "hardening": service_lines(s["sglang_server_hardening"], "sglang_server_hardening"),
        "device_allowlist": s["sglang_server_device_allowlist"], "firewall": s["sglang_server_firewall"],
        "hf_cache": s["sglang_server_hf_cache"], "home": SERVICE_HOME,
        # where a server that loads a hub id keeps the weights: the mounted cache (docker), its home's cache (uv)
        "hf_home": s["sglang_server_hf_cache"] if install["method"] == "docker" else f"{SERVICE_HOME}/.cache/huggingface",
        "config_dir": config_dir,
        "env_file": f"{config_dir}/{instance}.env",
        "secrets_config": f"{config_dir}/{instance}.secrets.yaml",
        "hf_token_file": f"{config_dir}/{instance}.hf_token",
    }


#: a unit's name as systemd.unit(5) defines it: letters, digits and ":-_.\\@", then the unit type's suffix
UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@-]{1,240}\.(service|socket|device|mount|automount|swap|target|path|timer|"
                       r"slice|scope)$")


def unit_names(values: Iterable[Any], variable: str) -> list[str]:
    """Unit names for After=: each one whole (systemd splits the line at spaces) and of a unit type."""
    out = []
    for value in values:
        text = str(value)
        if not UNIT_NAME.match(text):
            # one-owner: openibd.service (MLNX_OFED's unit) is an example in advice, not a unit the collection runs
            raise RecipeError(f"{variable}: {text!r} is not a unit name (systemd.unit(5): no spaces, and a type "
                              "suffix such as .service or .target, e.g. openibd.service); one unit per list item")
        out.append(text)
    return out


@functools.lru_cache(maxsize=1)
def service_keys() -> frozenset[str]:
    """The keys systemd accepts in [Service] (data/systemd/service-keys.yml, read from systemd's own parser table)."""
    doc = yaml_read.safe_load((ROOT / "data" / "systemd" / "service-keys.yml").read_text(encoding="utf-8"))
    return frozenset(str(k) for k in doc["keys"])


def service_lines(values: Iterable[Any], variable: str) -> list[str]:
    """Lines for a unit's [Service] section: Key=value, each key one systemd knows (an unknown one systemd ignores with
    a warning, and the sandbox it was meant to add is silently missing)."""
    import difflib  # noqa: PLC0415 - only for the hint

    out = []
    for value in values:
        text = str(value)
        key, eq, _rest = text.partition("=")
        if not eq or "\n" in text:
            raise RecipeError(f"{variable}: {text!r} is not a Key=value line of a unit's [Service] section")
        if key.strip() not in service_keys():
            close = difflib.get_close_matches(key.strip(), sorted(service_keys()), n=1, cutoff=0.8)
            raise RecipeError(f"{variable}: {key.strip()} is not a key systemd knows in [Service] (systemd would ignore "
                              f"the line){f'; did you mean {close[0]}?' if close else ''}")
        out.append(text)
    return out


#: seconds systemd's start timeout must leave after the health wait (the unit's own ExecStartPost)
HEALTH_MARGIN = 30


def health_timeout(s: dict[str, Any]) -> int:
    """How long a starting server may take to answer /health: the unit's ExecStartPost waits that long and the role's
    converge-time wait as well (one number); systemd's TimeoutStartSec must leave HEALTH_MARGIN beyond it."""
    wait, start = int(s["sglang_server_health_timeout"]), int(s["sglang_server_timeout_start"])
    if s["sglang_server_health_wait"] and wait + HEALTH_MARGIN > start:
        raise RecipeError(f"sglang_server_health_timeout: {wait} s leaves systemd's start timeout "
                          f"(sglang_server_timeout_start {start} s) less than {HEALTH_MARGIN} s after the health wait; "
                          f"raise sglang_server_timeout_start to at least {wait + HEALTH_MARGIN} or lower the health "
                          f"timeout to {start - HEALTH_MARGIN}")
    return wait


def router_settings(hv: dict[str, Any], install: dict[str, Any]) -> dict[str, Any]:
    s = settings(hv, "sglang_router")
    return {
        "user": s["sglang_router_service_user"], "group": s["sglang_router_service_group"],
        "python": install["python"] if install["method"] == "uv" else host_python(hv),
        "health_script": HEALTH_SCRIPT, "restart_sec": s["sglang_router_service_restart_sec"],
        "health_timeout": int(s["sglang_router_service_health_timeout"]),
        "start_limit_burst": s["sglang_router_service_start_limit_burst"],
        "start_limit_interval": s["sglang_router_service_start_limit_interval"],
        "stop_timeout": s["sglang_router_service_stop_timeout"],
        "limit_nofile": s["sglang_router_service_limit_nofile"],
        "hardening": service_lines(s["sglang_router_service_hardening"], "sglang_router_service_hardening"),
        "home": SERVICE_HOME,
    }


def inputs(hv: dict[str, Any], roles: tuple[str, ...]) -> dict[str, Any]:
    """The role settings a plan was made from, for the roles to compare with what they see."""
    out: dict[str, Any] = {}
    for role in roles:
        out.update(settings(hv, role))
    return plan_inputs(out)


def plan_missing(sites: Iterable[Any]) -> bool:
    """Whether any host of a play lacks the site plan (its metalserve_site is unset, emptied or not a plan): the
    roles then plan once for the play, and the plan reaches every host of it."""
    return any(not isinstance(site, Mapping) or "plans" not in site for site in sites)


def drift(planned: dict[str, Any], seen: list[Any]) -> list[str]:
    """Settings a role sees (in the order of `planned`) that differ from the values its plan used."""
    out = []
    for (name, value), given in zip(planned.items(), seen):
        if given is None:  # not visible here (another role's setting)
            continue
        try:
            same = _coerce(name, given, option_types().get(name, "raw")) == value
        except RecipeError:
            same = False
        if not same:
            out.append(f"{name}: this play gives {given!r} but the inventory, which the plan and render.yml read, "
                       f"gives {value!r}; set {name} in group_vars, host_vars or with -e, not in a play's vars")
    return out


def fact(hv: dict[str, Any], *path: str) -> Any:
    """A gathered (or cached) fact of a host, or None."""
    node: Any = hv.get("ansible_facts") or {}
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def resolved(what: str, value: Any, source: str, known: bool) -> dict[str, Any]:
    """A value the node decides: known from gathered facts, or assumed until they are."""
    return {"what": what, "value": value, "source": source, "known": known}


def probe_files(files: dict[str, Any]) -> list[dict[str, Any]]:
    """A plan's files ({name: {path, content, mode, owner, group}}) as node_state compares them: by the SHA-256
    of the content (the content itself never travels), mode and owner. Files whose content is unknown yet
    (None) are left out."""
    out = []
    for name, f in files.items():
        if f.get("content") is None:
            continue
        out.append({"name": name, "path": f["path"], "sha256": hashlib.sha256(f["content"].encode("utf-8")).hexdigest(),
                    "mode": f["mode"], "owner": f.get("owner", "root"), "group": f.get("group", "root")})
    return out
