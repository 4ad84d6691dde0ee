# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site checker's readers: the files a node gets read back the way the node reads them. Pure.

systemd units with systemd's own quoting (ExecStart, ExecStartPost, EnvironmentFile, Environment), environment files,
`docker run` options and the command after the image, nftables files, URLs and addresses; then what a node runs: one
Service per unit that runs SGLang or sglang-router, its command read through recipe/cli.py with the flag table of the
release that runs it (a uv venv names its release, /opt/sglang/venvs/<release>/bin/sglang, an image its tag; when
neither tells, the pinned release's table, and the messages say so).
"""
from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlsplit

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import cli
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import (
    flag_table_doc, load_catalog, router_flag_table_doc)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.releases import version_from_image

Problem = tuple[str, str]
# one-owner: the checker reads the rendered files on its own, so that it can disagree with the planner: it knows where
# systemd takes units from (and, in views.py, where Debian's packaged daemons read their arguments) without
# data/node.yml
UNIT_DIR = "/etc/systemd/system/"
_VENV_RELEASE = re.compile(r"/venvs/([^/]+)/bin/[^/]+$")
_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


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


def ip_of(text: str) -> Optional[ipaddress._BaseAddress]:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def is_loopback(address: str) -> bool:
    ip = ip_of(address)
    return bool(ip and ip.is_loopback) or address.lower() in _LOOPBACK_NAMES


def split_address(text: str) -> tuple[str, Optional[int]]:
    """'10.0.0.1:20000' -> ('10.0.0.1', 20000); '[fe80::1]:20000' -> ('fe80::1', 20000); '::1' -> ('::1', None)."""
    if text.startswith("["):
        host, _sep, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, int(port) if port.isdigit() else None
    return text, None


def published(spec: str) -> Optional[int]:
    """The host port of a docker -p spec ([ip:]host:container[/proto]); None for a random host port."""
    parts = spec.split("/")[0].rsplit(":", 2)
    if len(parts) == 1:
        return None
    host_port = parts[-2]
    return int(host_port) if host_port.isdigit() else None


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
    #: what the platform table says of the node's GPU: vram_gb, compute_capability, gfx (data/gpus.yml, or the site's
    #: sglang_gpu_platforms); checkpoints: {id: size_gb} a site's own recipes declare (sglang_recipes)
    platform: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: rendered stage views the node's processes are planned from (rendered/<host>/<stage>.yml settings: weights)
    views: dict[str, Any] = dataclasses.field(default_factory=dict)


def node_of(host: str, raw: dict[str, Any]) -> Node:
    files = {str(p): str(t) for p, t in (raw.get("files") or {}).items() if t is not None}
    machine = str(raw.get("machine") or host).strip().lower()
    addresses = [str(a).strip().lower() for a in raw.get("addresses") or []]
    if machine not in addresses:
        addresses.append(machine)
    gpus = raw.get("gpus_per_node")
    platform = {k: raw[k] for k in ("vram_gb", "compute_capability", "gfx", "checkpoints") if raw.get(k) is not None}
    return Node(host, machine, raw.get("gpu"), raw.get("vendor"), int(gpus) if gpus else None, addresses, files,
                {str(p): str(m) for p, m in (raw.get("modes") or {}).items()}, platform=platform,
                views=dict(raw.get("views") or {}))


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


def table_of(kind: str, release: str) -> cli.Table:
    """The flag table of a release (`server` or `router`), read once."""
    return _table(kind, release)


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
