# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names and values read in each component's own grammar, for the site checker (checks/site.py). Pure.

- Docker image references, as github.com/distribution/reference parses them (regexp.go, reference.go; go-digest's
  lengths), and a registry mirror's prefix written twice;
- URLs without the scheme their reader needs (credentials in a URL, in any form, are data/secrets.yml's, which
  check_secrets and the planner read);
- environment variable names a component reads (SGLang's release tables, data/sglang/env-<release>.yml; NCCL's,
  data/env-nccl.yml; the runtimes' and Hugging Face's, data/env.yml): a name close to a known one is a typo;
- environment values as each reader of the release reads them (EnvBool, get_bool_env_var);
- the GPU architectures an image's CUDA or ROCm build carries, and backend values of one GPU vendor on the other
  (data/sglang/vendors.yml).
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterable, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.readers import (
    Node, Problem, Service, docker_run, exec_argv, unit_entries)

DATA = Path(__file__).resolve().parents[3] / "data"

# --- Docker image references (github.com/distribution/reference, regexp.go) ----------------------------------------
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = _ALNUM + r"(?:" + _SEPARATOR + _ALNUM + r")*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*"
_HOST = r"(?:" + _DOMAIN_NAME + r"|\[(?:[a-fA-F0-9:]+)\])"
_DOMAIN_AND_PORT = _HOST + r"(?::[0-9]+)?"
_REMOTE_NAME = _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*"
_NAME = r"(?:" + _DOMAIN_AND_PORT + r"/)?" + _REMOTE_NAME
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
#: Go's RE2 reads \w as [0-9A-Za-z_], ASCII only: so does this one
REFERENCE = re.compile(r"^(" + _NAME + r")(?::(" + _TAG + r"))?(?:@(" + _DIGEST + r"))?$", re.ASCII)
ANCHORED_NAME = re.compile(r"^(?:(" + _DOMAIN_AND_PORT + r")/)?(" + _REMOTE_NAME + r")$")
#: reference.go NameTotalLengthMax
NAME_TOTAL_LENGTH_MAX = 255
#: go-digest: the algorithms it knows and the length of their hex encoding
DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}


@functools.lru_cache(maxsize=1024)
def _image_problem(ref: str) -> str:
    return image_problem(ref)


def image_problem(ref: str) -> str:
    """'' when docker parses the reference, else docker's reason (reference.Parse's errors)."""
    if not ref:
        return "repository name must have at least one component"
    found = REFERENCE.match(ref)
    if found is None:
        if REFERENCE.match(ref.lower()):
            return "repository name must be lowercase"
        return "invalid reference format"
    name, _tag, digest = found.groups()
    if len(name) > NAME_TOTAL_LENGTH_MAX:
        return f"repository name must not be more than {NAME_TOTAL_LENGTH_MAX} characters"
    if digest:
        algorithm, _sep, encoded = digest.partition(":")
        if algorithm not in DIGEST_LENGTHS:
            return "unsupported digest algorithm"
        if len(encoded) != DIGEST_LENGTHS[algorithm]:
            return "invalid checksum digest length"
        if encoded != encoded.lower():  # go-digest algorithm.go: ^[a-f0-9]{64}$, "Note that /A-F/ disallowed"
            return "invalid checksum digest format"
    return ""


