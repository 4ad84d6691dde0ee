# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The independent site checker: the files every node gets, read back the way the node reads them, judged as a whole.

    check_site(nodes) -> [(host, message), ...]     (empty: nothing to refuse)

It reads ONLY what the nodes get, never the planner's inputs or its plan, so it catches what a new input path
forgets. Its input, per inventory host:

    {"machine": "10.0.0.1",                 # ansible_host, else the inventory name: hosts with one machine share it
     "gpu": "h200" | None, "vendor": "nvidia" | "amd" | None, "gpus_per_node": 8 | None,   # the hardware
     "addresses": ["10.0.0.1", ...],        # optional: addresses the node is known to hold (facts, ansible_host)
     "files": {"/etc/systemd/system/sglang-x.service": "<text>", ...},   # every file the node gets
     "modes": {"/etc/sglang/x.env": "0600", ...}}                        # optional; a file without one is judged
                                                                          # as readable by others
nodes_from_site(site, hostvars) builds it from a planned site (placement.plan_site's files and the hosts' hardware).

How it reads the files: systemd units with systemd's own quoting (ExecStart, ExecStartPost, EnvironmentFile,
Environment), environment files, `docker run` options and the command after the image, nftables files, and every
SGLang and sglang-router command line through recipe/cli.py with the flag table of the release that runs it: a uv
venv names its release (/opt/sglang/venvs/<release>/bin/sglang), an image its tag. When neither tells (a floating
tag such as :latest, a digest), the command is read with the pinned release's table (data/sglang/versions.yml) and
the messages say so; a release with no table is refused (its command cannot be judged).

What it refuses (issue 26):
- PD pairs behind one router that disagree on what shapes the KV cache, or a bootstrap port the router uses that the
  prefill does not bind;
- a router pool serving more than one model, a router --host with a port, a secret or a repeated flag on its line;
- per machine: ports, unit files and GPUs used twice (several servers of one host, sglang_replicas, included), GPU
  sets that do not hold TP x PP / nnodes GPUs or name GPUs the machine lacks, docker GPU requests docker refuses
  (`--gpus device=0,1` unquoted: docker reads the value as CSV);
- secret-shaped strings in any command line, unit or file that is not 0600;
- environment values their consumer reads otherwise (NCCL_* booleans as True/yes: NCCL reads them as 0);
- health probes aimed at an address or port the server does not serve, docker servers published with -p but
  bound to loopback inside the container;
- multi-node members whose rendezvous address differs, is loopback, is not the head's own, or is shared with
  another instance, and instance firewalls that do not admit exactly the members;
- images, installs, devices and backends of the other GPU vendor.
Pure.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import ipaddress
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional
from urllib.parse import urlsplit

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (
    flag_table_doc, load_catalog, managed, router_flag_table_doc)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import version_from_image
from ansible_collections.metalserve.sglang.plugins.plugin_utils.secret_shapes import (
    placeholder, secret_env_name, secret_kind)

Problem = tuple[str, str]
DATA = Path(__file__).resolve().parents[3] / "data"
UNIT_DIR = "/etc/systemd/system/"
_VENV_RELEASE = re.compile(r"/venvs/([^/]+)/bin/[^/]+$")
_BOOLEAN_WORDS = ("true", "false", "yes", "no", "on", "off")
#: environment variables whose consumer reads an integer: NCCL's, Gloo's and Mooncake's (NCCL parses its
#: parameters with strtoll, so 'True' is 0); SGLang's own read true/false/1/0 and are left alone
_INTEGER_ENV = re.compile(r"^(NCCL_|GLOO_|MC_|NVSHMEM_|CUDA_|HIP_|HSA_|RCCL_)")
_SGLANG_ENV = re.compile(r"^(SGLANG_|SGL_)")
#: what SGLang 0.5.23's two boolean readers disagree on (get_bool_env_var: true/1 and false/0 only, anything else is
#: false with a warning; sglang.srt.environ EnvBool: also yes/y/no/n, anything else an error)
_SGLANG_AMBIGUOUS = ("yes", "no", "on", "off", "y", "n")
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
#: where the KV caches of a PD pair must agree: the checkpoint, its precision and how KV moves between them
PD_SHAPE_FLAGS = ("--quantization", "--kv-cache-dtype", "--page-size", "--dtype", "--disaggregation-transfer-backend",
                  "--speculative-algorithm", "--attention-backend")


@functools.lru_cache(maxsize=1)
def _vendors() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "sglang" / "vendors.yml").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _ports() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "sglang" / "ports.yml").read_text(encoding="utf-8"))


# --- readers: systemd, environment files, docker run, nftables -------------------------------------------------------

def unit_entries(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) of a unit file in order, continuation lines joined as systemd joins them."""
    return list(_unit_entries(text))


@functools.lru_cache(maxsize=8192)
def _unit_entries(text: str) -> tuple[tuple[str, str, str], ...]:
    out: list[tuple[str, str, str]] = []
    section = ""
    pending = ""
    for raw in text.splitlines():
        line = pending + raw
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
            continue
        if "=" in stripped:
            key, value = stripped.split("=", 1)
            out.append((section, key.strip(), value.strip()))
    return tuple(out)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", " ": " ", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "s": " "}


def systemd_words(value: str) -> list[str]:
    """A command line as systemd splits it (systemd.syntax(7), systemd.service(5) "Command lines"): % specifiers
    (%% is %), words split at whitespace, '...' and "..." quoting, C escapes; $$ is a literal $ afterwards, and
    $VAR references are left as written."""
    if not any(c in value for c in "\"'\\"):
        return [w.replace("%%", "%").replace("$$", "$") for w in value.split()]
    text = value.replace("%%", "\0pct\0")
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        word = ""
        quote = text[i] if text[i] in "\"'" else ""
        if quote:
            i += 1
        while i < n:
            c = text[i]
            if quote and c == quote:
                i += 1
                break
            if not quote and c.isspace():
                break
            if c == "\\" and i + 1 < n:
                nxt = text[i + 1]
                if nxt == "x" and i + 3 < n:
                    word += chr(int(text[i + 2:i + 4], 16))
                    i += 4
                    continue
                word += _ESCAPES.get(nxt, nxt)
                i += 2
                continue
            word += c
            i += 1
        words.append(word.replace("\0pct\0", "%").replace("$$", "$"))
    return words


def exec_argv(value: str) -> list[str]:
    """An Exec*= value as argv: its prefixes (-, @, :, +, !) dropped."""
    words = systemd_words(value)
    if words:
        words[0] = words[0].lstrip("-@:+!")
    return words


def env_lines(text: str) -> dict[str, str]:
    """KEY=value lines as systemd's EnvironmentFile= and docker --env-file read them (comments and blank lines
    skipped; the value as written after the first '=')."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        out[key.strip()] = value
    return out


#: `docker run` options that take no value (docker's reference for docker container run)
DOCKER_SWITCHES = {"--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--init", "--privileged",
                   "-P", "--publish-all", "--read-only", "--no-healthcheck", "--oom-kill-disable", "-q", "--quiet",
                   "--disable-content-trust", "--help", "--use-api-socket", "--sig-proxy"}


