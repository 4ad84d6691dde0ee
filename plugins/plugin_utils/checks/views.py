# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site as each process sees it, for the site checker (checks/site.py). Pure.

From a process's rendered unit, docker command line and environment file alone, one view per process:

    filesystem   docker's mounts (-v, --mount, --tmpfs, --read-only) over the image's own folders, or systemd's sandbox
                 (ProtectSystem, ProtectHome, PrivateTmp, ReadOnlyPaths, ReadWritePaths, InaccessiblePaths, BindPaths,
                 TemporaryFileSystem, the State/Cache/Logs/RuntimeDirectory it owns) over the host's
    network      the host's, or a docker bridge that holds only loopback and its own address
    devices      the GPUs its runtime hands it (see gpus_seen), systemd's PrivateDevices and DevicePolicy
    asks for     every path its command and environment name (data/sglang/paths.yml, data/env.yml paths), the bytes of
                 its checkpoint per GPU, the addresses and ports it binds

and the resolvers the checks ask: can this process see this path (read or write)? can it bind this address? does its
share of the checkpoint fit its GPUs? One table of every listener of a machine (listeners) serves check_machines.
systemd's semantics are systemd.exec(5)'s ("Sandboxing"); docker's are docker run's reference (--volume, --mount,
--tmpfs, --read-only, --network).
"""
from __future__ import annotations

import csv
import dataclasses
import fnmatch
import functools
import posixpath
from pathlib import Path
from typing import Any, Iterable, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammar
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.readers import (
    UNIT_DIR, DockerRun, Node, Problem, Service, docker_run, env_lines, exec_argv, ip_of, published,
    split_address, systemd_words, table_of, unit_entries)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog, managed
from ansible_collections.metalserve.sglang.plugins.plugin_utils.sizing import memory

DATA = Path(__file__).resolve().parents[3] / "data"
#: the unit setting a role writes its sandbox from, by process (the roles' defaults: sglang_server_hardening,
#: sglang_router_service_hardening)
SANDBOX_VARIABLE = {"server": "sglang_server_hardening", "router": "sglang_router_service_hardening"}
#: the key of a process kind in data/sglang/managed.yml and paths.yml
TABLE_KEY = {"server": "serve", "router": "router"}
EXTRA_VARIABLE = {"server": "sglang_extra_args (or a site recipe's cell flags, sglang_recipes)",
                  "router": "sglang_router_extra_args"}


@functools.lru_cache(maxsize=None)
def _data(name: str) -> dict[str, Any]:
    return yaml_read.safe_load((DATA / name).read_text(encoding="utf-8")) or {}


def paths_table() -> dict[str, Any]:
    return _data("sglang/paths.yml")


# --- the filesystem view ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Rule:
    """What a process finds at a path and below: hidden (gone or empty), private (its own empty folder), ro
    (read-only), rw (writable), mount (a host folder, rw or not: source is where it comes from)."""
    prefix: str
    effect: str
    why: str
    source: str = ""
    writable: bool = True


@dataclasses.dataclass(frozen=True)
class Filesystem:
    container: bool
    rules: tuple[Rule, ...]
    root_writable: bool = True       # what no rule covers: writable (the host, a container's own layer) or not
    root_why: str = ""               # why not (ProtectSystem=strict, docker --read-only)
    image_paths: tuple[str, ...] = ()
    workdir: str = "/"
    home: str = "/root"
    user: str = "root"


@dataclasses.dataclass(frozen=True)
class Sight:
    """A path as a process finds it: whether it sees what the host holds there, and whether it may write."""
    visible: bool
    writable: bool
    why: str = ""          # why it does not see it, or cannot write it
    lost: bool = False     # it writes into a container's own layer, gone when the container stops


def _under(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def _rule_for(fs: Filesystem, path: str) -> Optional[Rule]:
    best: Optional[Rule] = None
    for rule in fs.rules:
        if _under(path, rule.prefix) and (best is None or len(rule.prefix) >= len(best.prefix)):
            best = rule
    return best


def see(fs: Filesystem, path: str) -> Sight:
    """The resolver: what a process with this filesystem view finds at an absolute path."""
    path = posixpath.normpath(path)
    rule = _rule_for(fs, path)
    if rule is None:
        if not fs.container:
            return Sight(True, fs.root_writable, fs.root_why)
        if any(_under(path, p) for p in fs.image_paths):
            return Sight(True, fs.root_writable, fs.root_why or "the container's own layer", lost=fs.root_writable)
        # the host's file is not there, but the container's own layer takes a write (lost when it stops), unless
        # docker --read-only keeps that layer read-only
        why = "no mount brings it into the container"
        return Sight(False, fs.root_writable, why if fs.root_writable else f"{why}, and {fs.root_why} keeps the "
                     "container's own layer read-only", lost=fs.root_writable)
    if rule.effect == "hidden":
        return Sight(False, False, rule.why)
    if rule.effect == "private":
        return Sight(False, True, rule.why)
    if rule.effect == "ro":
        return Sight(True, False, rule.why)
    if rule.effect == "mount":
        return Sight(True, rule.writable, "" if rule.writable else rule.why)
    return Sight(True, True)


def _mount_rules(docker: DockerRun) -> list[Rule]:
    """docker run's -v/--volume, --mount type=bind|volume|tmpfs and --tmpfs, as the container sees them."""
    rules = []
    for spec in docker.values("-v", "--volume"):
        parts = spec.split(":")
        if len(parts) == 1:
            rules.append(Rule(parts[0], "mount", "an anonymous volume", "", True))
            continue
        options = parts[2].split(",") if len(parts) > 2 else []
        writable = "ro" not in options and "readonly" not in options
        rules.append(Rule(parts[1], "mount", f"mounted read-only (-v {spec})", parts[0], writable))
    for spec in docker.values("--mount"):
        fields = dict(f.partition("=")[::2] for f in spec.split(","))
        target = fields.get("target") or fields.get("destination") or fields.get("dst") or ""
        readonly = "readonly" in fields or "ro" in fields
        if fields.get("type") == "tmpfs":
            rules.append(Rule(target, "private", f"an empty tmpfs (--mount {spec})"))
        elif target:
            rules.append(Rule(target, "mount", f"mounted read-only (--mount {spec})",
                              fields.get("source") or fields.get("src") or "", not readonly))
    for spec in docker.values("--tmpfs"):
        rules.append(Rule(spec.split(":", 1)[0], "private", f"an empty tmpfs (--tmpfs {spec})"))
    return rules


