# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node stages' inputs, read as the vendor's tool reads them. Pure; facts in data/.

Each reader takes one value as the inventory gives it and returns what the tool would make of it, or why the tool
refuses it (a sentence, without the variable's name: the caller names it):

    repository_uri()   apt's URI of a repository line (sources.list(5): a scheme apt has a method for, the base of
                       the archive, never the suite or dists/ inside it; data/apt.yml)
    http_url()         an HTTP(S) endpoint as huggingface_hub builds its URLs from HF_ENDPOINT
    rsync_source()     rsync(1)'s source syntax: [USER@]HOST:SRC, [USER@]HOST::SRC, rsync://[USER@]HOST[:PORT]/SRC
    kernel_parameter() one kernel command-line parameter (name[=value]) as the GRUB drop-in and the kernel read it
    module_name()      one line of modules-load.d(5): a module name, nothing else
    doca_version()     DOCA's release number, not MLNX_OFED's (data/nvidia/doca.yml)
    ip_address()       an entry of IMEX's nodes_config.cfg: an IP address (NVIDIA IMEX guide)
"""
from __future__ import annotations

import functools
import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml


@functools.lru_cache(maxsize=None)
def apt_facts() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "apt.yml")


@functools.lru_cache(maxsize=None)
def doca_facts() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "nvidia" / "doca.yml")["version"]


def scheme_of(value: str) -> str:
    found = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", value)
    return found.group(1).lower() if found else ""


def repository_uri(value: Any, suite: str | None = None) -> str | None:
    """Why apt would not find the repository at this URI (None: it would). `suite` is the suite apt appends (None for
    a flat repository, whose suite is a path such as "/")."""
    text = str(value or "").strip()
    scheme = scheme_of(text)
    if not scheme:
        return (f"{text!r} has no scheme; apt reads it as a malformed entry (URI parse). Write "
                f"https://{text.lstrip('/')}, or file:///{text.lstrip('/')} for a local tree")
    if scheme not in apt_facts()["schemes"]:
        return f"{text!r}: apt has no method for {scheme}: ({', '.join(apt_facts()['schemes'][:6])}, ...)"
    parts = urlsplit(text)
    if scheme in ("http", "https", "ftp") and not parts.netloc:
        return f"{text!r} names no host after {scheme}://"
    segments = [s for s in parts.path.split("/") if s]
    if "dists" in segments:
        return (f"{text!r} reaches into dists/; apt appends dists/<suite>/ to the base of the archive itself. Give "
                f"the base: {text[:text.index('/dists')]}")
    twice = [a for a, b in zip(segments, segments[1:]) if a == b and a in apt_facts()["distribution_folders"]]
    if twice:
        return (f"{text!r} holds {twice[0]}/{twice[0]}: the distribution folder is doubled. Give it once: "
                f"{text.replace(f'/{twice[0]}/{twice[0]}', f'/{twice[0]}', 1)}")
    codenames = set(apt_facts()["codenames"]) | ({suite} if suite else set())
    if suite and segments and segments[-1] in codenames:
        base = text.rstrip("/").rsplit("/", 1)[0]
        return (f"{text!r} ends in the suite {segments[-1]}, and apt appends dists/{suite}/ to it "
                f"({text.rstrip('/')}/dists/{suite}/InRelease). Give the base: {base}")
    return None


def http_url(value: Any) -> str | None:
    """Why an HTTP(S) endpoint would not be reached (None: it would). huggingface_hub joins HF_ENDPOINT and the path
    (f"{endpoint}/{repo_id}/resolve/..."), so an endpoint without its scheme is no URL at all."""
    text = str(value or "").strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"{text!r} is not an http:// or https:// URL; write https://{text.rsplit('://', maxsplit=1)[-1].lstrip('/')}"
    return None


def hub_endpoint(value: Any, repo: str) -> str | None:
    """Why a Hub endpoint (HF_ENDPOINT) would not serve `repo` (None: it would). huggingface_hub appends the repo
    itself ({endpoint}/{repo_id}/resolve/{revision}/{file}, {endpoint}/api/models/{repo_id}), so an endpoint whose path
    already holds the repo's own segments asks for a doubled path every server answers 404. Other paths are a
    mirror's own (https://mirror/hf, JFrog's /artifactory/api/huggingfaceml/<key>). Shown without credentials."""
    why = http_url(value)
    if why:
        return why
    text = str(value).strip()
    parts = urlsplit(text)
    segments = [s for s in parts.path.split("/") if s]
    wanted = [s.lower() for s in repo.strip("/").split("/") if s]
    lowered = [s.lower() for s in segments]
    at = next((i for i in range(len(lowered) - len(wanted) + 1) if wanted and lowered[i:i + len(wanted)] == wanted),
              None)
    if at is None:
        return None
    cut = segments[:at]
    if [s.lower() for s in cut[-2:]] == ["api", "models"]:
        cut = cut[:-2]
    shown = parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1], query="", fragment="")
    root = shown._replace(path="/" + "/".join(cut) if cut else "").geturl()
    return (f"{shown.geturl()!r} holds the path of {repo}; huggingface_hub appends /{repo}/resolve/... to the "
            f"endpoint itself, so every download would ask for it twice: give the Hub's root, {root}")


def rsync_source(value: Any) -> dict[str, str] | None:
    """The remote source rsync makes of a value, or None when rsync reads it as a local path (or nothing).

    rsync(1): "Access via remote shell: [USER@]HOST:SRC"; "Access via rsync daemon: [USER@]HOST::SRC,
    rsync://[USER@]HOST[:PORT]/SRC". A HOST never holds a "/": a colon after the first slash is part of a local path
    (rsync's check_for_hostspec); an IPv6 host is written in brackets."""
    text = str(value or "").strip()
    url = re.match(r"^rsync://(?:([^@/]+)@)?(\[[^\]]+\]|[^/:]+)(?::(\d+))?/(.*)$", text, re.I)
    if url:
        return {"kind": "daemon", "user": url.group(1) or "", "host": url.group(2).strip("[]"), "path": url.group(4)}
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", text):
        return None
    spec = re.match(r"^(?:([^@/:]+)@)?(\[[^\]/]+\]|[^/:\[\]@]+)(::?)(.*)$", text)
    if not spec:
        return None
    kind = "daemon" if spec.group(3) == "::" else "shell"
    return {"kind": kind, "user": spec.group(1) or "", "host": spec.group(2).strip("[]"), "path": spec.group(4)}


def rsync_problem(value: Any) -> str | None:
    """Why rsync would not fetch from this source (None: it would)."""
    text = str(value or "").strip()
    found = rsync_source(text)
    scheme = scheme_of(text)
    if found is None and scheme == "rsync":
        return f"{text!r} names no module after the host; write rsync://host/module/path"
    if found is None and scheme and "://" in text:
        rest = text.split("://", 1)[1]
        host, path = (rest.split("/", 1) + [""])[:2]
        return (f"{text!r}: rsync has no {scheme}:// URLs (its one URL form is rsync://, for a daemon); over ssh "
                f"write {host}:/{path}, from an rsync daemon rsync://{host}/{path}")
    if found is None:
        shown = text.split("://", 1)[-1]
        return (f"{text!r} is not an rsync source: rsync reads it as a local path. Write host:/path (over ssh), "
                f"host::module/path or rsync://host/module/path (an rsync daemon), e.g. rsync://{shown}")
    if not found["path"] or (found["kind"] == "shell" and not found["path"].strip()):
        return f"{text!r} names no folder after the host"
    return None


_PARAMETER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.,:/-]*(=\S*)?$")