@dataclasses.dataclass(frozen=True)
class DockerRun:
    options: tuple[tuple[str, str], ...]  # (option, value; "" for a switch), in order
    image: str
    command: tuple[str, ...]

    def values(self, *names: str) -> list[str]:
        return [v for o, v in self.options if o in names]

    def has(self, *names: str) -> bool:
        return any(o in names for o, _v in self.options)


def docker_run(argv: list[str]) -> Optional[DockerRun]:
    """`docker run [options] image command...` read as the docker CLI reads it, or None for anything else."""
    if len(argv) < 3 or Path(argv[0]).name != "docker" or argv[1] != "run":
        return None
    options: list[tuple[str, str]] = []
    i = 2
    while i < len(argv) and argv[i].startswith("-"):
        token = argv[i]
        if "=" in token and token.startswith("--"):
            name, value = token.split("=", 1)
            options.append((name, value))
            i += 1
        elif token in DOCKER_SWITCHES or (re.fullmatch(r"-[dit]+", token) is not None):
            options.append((token, ""))
            i += 1
        else:
            options.append((token, argv[i + 1] if i + 1 < len(argv) else ""))
            i += 2
    if i >= len(argv):
        return None
    return DockerRun(tuple(options), argv[i], tuple(argv[i + 1:]))


@dataclasses.dataclass(frozen=True)
class NftRule:
    family: str            # ipv4 | ipv6
    ports: frozenset[int]
    admitted: Optional[str]  # the set whose sources pass; None: the rule drops every source


def nft_read(text: str) -> tuple[dict[str, list[str]], list[NftRule]]:
    """The named sets (elements) and the `tcp dport ... drop` rules of an nftables file."""
    sets: dict[str, list[str]] = {}
    for name, body in re.findall(r"set\s+(\S+)\s*\{(.*?)\n\s*\}", text, flags=re.S):
        found = re.search(r"elements\s*=\s*\{([^}]*)\}", body)
        sets[name] = [e.strip() for e in found.group(1).split(",") if e.strip()] if found else []
    rules = []
    for line in text.splitlines():
        if "dport" not in line or not line.rstrip().endswith("drop"):
            continue
        family = "ipv6" if "nfproto ipv6" in line or " ip6 " in line else "ipv4"
        found = re.search(r"dport\s+(\{[^}]*\}|\d+)", line)
        if not found:
            continue
        ports = frozenset(int(p) for p in re.findall(r"\d+", found.group(1)))
        admitted = re.search(r"saddr\s*!=\s*@(\S+)", line)
        rules.append(NftRule(family, ports, admitted.group(1) if admitted else None))
    return sets, rules


def url_parts(url: str) -> tuple[str, Optional[int]]:
    """(host, port) of a URL; port None when it names none."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    return (parts.hostname or ""), port


def _ip(text: str) -> Optional[ipaddress._BaseAddress]:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def is_loopback(address: str) -> bool:
    ip = _ip(address)
    return bool(ip and ip.is_loopback) or address.lower() in _LOOPBACK_NAMES


# --- what a node runs -------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Service:
    """One unit of a host that runs SGLang or sglang-router, as the node will run it."""

    host: str
    unit: str                    # the unit file's path
    kind: str                    # server | router
    install: str                 # uv | docker
    program: list[str]           # the argv of the unit's ExecStart
    args: list[str]              # what follows `sglang serve` / `launch_router`
    env: dict[str, str]
    env_sources: dict[str, str]  # variable -> the file or unit line it comes from
    docker: Optional[DockerRun]
    probes: list[str]            # health-probe URLs of ExecStartPost
    release: str = ""
    release_note: str = ""       # how the release was told, when it was not named
    table: Optional[cli.Table] = None
    parsed: Optional[cli.Parsed] = None
    refusal: str = ""

    @property
    def name(self) -> str:
        return self.unit.rsplit("/", 1)[-1]

    def value(self, flag: str, default: Any = None) -> Any:
        """What the release holds for the dest of `flag` (None: the table has no such flag)."""
        if self.parsed is None or self.table is None or flag not in self.table.flags:
            return default
        value = self.parsed.namespace.get(self.table.dest(flag))
        return default if value is None else value


@dataclasses.dataclass
class Node:
    host: str
    machine: str
    gpu: Optional[str]
    vendor: Optional[str]
    gpus: Optional[int]
    addresses: list[str]
    files: dict[str, str]
    modes: dict[str, str]
    services: list[Service] = dataclasses.field(default_factory=list)


def _node(host: str, raw: dict[str, Any]) -> Node:
    files = {str(p): str(t) for p, t in (raw.get("files") or {}).items() if t is not None}
    machine = str(raw.get("machine") or host).strip().lower()
    addresses = [str(a).strip().lower() for a in raw.get("addresses") or []]
    if machine not in addresses:
        addresses.append(machine)
    gpus = raw.get("gpus_per_node")
    return Node(host, machine, raw.get("gpu"), raw.get("vendor"), int(gpus) if gpus else None, addresses, files,
                {str(p): str(m) for p, m in (raw.get("modes") or {}).items()})


def _program_kind(argv: list[str]) -> tuple[str, list[str]]:
    """('server' | 'router' | '', the args after the program) of a command (after docker's image, if any)."""
    if len(argv) >= 2 and Path(argv[0]).name == "sglang" and argv[1] == "serve":
        return "server", argv[2:]
    if len(argv) >= 3 and Path(argv[0]).name.startswith("python") and argv[1] == "-m":
        if argv[2] == "sglang.launch_server":
            return "server", argv[3:]
        if argv[2] in ("sglang_router.launch_router", "sglang_router"):
            return "router", argv[3:]
    return "", []


def read_services(node: Node) -> list[Service]:
    out = []
    for path, text in sorted(node.files.items()):
        if not (path.startswith(UNIT_DIR) and path.endswith(".service")):
            continue
        entries = unit_entries(text)
        starts = [v for s, k, v in entries if s == "Service" and k == "ExecStart" and v]
        if not starts:
            continue
        argv = exec_argv(starts[-1])
        docker = docker_run(argv)
        kind, args = _program_kind(list(docker.command) if docker else argv)
        if not kind:
            continue
        env: dict[str, str] = {}
        sources: dict[str, str] = {}
        for section, key, value in entries:
            if section == "Service" and key == "EnvironmentFile":
                name = value.lstrip("-")
                for k, v in env_lines(node.files.get(name, "")).items():
                    env[k], sources[k] = v, name
            elif section == "Service" and key == "Environment":
                for word in systemd_words(value):
                    if "=" in word:
                        k, v = word.split("=", 1)
                        env[k], sources[k] = v, f"{path} (Environment=)"
        if docker:
            for name in docker.values("--env-file"):
                for k, v in env_lines(node.files.get(name, "")).items():
                    env[k], sources[k] = v, name
            for word in docker.values("-e", "--env"):
                if "=" in word:
                    k, v = word.split("=", 1)
                    env[k], sources[k] = v, f"{path} (docker -e)"
        probes = []
        for section, key, value in entries:
            if section == "Service" and key == "ExecStartPost":
                words = exec_argv(value)
                probes += [w for w in words if re.match(r"^https?://", w)]
        out.append(Service(node.host, path, kind, "docker" if docker else "uv", argv, args, env, sources, docker,
                           probes))
    return out


def pinned() -> str:
    return str(load_catalog().versions["pinned"])


def read_release(svc: Service) -> None:
    """The release that runs a service, and its flag table; the command read through it."""
    if svc.kind == "router":
        release = str(load_catalog().versions["router_pinned"])
        doc = router_flag_table_doc(release)
        svc.release, svc.release_note = release, f" (sglang-router {release}, the release the installs carry)"
    else:
        named = None
        if svc.docker:
            named = version_from_image(svc.docker.image)
            how = f"image {svc.docker.image}"
        else:
            found = _VENV_RELEASE.search(svc.program[0])
            named = found.group(1) if found else None
            how = f"{svc.program[0]}"
        if named:
            svc.release = named
        else:
            svc.release = pinned()
            svc.release_note = (f" ({how} does not name its SGLang release; read with the pinned {svc.release}'s "
                                "flag table)")
        doc = flag_table_doc(svc.release)
        if doc is None:
            svc.refusal = (f"{svc.name} runs SGLang {svc.release} ({how}), which has no flag table in this collection, "
                           "so its command cannot be judged; run a release with a table (data/sglang/versions.yml "
                           "flag_tables) or add one with tools/sglang_flag_table.py")
            return
    if doc is None:
        return
    svc.table = _table(svc.kind, svc.release)
    parsed, error = _parse(svc.kind, svc.release, tuple(svc.args))
    svc.parsed = parsed
    if error:
        what = "sglang-router" if svc.kind == "router" else "SGLang"
        svc.refusal = f"{svc.name}: {what} {svc.release}'s parser refuses its command{svc.release_note}: {error}"


@functools.lru_cache(maxsize=None)
def _table(kind: str, release: str) -> cli.Table:
    doc = router_flag_table_doc(release) if kind == "router" else flag_table_doc(release)
    return cli.Table.of(doc)


@functools.lru_cache(maxsize=4096)
def _parse(kind: str, release: str, args: tuple[str, ...]) -> tuple[Optional[cli.Parsed], str]:
    """A command read once per distinct line (a rack of identical nodes); callers treat the result as read-only."""
    try:
        return cli.parse(list(args), _table(kind, release)), ""
    except cli.CliError as exc:
        return None, exc.message


# --- the checks -------------------------------------------------------------------------------------------------------

def _repeated(svc: Service) -> Iterable[Problem]:
    if svc.parsed is None or svc.table is None:
        return
    for dest, occurrences in svc.parsed.repeated(svc.table).items():
        given = ", ".join(f"{o.written} {_shown(o.value)}".strip() for o in occurrences)
        yield svc.host, (f"{svc.name} sets {dest} {len(occurrences)} times ({given}); "
                         f"{'sglang-router' if svc.kind == 'router' else 'SGLang'} keeps the last, so one spelling "
                         "hides another: give each flag once (its owning variable, or one sglang_extra_args entry)")


def _shown(value: Any) -> str:
    if value is True or value is None:
        return ""
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)