@functools.lru_cache(maxsize=4096)
def container_fs(docker: DockerRun) -> Filesystem:
    """A container's view: its mounts over the image's own folders (data/sglang/docker.yml image_paths); the rest of
    the host is not there."""
    forms = _data("sglang/docker.yml")
    read_only = docker.has("--read-only")
    workdir = (docker.values("-w", "--workdir") or [str(forms.get("image_workdir") or "/")])[-1]
    return Filesystem(True, tuple(_mount_rules(docker)), not read_only,
                      "docker --read-only" if read_only else "", tuple(forms.get("image_paths") or ()), workdir)


_PROTECT_SYSTEM = {"yes": ("/usr", "/boot", "/efi"), "full": ("/usr", "/boot", "/efi", "/etc")}
_PROTECT_HOME = ("/home", "/root", "/run/user")
_OWN_DIRECTORIES = {"StateDirectory": "/var/lib", "CacheDirectory": "/var/cache", "LogsDirectory": "/var/log",
                    "RuntimeDirectory": "/run"}
#: systemd's parse_boolean (src/basic/parse-util.c): the words it reads as true and as false, in any case
SYSTEMD_TRUE = ("1", "yes", "y", "true", "t", "on")
SYSTEMD_FALSE = ("0", "no", "n", "false", "f", "off")
#: sandbox settings of one value, where the last assignment wins; ProtectSystem= and ProtectHome= take their own words
#: or a boolean (systemd.exec(5))
_SINGLE = ("ProtectSystem", "ProtectHome", "PrivateTmp")


def systemd_word(value: str) -> str:
    """A setting's value as systemd reads it: a boolean as 'yes' or 'no', any other word lower-cased."""
    word = value.strip().lower()
    return "yes" if word in SYSTEMD_TRUE else "no" if word in SYSTEMD_FALSE else word


def _sandbox_rules(key: str, value: str) -> list[Rule]:
    """One [Service] setting of systemd.exec(5)'s sandbox as rules."""
    word = systemd_word(value)
    if key == "ProtectSystem" and word in _PROTECT_SYSTEM:
        return [Rule(p, "ro", f"ProtectSystem={value} makes {p} read-only") for p in _PROTECT_SYSTEM[word]]
    if key == "ProtectHome" and word in ("yes", "tmpfs"):
        return [Rule(p, "hidden", f"ProtectHome={value} makes {', '.join(_PROTECT_HOME)} empty and inaccessible")
                for p in _PROTECT_HOME]
    if key == "ProtectHome" and word == "read-only":
        return [Rule(p, "ro", f"ProtectHome={value} makes {p} read-only") for p in _PROTECT_HOME]
    if key == "PrivateTmp" and word in ("yes", "disconnected"):
        return [Rule(p, "private", f"PrivateTmp={value} gives the unit its own empty {p}") for p in ("/tmp", "/var/tmp")]
    paths = [w.lstrip("-+") for w in systemd_words(value)]
    if key in ("ReadOnlyPaths", "ReadOnlyDirectories"):
        return [Rule(p, "ro", f"ReadOnlyPaths={p}") for p in paths]
    if key in ("ReadWritePaths", "ReadWriteDirectories"):
        return [Rule(p, "rw", "") for p in paths]
    if key in ("InaccessiblePaths", "InaccessibleDirectories"):
        return [Rule(p, "hidden", f"InaccessiblePaths={p}") for p in paths]
    if key == "TemporaryFileSystem":
        return [Rule(p.split(":", 1)[0], "private", f"TemporaryFileSystem={p} puts an empty tmpfs there") for p in paths]
    if key in ("BindPaths", "BindReadOnlyPaths"):
        out = []
        for spec in paths:
            source, _sep, rest = spec.partition(":")
            target = rest.split(":", 1)[0] or source
            out.append(Rule(target, "mount", f"{key}={spec}", source, key == "BindPaths"))
        return out
    if key in _OWN_DIRECTORIES:
        return [Rule(f"{_OWN_DIRECTORIES[key]}/{p}", "rw", "") for p in paths]
    return []