def image_domain(ref: str) -> tuple[str, str]:
    """(domain, path) as docker splits a name (reference.go / normalize.go splitDockerDomain): the first component is
    a registry when it holds a '.' or a ':' or is localhost; else the name is Docker Hub's."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[:len(name) - len(last[-1])] + last[-1].split(":", 1)[0]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return "", name


def doubled_registry(ref: str) -> str:
    """The registry an image names twice (a mirror prefix put in front of a reference that already holds it:
    registry.local/registry.local/lmsysorg/sglang, or with the mirror's path registry.local/hub/registry.local/hub/...),
    or ''. Another registry's name after the mirror is a pull-through mirror's own layout (mirror/ghcr.io/...)."""
    domain, path = image_domain(ref)
    if domain and {domain, domain.split(":", 1)[0]} & set(path.split("/")[:-1]):
        return domain
    return ""


# --- URLs ---------------------------------------------------------------------------------------------------------
def without_scheme(value: str) -> bool:
    """Whether a value meant as an http(s) URL lacks its scheme (hf-mirror.internal, pypi.internal/simple)."""
    text = value.strip()
    return bool(text) and "://" not in text and not text.startswith(("/", "$", "<"))


# --- environment names and values -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def sglang_env(release: str) -> dict[str, Any]:
    """SGLang <release>'s environment table (data/sglang/env-<release>.yml); {} for a release without one."""
    path = DATA / "sglang" / f"env-{release}.yml"
    if not release or not path.is_file():
        return {}
    doc = yaml_read.safe_load(path.read_text(encoding="utf-8")) or {}
    out: dict[str, Any] = {k: frozenset(str(n) for n in doc.get(k) or []) for k in (
        "booleans", "integers", "floats", "legacy_booleans", "legacy_integers", "names")}
    out["readers"] = {r: {str(b).lower(): frozenset(str(w) for w in words) for b, words in sides.items()}
                      for r, sides in (doc.get("readers") or {}).items()}
    out["deprecated"] = {str(k): str(v) for k, v in (doc.get("deprecated") or {}).items()}
    return out


@functools.lru_cache(maxsize=1)
def _every_release_names() -> frozenset[str]:
    """The SGLANG_ names of every release with a table (data/sglang/env-*.yml)."""
    out: set[str] = set()
    for path in sorted((DATA / "sglang").glob("env-*.yml")):
        out |= sglang_env(path.stem[len("env-"):]).get("names") or frozenset()
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def env_data() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "env.yml").read_text(encoding="utf-8")) or {}


@functools.lru_cache(maxsize=1)
def nccl_names() -> frozenset[str]:
    doc = yaml_read.safe_load((DATA / "env-nccl.yml").read_text(encoding="utf-8")) or {}
    return frozenset(str(n) for n in doc.get("names") or [])


@functools.lru_cache(maxsize=1)
def runtime_names() -> dict[str, frozenset[str]]:
    """Names other readers take (data/env.yml known: CUDA, ROCm, Hugging Face, PyTorch...), by their prefix."""
    known = env_data().get("known") or {}
    out: dict[str, set[str]] = {}
    for entry in known.values():
        for name in entry.get("names") or []:
            out.setdefault(str(name).split("_", 1)[0] + "_", set()).add(str(name))
    return {prefix: frozenset(names) for prefix, names in out.items()}


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance with transpositions (optimal string alignment), or limit + 1 once it exceeds limit."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def closest(name: str, known: Iterable[str], limit: Optional[int] = None) -> str:
    """The known name a misspelt one was meant as: within `limit` edits (default 2, 1 for names under 12
    characters), the nearest, '' when none is that close or the name is known."""
    if name in known:
        return ""
    if limit is None:
        limit = 1 if len(name) < 12 else 2
    best, best_distance = "", limit + 1
    for candidate in sorted(known):
        distance = edit_distance(name, candidate, limit)
        if distance < best_distance:
            best, best_distance = candidate, distance
    return best


@functools.lru_cache(maxsize=4096)
def meant_name(name: str, release: str) -> tuple[str, str]:
    """(the name a misspelt variable was meant as, the reader that knows it), ('', '') when it is no typo."""
    if name.startswith(("SGLANG_", "SGL_")):
        table = sglang_env(release)
        names = table.get("names") or frozenset()
        if not names or name in names or name in _every_release_names():
            return "", ""  # another release's variable is no typo (that this one ignores it is another matter)
        return closest(name, names), f"SGLang {release}"
    if name.startswith("NCCL_") or name.startswith("RCCL_"):
        if name in nccl_names() or name.startswith("RCCL_"):
            return "", ""
        return closest(name, nccl_names()), "NCCL"
    for prefix, names in runtime_names().items():
        if name.startswith(prefix) and name not in names:
            found = closest(name, names, 1)
            if found:
                return found, _reader_of(found)
    return "", ""