def check_secrets(node: Node) -> Iterable[Problem]:
    """No secret-shaped string in a command line, a unit, or a file others can read."""
    for svc in node.services:
        owned = managed()["router" if svc.kind == "router" else "serve"]["secret"]
        if svc.parsed is not None and svc.table is not None:
            for flag in owned:
                if flag in svc.table.flags and svc.parsed.given(svc.table.dest(flag)):
                    written = svc.parsed.written(svc.table.dest(flag))[0]
                    yield node.host, (f"{svc.name} puts {written} on the command line: a secret there shows in ps, the "
                                      "unit file and the plan. SGLang servers take their API key from the 0600 config "
                                      "file (sglang_api_key); give no key on a router's line")
    for path, text in sorted(node.files.items()):
        private = node.modes.get(path) == "0600"
        unit = path.startswith(UNIT_DIR)
        if not private or unit:
            kind = secret_kind(text)
            if kind:
                where = "a unit file" if unit else f"a file others can read (mode {node.modes.get(path, 'unknown')})"
                yield node.host, (f"{path} holds {kind}, and it is {where}; keep secrets in the 0600 files the "
                                  "serving role writes (sglang_hf_token, sglang_api_key), never in units, command "
                                  "lines or readable files")
        if unit:
            for section, key, value in unit_entries(text):
                if key != "Environment":
                    continue
                for word in systemd_words(value):
                    name, _eq, val = word.partition("=")
                    if secret_env_name(name) and val and not placeholder(val):
                        yield node.host, (f"{path} sets {name} in Environment=, which anyone can read in the unit; "
                                          "pass it through the 0600 environment file instead")
    for svc in node.services:
        if svc.docker:
            for word in svc.docker.values("-e", "--env"):
                name, _eq, val = word.partition("=")
                if secret_env_name(name) and val and not placeholder(val):
                    yield node.host, (f"{svc.name} passes {name} with docker -e: on the command line, in ps and in "
                                      "docker inspect; use the 0600 --env-file or a mounted secret file")


def check_env(node: Node) -> Iterable[Problem]:
    """Environment values as their consumers read them."""
    for svc in node.services:
        for key, value in sorted(svc.env.items()):
            word = value.strip().strip("'\"").lower()
            source = svc.env_sources.get(key, "its environment")
            if _INTEGER_ENV.match(key) and word in _BOOLEAN_WORDS:
                want = "1" if word in ("true", "yes", "on") else "0"
                yield node.host, (f"{svc.name}: {key}={value} in {source}; {key.split('_')[0]} reads its variables "
                                  f"as integers, so {value!r} is 0 (off). Write {want} (a YAML boolean in sglang_env "
                                  "renders as True/False)")
            elif _SGLANG_ENV.match(key) and word in _SGLANG_AMBIGUOUS:
                want = "true" if word in ("yes", "on", "y") else "false"
                yield node.host, (f"{svc.name}: {key}={value} in {source}; SGLang reads booleans as true/false or 1/0 "
                                  f"(get_bool_env_var treats {value!r} as false, its newer EnvBool refuses or reads it "
                                  f"otherwise). Write {want}")
            else:
                yield from _env_value(node.host, svc, key, value, word, source)