def host_fs(entries: Iterable[tuple[str, str, str]]) -> Filesystem:
    """A unit's view of the host: systemd's sandbox settings of its [Service] section (a setting of one value as its
    last assignment sets it; a list setting assigned empty starts over, systemd.exec(5)), its user, home and working
    directory."""
    single: dict[str, str] = {}
    lists: dict[str, list[Rule]] = {}
    user, home, workdir = "root", "/root", "/"
    for section, key, value in entries:
        if section != "Service":
            continue
        if key in _SINGLE:
            single[key] = value
        elif key == "User":
            user = value.strip() or user
        elif key == "WorkingDirectory":
            workdir = value.strip().lstrip("-~") or workdir
        elif key == "Environment":
            home = next((w.split("=", 1)[1] for w in systemd_words(value) if w.startswith("HOME=")), home)
        elif not value.strip():
            lists.pop(key, None)
        else:
            lists.setdefault(key, []).extend(_sandbox_rules(key, value))
    rules = [r for key, value in single.items() for r in _sandbox_rules(key, value)]
    rules += [r for found in lists.values() for r in found]
    if user != "root" and home == "/root":
        home = f"/home/{user}"
    strict = systemd_word(single.get("ProtectSystem", "")) == "strict"
    return Filesystem(False, tuple(rules), not strict, "ProtectSystem=strict makes the whole file system read-only"
                      if strict else "", (), workdir, home, user)


# --- what a process asks for ----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Ask:
    access: str       # read | write | cache (data/sglang/paths.yml)
    path: str         # absolute, as the process resolves it
    written: str      # how the file names it: --chat-template /x, HF_HOME=/x
    variable: str     # the inventory variable that puts it there


def flag_variable(kind: str, flag: str) -> str:
    """The inventory variable that writes a flag (data/sglang/paths.yml, data/sglang/managed.yml), else the extra
    arguments."""
    entry = (paths_table().get(TABLE_KEY[kind]) or {}).get(flag) or {}
    owners = managed().get(TABLE_KEY[kind]) or {}
    return str(entry.get("variable") or (owners.get("collection") or {}).get(flag)
               or (owners.get("knobs") or {}).get(flag) or EXTRA_VARIABLE[kind])


def _as_path(value: str, form: str, fs: Filesystem) -> Optional[str]:
    """The absolute path a value names, or None when it is no path (a hub id, a template name)."""
    text = value.strip()
    if not text:
        return None
    if form == "hub" and not text.startswith(("/", ".", "~")):
        return None
    if form == "name" and "/" not in text:
        return None
    if text.startswith("~"):
        text = fs.home + text[1:]
    return posixpath.normpath(posixpath.join(fs.workdir, text))