def _reader_of(name: str) -> str:
    for reader, entry in (env_data().get("known") or {}).items():
        if name in (entry.get("names") or []):
            return str(entry.get("reader") or reader)
    return ""


TRUE_WORDS = ("true", "1", "yes", "y", "on")
FALSE_WORDS = ("false", "0", "no", "n", "off")


def boolean_readings(name: str, value: str, release: str) -> list[str]:
    """How each of SGLang <release>'s readers of a boolean variable reads a value, where a reader's reading is not
    what the word means: 'EnvBool: invalid (keeps the default)', 'get_bool_env_var: false'. Empty: every reader
    reads what the word says (a word that is neither true nor false to anyone is judged by the readers alone)."""
    table = sglang_env(release)
    if not table:
        return []
    word = value.strip().lower()
    meaning = True if word in TRUE_WORDS else False if word in FALSE_WORDS else None
    out = []
    readers = table.get("readers") or {}
    if name in table["booleans"] and "EnvBool" in readers:
        sides = readers["EnvBool"]
        read = True if word in sides.get("true", ()) else False if word in sides.get("false", ()) else None
        if read is None:
            out.append("EnvBool reads it as no boolean and keeps the variable's default")
        elif meaning is not None and read != meaning:
            out.append(f"EnvBool reads it as {str(read).lower()}")
    if name in table["legacy_booleans"] and "get_bool_env_var" in readers:
        read = word in readers["get_bool_env_var"].get("true", ())
        if meaning is None or read != meaning:
            out.append(f"get_bool_env_var reads it as {str(read).lower()}")
    return out


def boolean_words(release: str, name: str) -> str:
    """The words every reader of a boolean variable reads alike, for a message: 'true/1 or false/0'."""
    table = sglang_env(release)
    readers = table.get("readers") or {}
    sides = [readers[r] for r, names in (("EnvBool", table.get("booleans")), ("get_bool_env_var",
                                                                              table.get("legacy_booleans")))
             if r in readers and names and name in names]
    if not sides:
        return "true or false"
    true = [w for w in TRUE_WORDS if all(w in s.get("true", ()) for s in sides)]
    false = [w for w in FALSE_WORDS if all(w in s.get("false", ()) for s in sides)]
    return f"{'/'.join(true)} or {'/'.join(false)}"


# --- images and GPUs, backends and vendors ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def vendors() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "sglang" / "vendors.yml").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def rocm_support() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "amd" / "releases.yml").read_text(encoding="utf-8"))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def image_build(image: str, vendor: str) -> str:
    """The CUDA or ROCm release an image's tag names (lmsysorg/sglang:v0.5.23-cu129: '12.9'; ...-rocm720-...: '7.2'),
    '' when the tag names none."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    rule = (vendors().get(vendor) or {}).get("image_build") or {}
    found = re.search(str(rule.get("tag") or "(?!)"), tag)
    if not found:
        return ""
    return f"{int(found.group(1))}.{int(found.group(2))}"


def build_lacks(image: str, vendor: str, gpu: Optional[str], platform: dict[str, Any]) -> str:
    """Why an image's CUDA or ROCm build cannot drive the node's GPU ('' when it can, or nothing tells): NVIDIA, the
    first CUDA release that builds for the GPU's compute capability (vendors.yml cuda_for_arch); AMD, the image's ROCm
    series when its support table leaves the GPU out (data/amd/releases.yml support)."""
    built = image_build(image, vendor)
    if not built:
        return ""
    if vendor == "nvidia":
        capability = str(platform.get("compute_capability") or "")
        first = ((vendors().get("nvidia") or {}).get("cuda_for_arch") or {}).get(capability)
        if first and _version(built) < _version(str(first)):
            return (f"CUDA {built}, which builds no code for compute capability {capability} (sm_"
                    f"{capability.replace('.', '')}; SGLang's images carry it from their CUDA {first} build)")
        return ""
    support = rocm_support().get("support") or {}
    series = sorted(support, key=_version)
    # the image's own series: the newest of the table at or before its build; a build older than the table is judged
    # by the table's oldest series (a GPU that series leaves out came later)
    own = ([x for x in series if _version(x) <= _version(built)] or series[:1])[-1:]
    rows = support.get(own[0]) if own else None
    if rows and gpu in rows and not rows[gpu]:
        return f"ROCm {built}, a series whose GPU support leaves {gpu} out (ROCm {own[0]} lists no OS for it)"
    return ""


# --- the checks: a node's environment, URLs and images, each in its reader's grammar ------------------------------

#: environment variables whose reader takes an integer: NCCL's, Gloo's and Mooncake's (NCCL parses its parameters with
#: strtoll, so 'True' is 0)
_INTEGER_ENV = re.compile(r"^(NCCL_|GLOO_|MC_|NVSHMEM_|CUDA_|HIP_|HSA_|RCCL_)")
_NUMBER = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)(e-?[0-9]+)?")


def check_env(node: Node) -> Iterable[Problem]:
    """Every variable of a server's environment by its name and value as its reader takes them."""
    for svc in node.services:
        release = svc.release if svc.kind == "server" else ""
        for key, value in sorted(svc.env.items()):
            source = svc.env_sources.get(key, "its environment")
            meant, reader = meant_name(key, release) if svc.kind == "server" else ("", "")
            if meant:
                yield node.host, (f"{svc.name}: {key} in {source} is no variable {reader} reads; did you mean "
                                  f"{meant}? (sglang_env)")
                continue
            yield from _env_value(node.host, svc, key, value, source)