def _env_value(host: str, svc: Service, key: str, value: str, word: str, source: str) -> Iterable[Problem]:
    """Values typed by data: NCCL's integers and choices (data/env.yml), and the variables the server's SGLang release
    types in its environ.py (data/sglang/env-<release>.yml)."""
    unit = svc.name
    nccl = _env_types().get("nccl") or {}
    if key in (nccl.get("integers") or []) and not re.fullmatch(r"-?[0-9]+", word):
        yield host, (f"{unit}: {key}={value} in {source}; NCCL reads {key} as an integer (strtoll), so {value!r} is "
                     "read as 0, silently. Write a number (NCCL's environment reference)")
    choices = (nccl.get("choices") or {}).get(key)
    if choices and word.upper() not in choices:
        yield host, (f"{unit}: {key}={value} in {source}; NCCL knows {', '.join(choices)} for it and ignores "
                     "anything else")
    if svc.kind != "server" or not key.startswith(("SGLANG_", "SGL_")):
        return
    typed = _sglang_env(svc.release)
    if key in typed.get("booleans", ()) and word not in ("true", "false", "1", "0"):
        yield host, (f"{unit}: {key}={value} in {source}; SGLang {svc.release} reads {key} as a boolean (EnvBool: "
                     f"true/false or 1/0), so {value!r} is not one. Write true or false")
    elif key in typed.get("integers", ()) and not re.fullmatch(r"-?[0-9]+", word):
        yield host, (f"{unit}: {key}={value} in {source}; SGLang {svc.release} reads {key} as an integer (EnvInt) "
                     "and stops on another value. Write a number")
    elif key in typed.get("floats", ()) and not re.fullmatch(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)(e-?[0-9]+)?", word):
        yield host, (f"{unit}: {key}={value} in {source}; SGLang {svc.release} reads {key} as a number (EnvFloat) "
                     "and stops on another value. Write a number")


@functools.lru_cache(maxsize=1)
def _env_types() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "env.yml").read_text(encoding="utf-8")) or {}


@functools.lru_cache(maxsize=8)
def _sglang_env(release: str) -> dict[str, frozenset[str]]:
    """SGLang <release>'s typed variables (data/sglang/env-<release>.yml); none known for another release."""
    path = DATA / "sglang" / f"env-{release}.yml"
    if not release or not path.is_file():
        return {}
    doc = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
    return {kind: frozenset(doc.get(kind) or []) for kind in ("booleans", "integers", "floats")}


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


def gpu_set(node: Node, svc: Service) -> tuple[Optional[list[str]], list[str]]:
    """(the GPUs of the machine a server can see, by index or UUID; None when unknown, problems)."""
    problems = []
    every = [str(i) for i in range(node.gpus)] if node.gpus else None
    visible = every
    if svc.docker:
        requested = svc.docker.values("--gpus")
        if requested:
            count, devices, problem = docker_gpu_request(requested[-1])
            if problem:
                problems.append(f"{svc.name}: {problem}")
                return None, problems
            if devices is not None:
                visible = devices
            elif count != "all":
                visible = every[:int(count)] if every is not None else [str(i) for i in range(int(count))]
        elif node.vendor == "nvidia":
            visible = []
        renders = [d for d in svc.docker.values("--device") if d.startswith("/dev/dri/renderD")]
        if renders:
            visible = [str(int(d[len("/dev/dri/renderD"):]) - 128) for d in renders if d[len("/dev/dri/renderD"):].isdigit()]
    names = (["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"] if node.vendor == "amd"
             else ["CUDA_VISIBLE_DEVICES"])
    for name in names:
        if name not in svc.env:
            continue
        mask = _gpu_mask(svc.env[name])
        if visible is None:
            visible = mask
            continue
        if all(m.isdigit() for m in mask):
            bad = [m for m in mask if int(m) >= len(visible)]
            if bad:
                problems.append(f"{svc.name}: {name}={svc.env[name]} names GPU {', '.join(bad)}, but it sees "
                                f"{len(visible)} ({'the machine has ' + str(node.gpus) if not svc.docker else 'docker hands it ' + str(len(visible))}); "
                                "the runtime stops reading the list there")
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
        layout = f"--tp-size {tp}" + (f" x --pp-size {pp}" if pp != 1 else "") + (f" / --nnodes {nodes}" if nodes != 1 else "")
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


def listening(svc: Service) -> list[tuple[int, str]]:
    """(port, what) every port the service binds on its machine."""
    out: list[tuple[int, str]] = []
    if svc.parsed is None:
        return out
    port = svc.value("--port")
    if svc.docker and not svc.docker.has("--network", "--net"):
        port = None  # a bridge-networked container binds only what it publishes
        for spec in svc.docker.values("-p", "--publish"):
            host_port = _published(spec)
            if host_port:
                out.append((host_port, f"{svc.name} -p {spec}"))
    if svc.kind == "router":
        if port:
            out.append((int(port), f"{svc.name} --port"))
        metrics = svc.value("--prometheus-port")
        if metrics:
            out.append((int(metrics), f"{svc.name} --prometheus-port"))
        return out
    multi = int(svc.value("--nnodes", 1)) > 1
    _dist_host, dist_port = _split_address(str(svc.value("--dist-init-addr") or ""))
    if port is not None:
        ports = _ports()
        out.append((int(port), f"{svc.name} --port"))
        if multi and dist_port:  # SGLang takes DP attention's ZMQ block from the rendezvous port + 1
            out += [(p, f"{svc.name} --dist-init-addr port +{p - dist_port} (SGLang internal)")
                    for p in range(dist_port + 1, dist_port + 1 + int(ports["dist_internal_count"]))]
        else:
            start = int(port) + int(ports["internal_offset"])
            out += [(p, f"{svc.name} --port +{p - int(port)} (SGLang internal)")
                    for p in range(start, start + int(ports["internal_count"]))]
    for occ in svc.parsed.occurrences:
        if occ.option.endswith("-port") and occ.option != "--port" and isinstance(occ.value, int):
            if occ.option == "--disaggregation-bootstrap-port":
                continue
            out.append((occ.value, f"{svc.name} {occ.option}"))
    if svc.value("--disaggregation-mode") == "prefill":
        out.append((int(svc.value("--disaggregation-bootstrap-port")), f"{svc.name} --disaggregation-bootstrap-port"))
    if multi and int(svc.value("--node-rank", 0)) == 0 and dist_port:
        out.append((dist_port, f"{svc.name} --dist-init-addr (rendezvous)"))
    return out


def _published(spec: str) -> Optional[int]:
    """The host port of a docker -p spec ([ip:]host:container[/proto]); None for a random host port."""
    parts = spec.split("/")[0].rsplit(":", 2)
    if len(parts) == 1:
        return None
    host_port = parts[-2]
    return int(host_port) if host_port.isdigit() else None


def _exporter_ports(node: Node) -> list[tuple[int, str, str]]:
    """(port, what, file) of the exporters the node's files configure."""
    out = []
    text = node.files.get("/etc/default/prometheus-node-exporter")
    if text:
        found = re.search(r"--web\.listen-address=\S*:(\d+)", text)
        if found:
            out.append((int(found.group(1)), "node exporter", "/etc/default/prometheus-node-exporter"))
    for path, text in node.files.items():
        if "dcgm-exporter" in path and path.endswith(".conf"):
            found = re.search(r"\s-a\s+\S*:(\d+)", text)
            if found:
                out.append((int(found.group(1)), "DCGM exporter", path))
    return out