def _values(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        for part in (item if isinstance(item, list) else [item]):
            text = str(part)
            out.append(text.split("=", 1)[1] if "=" in text and not text.startswith("/") else text)
    return out


@functools.lru_cache(maxsize=16)
def _path_dests(kind: str, release: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """dest -> (flag, its paths.yml entry) for the flags of data/sglang/paths.yml the release's table knows."""
    table = table_of(kind, release)
    return {table.dest(flag): (flag, entry) for flag, entry in (paths_table().get(TABLE_KEY[kind]) or {}).items()
            if flag in table.flags}


def path_asks(svc: Service, fs: Filesystem) -> list[Ask]:
    """Every path a SGLang server's or sglang-router's command and environment name (data/sglang/paths.yml by flag,
    as the release's parser reads it; data/env.yml paths by variable)."""
    out: list[Ask] = []
    parsed = svc.parsed
    if svc.table is not None and parsed is not None:
        dests = _path_dests(svc.kind, svc.release)
        for dest in dict.fromkeys(o.dest for o in parsed.occurrences if o.dest in dests):
            flag, entry = dests[dest]
            written = parsed.written(dest)[-1]
            for value in _values(parsed.namespace.get(dest)):
                path = _as_path(value, str(entry.get("form") or "path"), fs)
                if path:
                    out.append(Ask(str(entry["access"]), path, f"{written} {value}", flag_variable(svc.kind, flag)))
    for name, access in (_data("env.yml").get("paths") or {}).items():
        value = svc.env.get(str(name))
        path = _as_path(value, "path", fs) if value and "$" not in value else None
        if path:
            out.append(Ask(str(access), path, f"{name}={value}", "sglang_env"))
    return out


def process_fs(node: Node, svc: Service) -> Filesystem:
    return container_fs(svc.docker) if svc.docker else _unit_fs(node.files.get(svc.unit, ""))


@functools.lru_cache(maxsize=4096)
def _unit_fs(text: str) -> Filesystem:
    return host_fs(unit_entries(text))


def check_paths(node: Node) -> Iterable[Problem]:
    """Every path a process is told to read or write is there for it, in its own view."""
    for svc in node.services:
        if svc.parsed is None:
            continue
        fs = process_fs(node, svc)
        for ask in path_asks(svc, fs):
            sight = see(fs, ask.path)
            if ask.access == "read" and not sight.visible:
                yield node.host, _unseen(svc, fs, ask, sight)
            elif ask.access != "read" and (not sight.writable or (sight.lost and ask.access == "write")):
                yield node.host, _unwritable(svc, fs, ask, sight)


def _fix(svc: Service, fs: Filesystem, sight: Sight, write: bool) -> str:
    """What would work, for a path a process cannot see or write."""
    if fs.container:
        targets = sorted({r.prefix for r in fs.rules if r.effect == "mount" and (r.writable or not write)})
        where = f"a folder it mounts ({', '.join(targets)})" if targets else "a folder it mounts"
        return (f"put it under {where}, or install with sglang_install_method: uv (a uv server sees the host's "
                "folders); the serving role mounts the weights folder (sglang_model_path) and the HF cache only")
    sandbox = SANDBOX_VARIABLE.get(svc.kind, "the unit's sandbox settings")
    if "ProtectHome" in sight.why:
        return f"use a folder outside /home, /root and /run/user (e.g. under /srv or /var/lib), or drop ProtectHome from {sandbox}"
    if "PrivateTmp" in sight.why:
        return f"use a folder outside /tmp and /var/tmp, or drop PrivateTmp from {sandbox}"
    if write:
        return f"use a folder under /var/lib or /srv, or add ReadWritePaths=<folder> to {sandbox}"
    return f"use another folder, or change {sandbox}"


def _unseen(svc: Service, fs: Filesystem, ask: Ask, sight: Sight) -> str:
    where = "its container" if fs.container else f"its sandbox ({sight.why})"
    return (f"{svc.name} reads {ask.written}, set by {ask.variable}, but {ask.path} is not in {where}"
            f"{': ' + sight.why if fs.container else ''}; {_fix(svc, fs, sight, False)}")


def _unwritable(svc: Service, fs: Filesystem, ask: Ask, sight: Sight) -> str:
    if sight.lost:
        why = ("no mount holds it, so it lands in the container's own layer: gone when the container stops (--rm) and "
               "written again on every start")
    elif not sight.visible:
        why = f"the process does not see it ({sight.why})"
    else:
        why = sight.why or "it is read-only there"
    return (f"{svc.name} writes {ask.written}, set by {ask.variable}, but {ask.path} is not writable for it: "
            f"{why}; {_fix(svc, fs, sight, True)}")


# --- the devices view: the GPUs a process is handed -------------------------------------------------------------------

def _gpu_mask(text: str) -> list[str]:
    """A *_VISIBLE_DEVICES value as the runtime reads it: entries up to the first empty one."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            break
        out.append(item)
    return out


def docker_gpu_request(value: str) -> tuple[Optional[str], Optional[list[str]], str]:
    """docker run --gpus VALUE as the docker CLI reads it (docker/cli opts/gpus.go): the value is one CSV record;
    `device=a,b` sets the device ids, `count=N` or a bare N / `all` the count, and a request with both is refused by
    the daemon ("cannot set both Count and DeviceIDs on device request", moby daemon/nvidia_linux.go). Returns
    (count: 'all', a number or None; device ids or None; the problem, '' when docker takes it)."""
    try:
        fields = next(csv.reader([value]), [])
    except csv.Error as exc:
        return None, None, f"--gpus {value}: docker cannot read it as CSV ({exc})"
    count: Optional[str] = None
    devices: Optional[list[str]] = None
    seen: set[str] = set()
    for field in fields:
        key, eq, val = field.partition("=")
        if key in seen:
            return None, None, f"--gpus {value}: docker takes each key of a GPU request once ({key!r} twice)"
        seen.add(key)
        if not eq or key == "count":
            seen.add("count")
            count = key if not eq else val
            if count != "all" and not count.isdigit():
                return None, None, (f"--gpus {value}: docker reads {count!r} as a GPU count, which must be \"all\" or "
                                    "a number")
        elif key == "device":
            devices = [d for d in val.split(",") if d]
    if count is not None and devices is not None:
        return count, devices, (f"--gpus {value}: docker reads its value as CSV, so this is device {','.join(devices)} "
                                f"and a count of {count}, which the daemon refuses (cannot set both Count and DeviceIDs "
                                "on device request); quote the device list inside the value: '\"device=0,1\"' in a "
                                "shell, \"\\\"device=0,1\\\"\" in a unit")
    if count is None and devices is None:
        count = "1"  # docker's default for a request that names neither
    return count, devices, ""


def device_block(node: Node, svc: Service) -> str:
    """Why a server's sandbox keeps every GPU away from it ('' when it does not): systemd's PrivateDevices=yes (a /dev of
    pseudo devices only) or a DevicePolicy=closed/strict allow-list without the vendor's devices (data/sglang/devices.yml
    needs), docker without /dev/kfd and /dev/dri on AMD."""
    needs = list((_data("sglang/devices.yml").get("needs") or {}).get(node.vendor or "") or [])
    if svc.docker:
        if node.vendor == "amd" and not svc.docker.has("--privileged"):
            given = " ".join(svc.docker.values("--device"))
            missing = [d for d in ("/dev/kfd", "/dev/dri") if d not in given]
            if missing:
                return (f"{svc.name} passes no {' or '.join(missing)} into its container (--device): ROCm finds no GPU "
                        "without them; the serving role adds both (data/sglang/docker.yml vendor)")
        return ""
    entries = [(k, v.strip()) for s, k, v in unit_entries(node.files.get(svc.unit, "")) if s == "Service"]
    variable = SANDBOX_VARIABLE.get(svc.kind, "the unit's sandbox settings")
    private = [v for k, v in entries if k == "PrivateDevices"]
    if private and systemd_word(private[-1]) == "yes":
        return (f"{svc.name} runs with PrivateDevices=yes: systemd gives it a /dev of pseudo devices only "
                f"(systemd.exec(5)), so SGLang finds no GPU. Drop PrivateDevices from {variable}")
    return _device_policy(svc, entries, needs, variable)


def _device_allowed(need: dict[str, Any], allowed: list[str]) -> bool:
    """Whether a DeviceAllow= entry opens a needed node: its path, or char-<glob> matching its major's group."""
    return any(fnmatch.fnmatchcase(group, entry[len("char-"):]) for entry in allowed if entry.startswith("char-")
               for group in need.get("groups") or []) or \
        any(fnmatch.fnmatchcase(entry, str(need["node"])) for entry in allowed if entry.startswith("/dev/"))


def _device_policy(svc: Service, entries: list[tuple[str, str]], needs: list[dict[str, Any]], variable: str) -> str:
    """systemd.resource-control(5): DevicePolicy=strict or closed allows only the DeviceAllow= entries (with read and
    write; no access letters means rwm), and so does auto, the default, once one DeviceAllow= is given; an empty
    DeviceAllow= starts the list over."""
    policy = [v.lower() for k, v in entries if k == "DevicePolicy"]
    allowed: Optional[list[str]] = None  # None: no DeviceAllow= in force
    for key, value in entries:
        if key == "DeviceAllow":
            spec, _sep, access = value.partition(" ")
            opens = not access.strip() or {"r", "w"} <= set(access.strip())
            allowed = None if not spec else (allowed or []) + ([spec] if opens else [])
    closed = policy[-1] if policy else "auto"
    if closed not in ("strict", "closed") and (closed != "auto" or allowed is None):
        return ""
    lacking = [n for n in needs if not _device_allowed(n, allowed or [])]
    if not lacking:
        return ""
    fixes = ", ".join(f"DeviceAllow={'char-' + n['groups'][0] if '*' in str(n['node']) else n['node']} rw"
                      for n in lacking)
    return (f"{svc.name} runs with DevicePolicy={closed}{' and DeviceAllow= entries' if closed == 'auto' else ''} "
            f"but none that opens {', '.join(str(n['node']) for n in lacking)} for reading and writing: the GPU's "
            f"device nodes are closed to it and SGLang finds no GPU. Add {fixes} to {variable}, or keep "
            "sglang_server_device_allowlist on (it writes the vendor's list, data/sglang/devices.yml)")


def _runtime_gpus(node: Node, svc: Service, every: Optional[list[str]]) -> tuple[Optional[list[str]], str]:
    """The GPUs the container runtime hands a docker server ('every' for a uv one), and docker's refusal."""
    if not svc.docker:
        return every, ""
    visible = every
    requested = svc.docker.values("--gpus")
    if requested:
        count, devices, problem = docker_gpu_request(requested[-1])
        if problem:
            return None, f"{svc.name}: {problem}"
        if devices is not None:
            visible = devices
        elif count != "all":
            visible = every[:int(str(count))] if every is not None else [str(i) for i in range(int(str(count)))]
    elif node.vendor == "nvidia":
        visible = []
    renders = [d for d in svc.docker.values("--device") if d.startswith("/dev/dri/renderD")]
    if renders:
        visible = [str(int(d[len("/dev/dri/renderD"):]) - 128) for d in renders if d[len("/dev/dri/renderD"):].isdigit()]
    return visible, ""


def gpu_set(node: Node, svc: Service) -> tuple[Optional[list[str]], list[str]]:
    """(the GPUs of the machine a server can see, by index or UUID; None when unknown, problems)."""
    blocked = device_block(node, svc)
    if blocked:
        return None, [blocked]
    every = [str(i) for i in range(node.gpus)] if node.gpus else None
    visible, refused = _runtime_gpus(node, svc, every)
    if refused:
        return None, [refused]
    problems = []
    names = (["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"] if node.vendor == "amd"
             else ["CUDA_VISIBLE_DEVICES"])
    for name in (n for n in names if n in svc.env):
        mask = _gpu_mask(svc.env[name])
        if visible is None:
            visible = mask
            continue
        if all(m.isdigit() for m in mask):
            bad = [m for m in mask if int(m) >= len(visible)]
            if bad:
                given = f"the machine has {node.gpus}" if not svc.docker else f"docker hands it {len(visible)}"
                problems.append(f"{svc.name}: {name}={svc.env[name]} names GPU {', '.join(bad)}, but it sees "
                                f"{len(visible)} ({given}); the runtime stops reading the list there")
                mask = mask[:[i for i, m in enumerate(mask) if int(m) >= len(visible)][0]]
            visible = [visible[int(m)] for m in mask]
        else:
            visible = mask
    return visible, problems


def gpus_needed(svc: Service) -> int:
    tp, pp = int(svc.value("--tp-size", 1)), int(svc.value("--pp-size", 1))
    dp = int(svc.value("--dp-size", 1))
    nodes = max(1, int(svc.value("--nnodes", 1)))
    replicas = 1 if svc.value("--enable-dp-attention", False) else dp
    return max(1, tp * pp * replicas // nodes)


def used_gpus(node: Node, svc: Service) -> tuple[Optional[list[str]], list[str]]:
    """(the GPUs a server uses: base GPU id on, every gpu-id-step; None when unknown, problems)."""
    visible, problems = gpu_set(node, svc)
    need = gpus_needed(svc)
    if visible is None:
        return None, problems
    base, step = int(svc.value("--base-gpu-id", 0)), max(1, int(svc.value("--gpu-id-step", 1)))
    picks = [base + i * step for i in range(need)]
    if picks[-1] >= len(visible):
        tp, pp, nodes = svc.value("--tp-size", 1), svc.value("--pp-size", 1), svc.value("--nnodes", 1)
        layout = (f"--tp-size {tp}" + (f" x --pp-size {pp}" if pp != 1 else "")
                  + (f" / --nnodes {nodes}" if nodes != 1 else ""))
        problems.append(f"{svc.name} needs {need} GPUs ({layout}"
                        f"{', from GPU ' + str(base) if base else ''}) but sees {len(visible)}"
                        f"{' (' + ', '.join(visible) + ')' if visible else ''}; give it {need} GPUs ("
                        f"{'lower --base-gpu-id, ' if base else ''}widen or unset the *_VISIBLE_DEVICES mask "
                        "(sglang_env; sglang_replica_gpus for replicas), or lower the TP size)")
        return [visible[p] for p in picks if p < len(visible)], problems
    nodes = int(svc.value("--nnodes", 1))
    if nodes > 1 and need < len(visible):
        tp = svc.value("--tp-size", 1)
        problems.append(f"{svc.name} is one of {nodes} members of a --tp-size {tp} instance, so it uses {need} of the "
                        f"{len(visible)} GPUs it sees: --tp-size counts the GPUs of every member, not of one node "
                        f"(--tp-size {len(visible) * nodes} for {nodes} x {len(visible)})")
    return [visible[p] for p in picks], problems


# --- memory: the checkpoint's bytes on each GPU ---------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _checkpoints() -> dict[str, tuple[float, str]]:
    """Every shipped checkpoint id -> (size_gb, its model and precision), from data/models/<id>/model.yml."""
    out = {}
    for model in load_catalog().models.values():
        for quant, entry in model.checkpoints.items():
            if entry.get("size_gb"):
                out[str(entry["id"]).rstrip("/")] = (float(entry["size_gb"]), f"{model.id} {quant}")
    return out


def checkpoint_of(svc: Service, site: Optional[dict[str, Any]] = None) -> Optional[tuple[str, float, str]]:
    """(checkpoint id, size_gb, what) a server loads: its --model-path as a hub id, a folder named after one (the
    weights stage stages a checkpoint into .../<org>/<name>), or the --served-model-name the planner gives a folder;
    None for a checkpoint neither the data nor the site's own recipes (site: {id: size_gb}) know."""
    known = {**_checkpoints(), **{str(k): (float(v), "the site's recipe") for k, v in (site or {}).items()}}
    path = str(svc.value("--model-path") or "").rstrip("/")
    candidates = [path, "/".join(path.split("/")[-2:]), str(svc.value("--served-model-name") or "")]
    for candidate in candidates:
        if candidate in known:
            size, what = known[candidate]
            return candidate, size, what
    return None


def check_memory(node: Node) -> Iterable[Problem]:
    """The checkpoint's share of each GPU (TP x PP as the release parses the command) fits in the memory SGLang takes
    for weights and KV cache: --mem-fraction-static of the GPU's memory (its own default when unset, data/sglang/
    memory.yml), for the node's platform as the site describes it (data/gpus.yml or sglang_gpu_platforms)."""
    vram = node.platform.get("vram_gb")
    if not vram:
        return
    for svc in node.services:
        if svc.kind != "server" or svc.parsed is None:
            continue
        found = checkpoint_of(svc, node.platform.get("checkpoints"))
        if found is None:
            continue
        checkpoint, size, what = found
        if what.endswith((" bf16", " fp16")) and svc.value("--quantization"):
            continue  # a 16-bit checkpoint quantized while loading holds fewer bytes than it stores: not judged here
        tp, pp = int(svc.value("--tp-size", 1)), int(svc.value("--pp-size", 1))
        given = svc.value("--mem-fraction-static")
        fraction = float(given) if given is not None else memory.default_fraction(float(vram))
        if memory.share(size, float(vram), tp, pp) < fraction:
            continue
        per_gpu = memory.per_gpu_gb(size, tp, pp)
        layout = f"--tp-size {tp}" + (f" x --pp-size {pp}" if pp != 1 else "")
        limit = (f"--mem-fraction-static {given} of its {vram:g} GB" if given is not None else
                 f"the {fraction:.0%} of its {vram:g} GB SGLang takes at most when --mem-fraction-static is unset")
        yield node.host, (f"{svc.name} loads {checkpoint} ({what}, ~{size:g} GB) over {tp * pp} GPU(s) ({layout}): "
                          f"~{per_gpu:.1f} GB of weights on each {node.gpu} GPU, more than {limit} "
                          f"({float(vram) * fraction:.1f} GB), so SGLang stops while loading. Raise "
                          f"--mem-fraction-static ({flag_variable('server', '--mem-fraction-static')}), shard it over "
                          "more GPUs, or choose a smaller precision (sglang_quant)")


# --- the network view: what a process binds, and where ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Listener:
    port: int
    address: str     # '' for every address of the machine (0.0.0.0, ::)
    what: str        # who binds it, as the file says: "sglang-x.service --port", "node exporter"
    source: str      # the file that makes it listen
    variable: str = ""  # the inventory variable that moves it

    def overlaps(self, other: "Listener") -> bool:
        """Two sockets on one port collide unless both bind one address each and the addresses differ (a wildcard
        bind takes the port on every address)."""
        return self.port == other.port and (not self.address or not other.address or self.address == other.address)


def _bound(address: Any) -> str:
    text = str(address or "").strip().strip("[]").lower()
    return "" if text in ("", "0.0.0.0", "::", "*") else text


def bridged(svc: Service) -> bool:
    """Whether a docker process runs in a bridge network namespace of its own (no --network host)."""
    return svc.docker is not None and not any(v in ("host",) for v in svc.docker.values("--network", "--net"))


@functools.lru_cache(maxsize=1)
def _ports() -> dict[str, Any]:
    return _data("sglang/ports.yml")


_LISTENERS: dict[tuple[Any, ...], list[Listener]] = {}


def service_listeners(svc: Service) -> list[Listener]:
    """Every socket a SGLang server or sglang-router binds on its machine, with the address it binds. A bridged
    container binds on the machine only what docker publishes (-p [ip:]host:container). Read once per distinct
    command (a rack of identical nodes)."""
    if svc.parsed is None:
        return []
    key = (svc.unit, svc.kind, svc.release, tuple(svc.args), svc.docker)
    if key not in _LISTENERS:
        if len(_LISTENERS) > 8192:
            _LISTENERS.clear()
        _LISTENERS[key] = _service_listeners(svc)
    return _LISTENERS[key]


def _service_listeners(svc: Service) -> list[Listener]:
    out: list[Listener] = []
    port = svc.value("--port")
    if bridged(svc):
        # the container's own network namespace holds every port it binds; the machine sees only what -p publishes
        for spec in svc.docker.values("-p", "--publish") if svc.docker else []:
            host_port = published(spec)
            if host_port:
                parts = spec.split("/")[0].rsplit(":", 2)
                out.append(Listener(host_port, _bound(parts[0] if len(parts) == 3 else ""), f"{svc.name} -p {spec}",
                                    svc.unit, flag_variable(svc.kind, "--port")))
        return out
    if svc.kind == "router":
        if port:
            out.append(Listener(int(port), _bound(svc.value("--host")), f"{svc.name} --port", svc.unit,
                                flag_variable("router", "--port")))
        metrics = svc.value("--prometheus-port")
        if metrics:
            out.append(Listener(int(metrics), _bound(svc.value("--prometheus-host")), f"{svc.name} --prometheus-port",
                                svc.unit, flag_variable("router", "--prometheus-port")))
        return out
    return out + _server_ports(svc, port)


def _server_ports(svc: Service, port: Any) -> list[Listener]:
    ports, out = _ports(), []
    multi = int(svc.value("--nnodes", 1)) > 1
    _dist_host, dist_port = split_address(str(svc.value("--dist-init-addr") or ""))
    own, dist = flag_variable("server", "--port"), "sglang_dist_port"
    if port is not None:
        out.append(Listener(int(port), _bound(svc.value("--host")), f"{svc.name} --port", svc.unit, own))
        if multi and dist_port:  # SGLang takes DP attention's ZMQ block from the rendezvous port + 1
            out += [Listener(p, "", f"{svc.name} --dist-init-addr port +{p - dist_port} (SGLang internal)", svc.unit,
                             dist) for p in range(dist_port + 1, dist_port + 1 + int(ports["dist_internal_count"]))]
        else:
            start = int(port) + int(ports["internal_offset"])
            out += [Listener(p, "", f"{svc.name} --port +{p - int(port)} (SGLang internal)", svc.unit, own)
                    for p in range(start, start + int(ports["internal_count"]))]
    binds = set((_data("sglang/listeners.yml").get("serve_ports") or {}).get("binds") or [])
    for occ in svc.parsed.occurrences if svc.parsed else []:
        if occ.option in binds and occ.option not in ("--port", "--disaggregation-bootstrap-port") \
                and isinstance(occ.value, int):
            out.append(Listener(occ.value, "", f"{svc.name} {occ.option}", svc.unit,
                                flag_variable("server", occ.option)))
    if svc.value("--disaggregation-mode") == "prefill":
        out.append(Listener(int(svc.value("--disaggregation-bootstrap-port")), "",
                            f"{svc.name} --disaggregation-bootstrap-port", svc.unit,
                            flag_variable("server", "--disaggregation-bootstrap-port")))
    if multi and int(svc.value("--node-rank", 0)) == 0 and dist_port:
        out.append(Listener(dist_port, "", f"{svc.name} --dist-init-addr (rendezvous)", svc.unit, dist))
    return out


def _address_port(text: str, default: str) -> tuple[str, Optional[int]]:
    """'[addr]:port' (Go's listen address: ':9100', '127.0.0.1:9115', '[::1]:9090') or a bare port."""
    value = text or default
    if value.isdigit():
        return "", int(value)
    host, _sep, port = value.rpartition(":")
    return _bound(host), int(port) if port.isdigit() else None


def _program_listener(program: str, argv: list[str], source: str) -> Optional[Listener]:
    """Where a packaged daemon listens, from its argv and data/sglang/listeners.yml."""
    spec = (_data("sglang/listeners.yml").get("programs") or {}).get(program)
    if spec is None:
        return None
    given = ""
    for i, word in enumerate(argv):
        for flag in spec.get("flags") or []:
            if word == flag and i + 1 < len(argv):
                given = argv[i + 1]
            elif word.startswith(flag + "="):
                given = word.split("=", 1)[1]
    if given and spec.get("port_only"):
        given = ":" + given
    address, port = _address_port(given, str(spec.get("default") or ""))
    return Listener(port, address, str(spec.get("what") or program), source, str(spec.get("variable") or "")) \
        if port else None


@functools.lru_cache(maxsize=4096)
def _unit_listener(path: str, text: str) -> Optional[Listener]:
    """The listener a unit (or drop-in) that runs no SGLang starts: a packaged daemon by its flags, a container by its
    image (data/sglang/listeners.yml images)."""
    starts = [v for s, k, v in unit_entries(text) if s == "Service" and k == "ExecStart" and v]
    if not starts:
        return None
    argv = exec_argv(starts[-1])
    docker = docker_run(argv)
    if docker is not None:
        # the repository whatever registry or mirror serves it (docker.io/rocm/..., registry.local/rocm/...)
        repository = grammar.image_domain(docker.image)[1]
        name, spec = next(((k, v) for k, v in (_data("sglang/listeners.yml").get("images") or {}).items()
                           if repository == k or repository.endswith("/" + k)), (repository, None))
        if spec:
            address, port = _address_port(str(spec["listen"]), "")
            return Listener(port, address, str(spec.get("what") or name), path, str(spec.get("variable") or "")) \
                if port else None
        return None
    return _program_listener(Path(argv[0]).name if argv else "", argv, path)


@functools.lru_cache(maxsize=4096)
def _defaults_listener(path: str, text: str) -> Optional[Listener]:
    """A packaged daemon's listener from the ARGS= of its /etc/default/<package> file."""
    args = env_lines(text).get("ARGS", "").strip().strip("\"'")
    return _program_listener(path.rsplit("/", 1)[1], systemd_words(args), path)


def listeners(node: Node) -> list[Listener]:
    """Every socket the node's files make a process bind, SGLang's and sglang-router's from their commands, every
    other daemon's from its unit, drop-in or Debian ARGS file (/etc/default/<package>)."""
    out: list[Listener] = []
    for svc in node.services:
        out += service_listeners(svc)
    ours = {svc.unit for svc in node.services}
    for path, text in sorted(node.files.items()):
        if path in ours:
            continue
        if path.startswith(UNIT_DIR) and (path.endswith(".service") or path.endswith(".conf")):
            found = _unit_listener(path, text)
        elif path.startswith("/etc/default/"):
            found = _defaults_listener(path, text)
        else:
            found = None
        if found is not None:
            out.append(found)
    return out


def check_bridge_binds(node: Node) -> Iterable[Problem]:
    """A server in a docker bridge network binds inside the container's own namespace, which holds loopback and the
    container's bridge address only: an address of the host is not there, and SGLang cannot bind it."""
    for svc in node.services:
        if svc.parsed is None or not bridged(svc):
            continue
        bound = _bound(svc.value("--host"))
        ip = ip_of(bound) if bound else None
        if ip is None or ip.is_loopback:
            continue
        shown = ", ".join(svc.docker.values("-p", "--publish")) if svc.docker else "the port"
        yield node.host, (f"{svc.name} binds --host {bound} inside its container, whose bridge network holds only "
                          "loopback and the container's own address: SGLang cannot bind it there. Leave sglang_host "
                          f"at 0.0.0.0 (docker publishes {shown} on the host), or install with sglang_install_method: "
                          "uv (a uv server binds the host's own addresses)")