def _env_value(host: str, svc: Service, key: str, value: str, source: str) -> Iterable[Problem]:
    word = value.strip().strip("'\"").lower()
    unit = svc.name
    if _INTEGER_ENV.match(key) and word in ("true", "false", "yes", "no", "on", "off"):
        want = "1" if word in ("true", "yes", "on") else "0"
        yield host, (f"{unit}: {key}={value} in {source}; {key.split('_')[0]} reads its variables as integers, so "
                     f"{value!r} is 0 (off). Write {want} (a YAML boolean in sglang_env renders as True/False)")
        return
    nccl = env_data().get("nccl") or {}
    if key in (nccl.get("integers") or []) and not _NUMBER.fullmatch(word):
        yield host, (f"{unit}: {key}={value} in {source}; NCCL reads {key} as an integer (strtoll), so {value!r} is "
                     "read as 0, silently. Write a number (NCCL's environment reference)")
    choices = (nccl.get("choices") or {}).get(key)
    if choices and word.upper() not in choices:
        yield host, (f"{unit}: {key}={value} in {source}; NCCL knows {', '.join(choices)} for it and ignores "
                     "anything else")
    if key in (env_data().get("urls") or []) and without_scheme(value):
        yield host, (f"{unit}: {key}={value} in {source} has no scheme; {_reader_of(key) or 'its reader'} requests it "
                     "as a URL, and requests refuses one without (\"No scheme supplied\"). Write "
                     f"https://{value.strip()} (sglang_env)")
    if svc.kind == "server" and key.startswith(("SGLANG_", "SGL_")):
        yield from _sglang_value(host, svc, key, value, word, source)


def _sglang_value(host: str, svc: Service, key: str, value: str, word: str, source: str) -> Iterable[Problem]:
    """A SGLang variable's value as each of the release's readers reads it (data/sglang/env-<release>.yml)."""
    table, release = sglang_env(svc.release), svc.release
    if not table:
        return
    readings = boolean_readings(key, value, release)
    if readings:
        yield host, (f"{svc.name}: {key}={value} in {source}; SGLang {release} reads it as a boolean, and "
                     f"{'; '.join(readings)}. Write {boolean_words(release, key)}")
    elif key in table["integers"] and not _NUMBER.fullmatch(word):
        yield host, (f"{svc.name}: {key}={value} in {source}; SGLang {release} reads {key} as an integer (EnvInt), "
                     "finds none and keeps the variable's default, with a warning. Write a number")
    elif key in table["floats"] and not _FLOAT.fullmatch(word):
        yield host, (f"{svc.name}: {key}={value} in {source}; SGLang {release} reads {key} as a number (EnvFloat), "
                     "finds none and keeps the variable's default, with a warning. Write a number")
    renamed = table["deprecated"].get(key)
    if renamed and renamed in svc.env:
        yield host, (f"{svc.name}: {key} in {source} is the older name of {renamed}, which is set as well: SGLang "
                     f"{release} reads {renamed} and ignores {key}. Keep one (sglang_env)")