def check_machines(nodes: list[Node]) -> Iterable[Problem]:
    """Inventory hosts that are one machine: one owner per file, port and GPU."""
    by_machine: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        by_machine[node.machine].append(node)
    for machine, here in sorted(by_machine.items()):
        hosts = [n.host for n in here]
        writers: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for node in here:
            for path, text in node.files.items():
                writers[path][text].append(node.host)
        for path, versions in sorted(writers.items()):
            if len(versions) > 1:
                who = sorted({h for owners in versions.values() for h in owners})
                ours = any(svc.unit == path or path in svc.env_sources.values() for n in here for svc in n.services)
                hint = ("Give each instance its own name (sglang_instance) or each host its own machine (ansible_host)"
                        if ours else "A file of the machine must read the same for every host of it (the plan writes "
                        "one per inventory host); give each host its own machine (ansible_host)")
                for host in who:
                    yield host, (f"{path} is written differently by {' and '.join(who)}, which are one machine "
                                 f"({machine}): each run, the last one written wins. {hint}")
        # ports: a file (unit) two hosts of the machine write identically runs once
        seen_units: set[tuple[str, str]] = set()
        taken: dict[int, list[tuple[str, str]]] = defaultdict(list)
        for node in here:
            for svc in node.services:
                key = (svc.unit, node.files[svc.unit])
                if key in seen_units:
                    continue
                seen_units.add(key)
                for port, what in listening(svc):
                    taken[port].append((node.host, what))
            for port, what, path in _exporter_ports(node):
                key = (path, node.files[path])
                if key in seen_units:
                    continue
                seen_units.add(key)
                taken[port].append((node.host, what))
        for port, owners in sorted(taken.items()):
            if len(owners) > 1:
                detail = " and ".join(f"{what} of {host}" for host, what in owners)
                for host in sorted({h for h, _w in owners}):
                    yield host, (f"port {port} is bound twice on {machine}: {detail}; move one (sglang_port, "
                                 "sglang_extra_args, sglang_router_port)" + (
                                     f" or give {' and '.join(hosts)} their own machines" if len(hosts) > 1 else ""))
        # GPUs
        used: dict[str, list[tuple[str, str]]] = defaultdict(list)
        seen_units = set()
        for node in here:
            for svc in node.services:
                key = (svc.unit, node.files[svc.unit])
                if svc.kind != "server" or svc.parsed is None or key in seen_units:
                    continue
                seen_units.add(key)
                gpus, problems = used_gpus(node, svc)
                for problem in problems:
                    yield node.host, problem
                for gpu in gpus or []:
                    used[gpu].append((node.host, svc.name))
        # one message per set of servers that share GPUs (replicas of two inventory names clash pair by pair)
        clashes: dict[tuple[tuple[str, str], ...], list[str]] = defaultdict(list)
        for gpu, owners in used.items():
            if len(owners) > 1:
                clashes[tuple(sorted(set(owners)))].append(gpu)
        for pairs, shared in sorted(clashes.items()):
            gpus = ", ".join(sorted(shared, key=lambda g: (len(g), g)))
            for host in sorted({h for h, _s in pairs}):
                yield host, (f"GPU {gpus} of {machine} would serve {' and '.join(f'{s} ({h})' for h, s in pairs)} "
                             "at once; give each server its own GPUs (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES in "
                             "sglang_env, sglang_replica_gpus, or docker --gpus device=...) or its own machine")


def _served(svc: Service) -> tuple[str, str]:
    """(served model name, checkpoint folder) of a server: what clients name, and which weights it loads."""
    path = str(svc.value("--model-path") or "")
    served = str(svc.value("--served-model-name") or path)
    return served, path.rstrip("/").rsplit("/", 1)[-1]


def _endpoints(nodes: list[Node]) -> dict[tuple[str, int], list[tuple[Node, Service]]]:
    """Where each server head answers: (address, port) -> the servers reached there."""
    out: dict[tuple[str, int], list[tuple[Node, Service]]] = defaultdict(list)
    for node in nodes:
        for svc in node.services:
            if svc.kind != "server" or svc.parsed is None or int(svc.value("--node-rank", 0)) != 0:
                continue
            bound = str(svc.value("--host") or "")
            where = set(node.addresses) | ({bound.lower()} if bound and bound not in ("0.0.0.0", "::") else set())
            port = svc.value("--port")
            ports = [port]
            if svc.docker and not svc.docker.has("--network", "--net"):
                ports = [_published(p) for p in svc.docker.values("-p", "--publish")
                         if p.split("/")[0].rsplit(":", 1)[-1] == str(port)]
            for address in where:
                for reached in ports:
                    if reached is not None:
                        out[(address, int(reached))].append((node, svc))
    return out


def _router_worker_urls(router: Service) -> list[str]:
    """Every worker URL a router's command names: PD prefill and decode workers, then plain workers."""
    prefill = list(router.value("--prefill", []) or [])
    decode = list(router.value("--decode", []) or [])
    return [str(w[0]) for w in prefill] + [str(w[0]) for w in decode] + [str(u) for u in router.value("--worker-urls", []) or []]


def check_routers(nodes: list[Node]) -> Iterable[Problem]:
    endpoints = _endpoints(nodes)
    for node in nodes:
        for router in (s for s in node.services if s.kind == "router" and s.parsed is not None):
            bound = str(router.value("--host") or "")
            host_only, port_in_host = _split_address(bound)
            if port_in_host is not None:
                yield node.host, (f"{router.name}: --host {bound} holds a port; sglang-router takes the address alone "
                                  f"(--host {host_only}) and the port from --port (sglang_router_port)")
            urls = _router_worker_urls(router)
            found: dict[str, tuple[Node, Service]] = {}
            for url in urls:
                host, port = url_parts(url)
                match = endpoints.get((host.lower(), port), []) if port is not None else []
                if not match:
                    yield node.host, (f"{router.name} sends requests to {url}, which no server of the site serves "
                                      "(no head whose address and --port match it); check the router's workers group "
                                      "and the servers' sglang_host / sglang_port")
                else:
                    found[url] = match[0]
            names = {_served(s)[0] for _n, s in found.values()}
            models = defaultdict(list)
            for url, (n, s) in found.items():
                served, folder = _served(s)
                models[served if len(names) > 1 else f"{served} from {folder}"].append(n.host)
            if len(models) > 1:
                shown = "; ".join(f"{name} on {', '.join(hosts)}" for name, hosts in sorted(models.items()))
                yield node.host, (f"{router.name} spreads requests over servers of different models ({shown}); "
                                  "a router pool serves one model: give each model its own router, or the same "
                                  "sglang_quant / sglang_model_path / sglang_served_model_name to every server of it")
            prefill = list(router.value("--prefill", []) or [])
            decode = list(router.value("--decode", []) or [])
            if prefill and decode:
                yield from _pd_pairs(node, router, prefill, decode, found)