def kernel_parameter(value: Any) -> str | None:
    """Why one item is not one kernel parameter (None: it is). The kernel reads name[=value] words split at
    whitespace (Documentation/admin-guide/kernel-parameters.rst); the role writes the items into
    GRUB_CMDLINE_LINUX_DEFAULT="... <items>" of a /etc/default/grub.d file that grub-mkconfig sources as shell, and
    compares each item with /proc/cmdline word by word: an item holding two words, a quote or a whole GRUB
    assignment never matches and breaks the line."""
    text = str(value)
    words = text.split()
    if re.match(r"^\s*GRUB_[A-Z_]+=", text):
        inner = re.sub(r"^\s*GRUB_[A-Z_]+=", "", text).strip().strip("\"'").split()
        return (f"{text!r} is a GRUB setting, not a kernel parameter; give the parameters alone, one per item: "
                f"[{', '.join(inner)}]")
    if len(words) > 1:
        return f"{text!r} is {len(words)} kernel parameters in one item; give one per item: [{', '.join(words)}]"
    if not words:
        return "an empty item is no kernel parameter"
    if re.search(r"[\"'`$\\]", text):
        return (f"{text!r} holds a quote, $, ` or \\, which ends or expands the shell string the GRUB drop-in "
                "writes it into; give the parameter without them")
    if not _PARAMETER.match(text):
        return f"{text!r} is not a kernel parameter (name or name=value)"
    return None


def module_name(value: Any) -> str | None:
    """Why a line is not a module name for modules-load.d(5) ("a list of kernel module names to load, separated by
    newlines"; parameters go to modprobe.d(5) "options" lines). None: it is one."""
    text = str(value).strip()
    if len(text.split()) > 1:
        name = text.split()[0]
        return (f"{text!r} is a module with parameters; modules-load.d takes the name alone ({name}), the parameters "
                f"go to an `options {name} ...` line of {node.folder('modprobe')}")
    if text.endswith(".ko") or "/" in text:
        return f"{text!r} is a file, not a module name; write {text.rsplit('/', 1)[-1].removesuffix('.ko')}"
    if not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        return f"{text!r} is not a kernel module name (letters, digits, _ and -)"
    return None


def doca_version(value: Any) -> str | None:
    """Why a value names no DOCA release folder (None: it does)."""
    text = str(value).strip()
    facts = doca_facts()
    if re.match(facts["doca"], text):
        return None
    if re.match(facts["mlnx_ofed"], text):
        return (f"{text!r} is an MLNX_OFED (DOCA-OFED component) version; the repository is named by the DOCA release "
                f"(X.Y.Z, e.g. {facts['example']}), whose folder holds that OFED")
    return f"{text!r} is not a DOCA release (X.Y.Z, e.g. {facts['example']}, or latest)"


def ip_address(value: Any) -> str | None:
    """Why a value is not an IP address (None: it is one)."""
    try:
        ipaddress.ip_address(str(value).strip())
        return None
    except ValueError:
        text = str(value).strip()
        if "/" in text or re.fullmatch(r"[\d.]+:\d+", text):
            return f"{text!r} is an address with a prefix or a port, not an IP address alone"
        return f"{text!r} is a host name, not an IP address"