def check_urls(node: Node) -> Iterable[Problem]:
    """URLs the node's readers take as given: pip's and uv's index lines (a requirements file: --index-url,
    --extra-index-url, --find-links take a URL or a local path), the weights stage's Hub endpoint."""
    for path, text in sorted(node.files.items()):
        if not path.endswith("/.metalserve-requirements"):
            continue
        for line in text.splitlines():
            words = line.split()
            if len(words) == 2 and words[0] in ("--index-url", "--extra-index-url") and without_scheme(words[1]):
                variable = ("sglang_install_index_url" if words[0] == "--index-url"
                            else "sglang_install_extra_index_urls")
                yield node.host, (f"{path}: {words[0]} {words[1]} has no scheme; pip and uv take an index as a URL "
                                  f"(https://...) and cannot read this one. Write https://{words[1]} ({variable})")
    endpoint = str((node.views.get("weights") or {}).get("hf_endpoint") or "")
    if endpoint and without_scheme(endpoint):
        yield node.host, (f"the weights stage fetches from {endpoint}, which has no scheme; huggingface_hub joins "
                          "HF_ENDPOINT with the API's path and requests refuses a URL without one (\"No scheme "
                          f"supplied\"). Write https://{endpoint} (model_weights_hf_endpoint)")


def _image_variable(svc: Optional[Service]) -> str:
    if svc is None:
        return "the unit's image"
    return "sglang_image (with sglang_install_registry_mirror in front)"


def check_images(node: Node) -> Iterable[Problem]:
    """Every image a unit of the node runs, as docker parses a reference (distribution/reference), once its registry
    mirror is in front; and, for a server, whether its CUDA or ROCm build carries the node's GPU."""
    services = {svc.unit: svc for svc in node.services}
    for path, text in sorted(node.files.items()):
        if not path.endswith(".service"):
            continue
        svc = services.get(path)
        image = svc.docker.image if svc is not None and svc.docker else _unit_image(text)
        if not image:
            continue
        unit = path.rsplit("/", 1)[-1]
        problem = _image_problem(image)
        if problem:
            yield node.host, (f"{unit} runs image {image}, which docker refuses ({problem}: Docker's reference "
                              f"grammar, [registry[:port]/]name[:tag][@digest], lower-case name); fix "
                              f"{_image_variable(svc)}")
            continue
        doubled = doubled_registry(image)
        if doubled:
            fix = ("Give sglang_image without the mirror (sglang_install_registry_mirror adds it), or drop the mirror"
                   if svc is not None else "Name the registry once in the variable that sets the unit's image")
            yield node.host, (f"{unit} runs image {image}: the registry {doubled} is named twice, a mirror prefix put "
                              f"in front of a reference that already holds it. {fix}")
        if svc is not None and svc.kind == "server" and node.vendor and node.gpu:
            lacks = build_lacks(image, node.vendor, node.gpu, node.platform)
            if lacks:
                yield node.host, (f"{unit} runs {image}, built with {lacks}; the node's {node.gpu} GPUs cannot run "
                                  "its kernels. Use the cookbook's image for the GPU (unset sglang_image) or a tag "
                                  "built for it")


@functools.lru_cache(maxsize=4096)
def _unit_image(text: str) -> str:
    starts = [v for s, k, v in unit_entries(text) if s == "Service" and k == "ExecStart" and v]
    docker = docker_run(exec_argv(starts[-1])) if starts else None
    return docker.image if docker is not None else ""