def _pd_pairs(node: Node, router: Service, prefill: list[list[str]], decode: list[list[str]],
              found: dict[str, tuple[Node, Service]]) -> Iterable[Problem]:
    default_bootstrap = int(_ports()["pd_bootstrap"])
    for entry in prefill:
        url = entry[0]
        if url not in found:
            continue
        pnode, psvc = found[url]
        if psvc.value("--disaggregation-mode") != "prefill":
            yield node.host, (f"{router.name} names {url} a prefill worker, but {psvc.name} on {pnode.host} runs "
                              f"--disaggregation-mode {psvc.value('--disaggregation-mode')}; its sglang_pd.role must be "
                              "prefill")
            continue
        used = int(entry[1]) if len(entry) > 1 and str(entry[1]).isdigit() else default_bootstrap
        bound = int(psvc.value("--disaggregation-bootstrap-port"))
        if used != bound:
            yield node.host, (f"{router.name} sends the bootstrap of {url} to port {used}"
                              f"{' (sglang-router default)' if len(entry) == 1 else ''}, but {psvc.name} on "
                              f"{pnode.host} binds --disaggregation-bootstrap-port {bound}; set the port once, in "
                              "the prefill's sglang_pd.bootstrap_port")
    for entry in decode:
        url = entry[0]
        if url in found and found[url][1].value("--disaggregation-mode") != "decode":
            dnode, dsvc = found[url]
            yield node.host, (f"{router.name} names {url} a decode worker, but {dsvc.name} on {dnode.host} runs "
                              f"--disaggregation-mode {dsvc.value('--disaggregation-mode')}; its sglang_pd.role must "
                              "be decode")
    pairs = [found[e[0]] for e in prefill + decode if e[0] in found]
    if len(pairs) < 2:
        return
    first_node, first = pairs[0]
    for other_node, other in pairs[1:]:
        differ = []
        for what, mine, theirs in [("checkpoint", _served(first)[1], _served(other)[1]),
                                   ("served model name", _served(first)[0], _served(other)[0])] + [
                (flag, first.value(flag), other.value(flag)) for flag in PD_SHAPE_FLAGS]:
            if mine != theirs:
                differ.append(f"{what} {mine!r} on {first_node.host}, {theirs!r} on {other_node.host}")
        if differ:
            yield other_node.host, (f"the PD workers behind {router.name} ({node.host}) do not agree on what shapes "
                                    f"the KV cache they exchange: {'; '.join(differ)}. Give the prefill and decode "
                                    "workers the same sglang_quant, sglang_model_path, sglang_kv_cache_fp8 and "
                                    "sglang_pd.transfer_backend (and the same KV flags in sglang_extra_args)")


def _split_address(text: str) -> tuple[str, Optional[int]]:
    """'10.0.0.1:20000' -> ('10.0.0.1', 20000); '[fe80::1]:20000' -> ('fe80::1', 20000); '::1' -> ('::1', None)."""
    if text.startswith("["):
        host, _sep, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, int(port) if port.isdigit() else None
    return text, None


def check_probes(node: Node) -> Iterable[Problem]:
    for svc in node.services:
        if svc.parsed is None:
            continue
        bound = str(svc.value("--host") or "")
        port = svc.value("--port")
        bridged = svc.docker is not None and not svc.docker.has("--network", "--net")
        published = svc.docker.values("-p", "--publish") if bridged and svc.docker else []
        if bridged and published and is_loopback(bound):
            yield node.host, (f"{svc.name}: the server binds {bound} inside its container and docker publishes "
                              f"{', '.join(published)}: docker forwards to the container's own address, so nothing "
                              "reaches it. Bind 0.0.0.0 (sglang_host) or run the container on the host network")
        for url in svc.probes:
            host, probe_port = url_parts(url)
            expect_port = port
            if bridged:
                mapped = [_published(s) for s in published if s.split("/")[0].rsplit(":", 1)[-1] == str(port)]
                expect_port = mapped[0] if mapped else None
            if probe_port != expect_port:
                yield node.host, (f"{svc.name}: its health probe asks {url}, but the server answers on port "
                                  f"{expect_port}; the unit would wait for a port nothing serves")
                continue
            if not _answers(bound, host, node):
                yield node.host, (f"{svc.name}: its health probe asks {url}, but the server binds --host {bound} "
                                  f"only; probe {bound} (or bind 0.0.0.0)")


def _answers(bound: str, host: str, node: Node) -> bool:
    """Whether a server bound to `bound` answers a connection to `host` made on its own machine."""
    if bound in ("", "::"):
        return True
    if bound == "0.0.0.0":
        ip = _ip(host)
        return ip is None or ip.version == 4
    if is_loopback(bound):
        return is_loopback(host)
    return host.lower() == bound.lower()


def _reached_addresses(nodes: list[Node]) -> set[str]:
    """The addresses other machines send traffic to: each machine's own (ansible_host), every rendezvous
    (--dist-init-addr) and every router's workers. Addresses a machine merely holds are not among them unless one of
    these names them: every docker host holds 172.17.0.1, every NIC a link-local fe80:: address, and neither is
    where the site sends anything."""
    out = {n.machine.lower() for n in nodes}
    for node in nodes:
        for svc in node.services:
            if svc.parsed is None:
                continue
            if svc.kind == "server":
                out.add(_split_address(str(svc.value("--dist-init-addr") or ""))[0].lower())
            else:
                out |= {url_parts(u)[0].lower() for u in _router_worker_urls(svc)}
    usable = set()
    for address in out:
        ip = _ip(address)
        if ip is not None and not (ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified):
            usable.add(str(ip))
    return usable


def check_bind_addresses(nodes: list[Node]) -> Iterable[Problem]:
    """A server bound to one address must run where that address is: bound to another machine's address (a
    group-wide sglang_host copied from one host), it cannot start. Only addresses the site knows to be another
    machine's are judged: a node may hold addresses the inventory does not list (a second NIC)."""
    owner: dict[str, set[str]] = defaultdict(set)
    hosts: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        hosts[node.machine].append(node.host)
        for address in node.addresses:
            owner[address].add(node.machine)
    for node in nodes:
        for svc in node.services:
            if svc.kind != "server":  # a router may bind a floating address (keepalived, ip_nonlocal_bind)
                continue
            bound = str(svc.value("--host") or "").strip("[]").lower() if svc.parsed is not None else ""
            ip = _ip(bound)
            if ip is None or ip.is_unspecified or ip.is_loopback:
                continue
            others = sorted(owner.get(str(ip), set()) - {node.machine})
            if others and str(ip) not in node.addresses:
                named = ", ".join(f"{'/'.join(hosts[m])} ({m})" for m in others)
                yield node.host, (f"{svc.name} binds --host {bound}, an address of {named}, not of "
                                  f"{node.host} ({node.machine}): it cannot start there. Set sglang_host per host "
                                  "(host_vars) to the node's own address, or leave it at 0.0.0.0")


def check_instances(nodes: list[Node]) -> Iterable[Problem]:
    """Multi-node instances: one rendezvous address, non-loopback, the head's own, one per instance, and instance
    firewalls that admit exactly the members."""
    groups: dict[str, list[tuple[Node, Service]]] = defaultdict(list)
    for node in nodes:
        for svc in node.services:
            if svc.kind == "server" and svc.parsed is not None and int(svc.value("--nnodes", 1)) > 1:
                groups[svc.name].append((node, svc))
    claims: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    reached = _reached_addresses(nodes)
    for node in nodes:
        for address in node.addresses:
            if address in reached:
                claims[address][node.machine].append(node.host)
    for address, machines in sorted(claims.items()):
        if len(machines) > 1:
            shown = " and ".join(f"{m} ({', '.join(h)})" for m, h in sorted(machines.items()))
            for host in sorted(h for hosts in machines.values() for h in hosts):
                yield host, (f"address {address} is claimed by {len(machines)} machines, {shown}: every machine needs "
                             "its own address (a copied sglang_dist_address or ansible_host sends one machine's traffic "
                             "to another)")
    addresses_used: dict[str, list[str]] = defaultdict(list)
    for unit, members in sorted(groups.items()):
        hosts = [n.host for n, _s in members]
        addrs = {n.host: str(s.value("--dist-init-addr") or "") for n, s in members}
        nnodes = {n.host: int(s.value("--nnodes", 1)) for n, s in members}
        ranks = {n.host: int(s.value("--node-rank", 0)) for n, s in members}
        for address in set(addrs.values()):
            addresses_used[address].append(unit)
        if len(set(addrs.values())) > 1:
            shown = ", ".join(f"{h}: {a}" for h, a in addrs.items())
            for host in hosts:
                yield host, (f"the members of {unit} rendezvous at different addresses ({shown}); every member "
                             "needs the head's --dist-init-addr (set sglang_instance_group on all of them, and "
                             "sglang_dist_address only on hosts, never copied between them)")
            continue
        expected = max(nnodes.values())
        if sorted(ranks.values()) != list(range(expected)) or len(set(nnodes.values())) > 1:
            shown = ", ".join(f"{h}: rank {ranks[h]} of {nnodes[h]}" for h in hosts)
            for host in hosts:
                yield host, (f"{unit} is run by {len(hosts)} host(s) ({shown}); an instance of --nnodes "
                             f"{expected} needs ranks 0..{expected - 1} once each: fix sglang_instance_group "
                             "(or sglang_node_rank on every member)")
            continue
        address = list(addrs.values())[0]
        dist_host, dist_port = _split_address(address)
        head_node = [n for n, _s in members if ranks[n.host] == 0][0]
        if is_loopback(dist_host):
            for host in hosts:
                yield host, (f"{unit}: the rendezvous address {address} is loopback, which the other members cannot "
                             f"reach; {head_node.host} needs an address the members reach (sglang_dist_address, "
                             "sglang_dist_interface, or an ansible_host that is not localhost)")
            continue
        if dist_host.lower() not in head_node.addresses:
            for host in hosts:
                yield host, (f"{unit}: the rendezvous address {dist_host} is not an address of the head "
                             f"{head_node.host} ({', '.join(head_node.addresses)}); rank 0 binds it, so the members "
                             "would wait for a rendezvous that never opens")
        yield from _firewalls(unit, members, dist_port)
    for address, units in sorted(addresses_used.items()):
        if len(units) > 1:
            for node, svc in (m for u in units for m in groups[u]):
                yield node.host, (f"{' and '.join(units)} rendezvous at the same address {address}: two instances "
                                  "would join one another. Each instance needs its own head (sglang_instance_group, "
                                  "sglang_dist_address) or its own sglang_dist_port")


def _firewalls(unit: str, members: list[tuple[Node, Service]], dist_port: Optional[int]) -> Iterable[Problem]:
    """Each member's instance firewall admits exactly the members' addresses to the rendezvous port."""
    if dist_port is None:
        return
    known = {n.host: [a for a in n.addresses if _ip(a) is not None] for n, _s in members}
    every = {a for addrs in known.values() for a in addrs}
    for node, _svc in members:
        for path, text in sorted(node.files.items()):
            if not path.endswith(".nft"):
                continue
            sets, rules = nft_read(text)
            guarding = [r for r in rules if dist_port in r.ports]
            if not guarding:
                continue
            admitted = {a for r in guarding if r.admitted for a in sets.get(r.admitted, [])}
            missing = [h for h, addrs in known.items() if addrs and not set(addrs) & admitted]
            foreign = sorted(a for a in admitted if a not in every)
            if missing:
                yield node.host, (f"{path} keeps {', '.join(missing)} of {unit} away from the rendezvous port "
                                  f"{dist_port} (it admits {', '.join(sorted(admitted)) or 'no one'}; "
                                  f"{', '.join(f'{h} is {a}' for h in missing for a in known[h][:1])}): the instance "
                                  "could not start. The firewall must list every member's address")
            if foreign and all(known.values()):
                yield node.host, (f"{path} admits {', '.join(foreign)} to the rendezvous port {dist_port} of {unit}, "
                                  "which is no member's address; the firewall must admit exactly the members")
            block = range(dist_port + 1, dist_port + 1 + int(_ports()["dist_internal_count"]))
            open_ports = [p for p in block if not all(p in r.ports for r in guarding)]  # per address family
            if open_ports:
                yield node.host, (f"{path} guards the rendezvous port {dist_port} of {unit} but not "
                                  f"{', '.join(map(str, open_ports))}, which SGLang binds from the rendezvous port + 1 "
                                  "(DP attention's ZMQ ports): any host can reach them; guard the whole block")


def _hardware(node: Node) -> str:
    return f"{(node.vendor or '').upper()} {node.gpu}" if node.gpu else (node.vendor or "").upper()


def _own_wheels(node: Node, svc: Service) -> bool:
    """Whether the venv a uv server runs from was built from the site's own package index or wheelhouse: its
    requirements file (sglang_install's marker, <venv>/.metalserve-requirements) names one."""
    venv = svc.program[0].rsplit("/bin/", 1)[0]
    marker = node.files.get(f"{venv}/.metalserve-requirements") or ""
    return any(line.split()[:1] and line.split()[0] in ("--index-url", "--extra-index-url", "--find-links")
               for line in marker.splitlines())


def check_vendor(node: Node) -> Iterable[Problem]:
    vendors = _vendors()
    if node.vendor not in vendors:
        return
    other = "amd" if node.vendor == "nvidia" else "nvidia"
    mine, theirs = vendors[node.vendor], vendors[other]
    for svc in node.services:
        if svc.kind != "server":
            continue
        if svc.docker:
            image = svc.docker.image.lower()
            rocm = vendors["amd"]["image_mark"] in image
            repo = image.split("@", 1)[0]
            repo = repo.rsplit(":", 1)[0] if ":" in repo.rsplit("/", 1)[-1] else repo
            cuda = not rocm and (repo in (vendors["nvidia"].get("image_repos") or [])
                                 or any(m in image for m in vendors["nvidia"].get("image_marks") or []))
            if node.vendor == "amd" and cuda:
                yield node.host, (f"{svc.name} runs {svc.docker.image}, a CUDA image, on an {_hardware(node)} node; "
                                  "AMD nodes run a ROCm image (the cookbook's lmsysorg/sglang-rocm for the GPU: unset a "
                                  "site-wide sglang_image for AMD racks, or set their own)")
            families = vendors["amd"].get("image_arch") or {}
            want = families.get(str(node.gpu or ""))
            built = [f for f in sorted(set(families.values())) if f in image]
            if node.vendor == "amd" and rocm and want and built and want not in built:
                yield node.host, (f"{svc.name} runs {svc.docker.image}, a ROCm image built for {'/'.join(built)}, on "
                                  f"an {_hardware(node)} node, which needs a {want} image (SGLang's ROCm images are "
                                  "built per GPU family); use the cookbook's image for the GPU")
            if node.vendor == "nvidia" and rocm:
                yield node.host, (f"{svc.name} runs {svc.docker.image}, a ROCm image, on an {_hardware(node)} "
                                  "node; NVIDIA nodes run a CUDA image (lmsysorg/sglang)")
            for option in theirs.get("docker_options") or []:
                if svc.docker.has(option):
                    yield node.host, (f"{svc.name} hands GPUs to docker with {option}, which only {other.upper()} "
                                      f"nodes have; {node.host} is {node.vendor.upper()}")
            for device in theirs.get("docker_devices") or []:
                if any(d.split(":")[0] == device or d.startswith(device + "/") for d in svc.docker.values("--device")):
                    yield node.host, (f"{svc.name} passes {device} into its container, a device of "
                                      f"{other.upper()} nodes; {node.host} is {node.vendor.upper()}")
        elif mine.get("uv") is False and not _own_wheels(node, svc):
            yield node.host, (f"{svc.name} runs SGLang from a uv venv ({svc.program[0]}) on an {_hardware(node)} "
                              "node: PyPI's SGLang wheels pull CUDA builds of torch and sgl-kernel. "
                              f"{node.vendor.upper()} nodes run the ROCm image (sglang_install_method: docker), or a "
                              "venv from the site's own ROCm wheels (sglang_install_index_url, _extra_index_urls or "
                              "_find_links)")
        for key in theirs.get("env") or []:
            if key in svc.env:
                yield node.host, (f"{svc.name} sets {key}, which only {other.upper()} runtimes read; {node.host} is "
                                  f"{node.vendor.upper()} ({', '.join(mine.get('env') or []) or 'its own variables'})")
        for flag, values in (theirs.get("values") or {}).items():
            value = svc.value(flag)
            if value in values:
                yield node.host, (f"{svc.name} runs {flag} {value}, which only {other.upper()} GPUs have; "
                                  f"{node.host} is {_hardware(node)}"
                                  + (": drop sglang_moe_a2a: deepep (or --moe-a2a-backend) for AMD racks"
                                     if flag == "--moe-a2a-backend" else ""))


# --- entry points -----------------------------------------------------------------------------------------------------

def read_nodes(nodes: dict[str, dict[str, Any]]) -> list[Node]:
    out = []
    for host in sorted(nodes):
        node = _node(host, nodes[host])
        node.services = read_services(node)
        for svc in node.services:
            read_release(svc)
        out.append(node)
    return out


def check_site(nodes: dict[str, dict[str, Any]]) -> list[Problem]:
    """Every problem of the site the files show, as (host, message), each once, in host order."""
    read = read_nodes(nodes)
    problems: list[Problem] = []
    for node in read:
        for svc in node.services:
            if svc.refusal:
                problems.append((node.host, svc.refusal))
            problems += list(_repeated(svc))
        problems += list(check_secrets(node))
        problems += list(check_env(node))
        problems += list(check_probes(node))
        problems += list(check_vendor(node))
    problems += list(check_machines(read))
    problems += list(check_routers(read))
    problems += list(check_instances(read))
    problems += list(check_bind_addresses(read))
    unique = list(dict.fromkeys(problems))
    return sorted(unique, key=lambda p: p[0])


def failure_text(problems: list[Problem]) -> str:
    """All problems in one message, one line each, grouped by host."""
    hosts = sorted({h for h, _m in problems})
    lines = [f"the site checker refuses {len(hosts)} host(s) (it reads the files the nodes would get):"]
    lines += [f"  - {host}: {message}" for host, message in problems]
    return "\n".join(lines)


def nodes_from_site(site: dict[str, Any], hostvars: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """check_site's input from a planned site (plan_site's result): every file a host gets (the serving files, the
    exporters' and, on monitoring hosts, the site's monitoring files, and the node stages' where the plan has them:
    the same set rendered/<host>/files/ holds) and the hardware and addresses the inventory and the gathered facts
    describe. Nothing the planner decided besides the files is passed on."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.render import node_files  # noqa: PLC0415

    catalog = load_catalog()
    monitoring = site.get("monitoring") or {}
    out: dict[str, dict[str, Any]] = {}
    for host, plan in (site.get("plans") or {}).items():
        hv = hostvars.get(host) or {}
        files: dict[str, str] = {}
        modes: dict[str, str] = {}
        for entry in node_files(plan, monitoring).values():
            if entry.get("content") is not None:
                files[entry["path"]] = entry["content"]
                modes[entry["path"]] = str(entry.get("mode", ""))
        facts = hv.get("ansible_facts") or {}
        gpu = hv.get("sglang_gpu") or ((facts.get("metalserve_gpu") or {}).get("gpu_id"))
        platforms = catalog.gpus if not hv.get("sglang_gpu_platforms") else {**catalog.gpus, **hv["sglang_gpu_platforms"]}
        platform = platforms.get(str(gpu)) if gpu else None
        out[host] = {"machine": str(hv.get("ansible_host") or host), "gpu": gpu,
                     "vendor": (platform or {}).get("vendor"), "gpus_per_node": (platform or {}).get("gpus_per_node"),
                     "addresses": node_addresses(host, hv), "files": files, "modes": modes}
    return out


def node_addresses(host: str, hv: dict[str, Any]) -> list[str]:
    """The addresses a host is known to hold: its gathered facts' IPv4/IPv6 addresses when gathered, else what the
    inventory declares for it (ansible_host, sglang_dist_address)."""
    facts = hv.get("ansible_facts") or {}
    found = [str(a) for key in ("all_ipv4_addresses", "all_ipv6_addresses") for a in facts.get(key) or []]
    for value in facts.values():
        if isinstance(value, dict) and isinstance(value.get("ipv4"), dict) and value["ipv4"].get("address"):
            found.append(str(value["ipv4"]["address"]))
    for addresses in ((facts.get("metalserve_fabric") or {}).get("interfaces") or {}).values():
        found += [str(a) for a in addresses or []]
    declared = [str(hv.get("ansible_host") or host)]
    if not found and hv.get("sglang_dist_address"):
        declared.append(str(hv["sglang_dist_address"]).strip("[]"))
    return list(dict.fromkeys(found + declared))
