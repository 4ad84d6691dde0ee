"""One owner per fact.

Whole values read off the outputs: every path, unit, package, URL or image a planned site holds (the docker and the uv
site of test_option_effects: servers, multi-node, PD, GB300 with IMEX, MI355X, a router and a monitoring host), and
every such value in data/. A role's tasks, vars, handlers and templates must take them from the plan (metalserve_site)
instead of writing them again; its defaults must not copy a value data/ owns.

Node constants in every literal: a path under a folder the system or a package decides (/etc, /usr, /var, /opt, /run,
/srv, /boot, /proc, /sys), a systemd unit name, or any other name data/node.yml holds (the Hub's address) has one
home, data/ (data/node.yml for the node's own and ours, the vendors' files beside their sources), or, for a path an
operator may change, the role default of that variable. Spelling one anywhere else fails: Python under plugins/ and
tools/ (every string literal, the text of rendered files and the parts of f-strings included; not docstrings, not
module documentation), the playbooks and their tasks and vars, and the roles' tasks, vars, handlers and templates
(values; not task names, comments or messages). Two homes holding one value fail too, and so does a role default
under another role default's folder (derive it in the plan). Ports go by their names: a number of
data/sglang/ports.yml written anywhere else fails.

What is not scanned, and why: the site checker (plugins/plugin_utils/checks/site.py) reads the rendered files on its own
so that it can disagree with the planner, and spells what it must; the programs the roles copy to the nodes
(roles/*/files, playbooks/files) read the kernel where they run and never see data/; device nodes (/dev) are the
kernel's names for the hardware, listed per container as the vendors' documentation gives them. A line that must spell a
constant says why with a `one-owner: <why>` comment, on the line or in the comment block right above it: the node-side
modules (they run where data/ is not), and prose that names a system file as advice.
"""
from __future__ import annotations

import ast
import copy
import functools
import re
from pathlib import Path
from typing import Any, Iterator

import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site

from ansible_collections.metalserve.sglang.tests.unit import test_option_effects as sites

ROOT = Path(__file__).resolve().parents[2]
#: a fact worth owning: a path, unit, package, URL or image (no spaces; a dot or a slash; long enough to be one)
FACT = re.compile(r"^[^\s]{10,}$")


def leaves(doc: Any) -> Iterator[str]:
    if isinstance(doc, dict):
        for value in doc.values():
            yield from leaves(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from leaves(value)
    elif isinstance(doc, str) and FACT.match(doc) and re.search(r"[/.]", doc):
        yield doc


@functools.lru_cache(maxsize=1)
def data_facts() -> frozenset[str]:
    out: set[str] = set()
    for path in sorted((ROOT / "data").rglob("*.yml")):
        if not path.name.startswith("flags-"):  # SGLang's flag tables: names, not facts a role could repeat
            out.update(leaves(yaml.safe_load(path.read_text())))
    return frozenset(out)


@functools.lru_cache(maxsize=1)
def plan_facts() -> frozenset[str]:
    out: set[str] = set(data_facts())
    for method in ("docker", "uv"):
        site = plan_site(sites.hostvars(method), copy.deepcopy(sites.GROUPS))
        assert not site["errors"], site["errors"]
        for plan in site["plans"].values():
            out.update(leaves({k: v for k, v in plan.items() if k != "inputs"}))
        out.update(leaves(site["monitoring"]))
    return frozenset(out)


def code_lines(path: Path) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split(" #", 1)[0]
        if code.strip().startswith("#") or re.match(r"^\s*- name: ", code):
            continue
        yield number, code


def repeats(path: Path, facts: frozenset[str], root: Path = ROOT) -> list[str]:
    found = []
    for number, code in code_lines(path):
        for fact in facts:
            if re.search(rf"(?<![\w/.-]){re.escape(fact)}(?![\w/.-])", code):
                found.append(f"{path.relative_to(root)}:{number}: {fact}")
    return found


def role_files(kinds: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in (ROOT / "roles").glob("*/*/*") if p.is_file() and p.parts[-2] in kinds
                  and p.suffix in (".yml", ".j2"))


def test_role_tasks_take_the_plans_facts_from_the_plan() -> None:
    found = [line for path in role_files(("tasks", "vars", "handlers", "templates")) for line in repeats(path, plan_facts())]
    assert not found, "role YAML repeats a fact the plan owns (read it from metalserve_site):\n" + "\n".join(found)


def test_role_defaults_do_not_copy_what_data_owns() -> None:
    found = [line for path in role_files(("defaults",)) for line in repeats(path, data_facts())]
    assert not found, "a role default copies a value data/ owns (leave it empty and let the plan fill it):\n" + \
        "\n".join(found)


def test_the_check_finds_a_repeated_fact(tmp_path: Path) -> None:
    """The check itself: a task that writes one of the plan's paths literally is found, the same task reading it from
    the plan is not, and a task name mentioning it is prose."""
    fact = sorted(f for f in plan_facts() if f.startswith("/etc/"))[0]
    task = tmp_path / "main.yml"
    task.write_text(f"---\n- name: Write {fact}\n  ansible.builtin.copy:\n    dest: {fact}\n    content: x\n")
    assert repeats(task, plan_facts(), tmp_path) == [f"main.yml:4: {fact}"]
    task.write_text("---\n- name: Write it\n  ansible.builtin.copy:\n    dest: \"{{ _x.files.y.path }}\"\n")
    assert repeats(task, plan_facts(), tmp_path) == []


# --- node constants: one home ------------------------------------------------------------------------------------

#: a path under a folder the system or a package decides; a unit name (a glob with a fixed part counts); and every
#: other name of data/node.yml (the Hub's URL, a transient unit's name) through node_values()
NODE_PATH = re.compile(r"^/(etc|usr|var|opt|run|srv|boot|proc|sys)(/[\w.@+%*-]*)*$")
UNIT = re.compile(r"^[\w@.-]*\w[\w@.*-]*\.(service|socket|timer|target|mount|slice)$")
_WORDS = re.compile(r"[\s\"'`=,;()\[\]<>|{}]+")
PRAGMA = "one-owner:"
#: YAML keys whose values are prose (a task's name is prose too)
PROSE_KEYS = {"description", "short_description", "msg", "fail_msg", "success_msg", "warning_text", "why"}
#: data/ files that are not homes: citations (sources.yml), SGLang's own tables, the models' data
NOT_HOMES = re.compile(r"(^|/)(sources\.yml|flags-[^/]*|env-[^/]*)$|^data/models/")
#: plugins/ files not scanned, each with its reason
_CHECKER = "the site checker reads the rendered files on its own, so that it can disagree with the planner"
NOT_SCANNED = {f"plugins/plugin_utils/checks/{name}.py": _CHECKER
               for name in ("site", "readers", "views", "grammar", "routing")}


@functools.lru_cache(maxsize=1)
def node_values() -> frozenset[str]:
    """data/node.yml's own names that no pattern above catches (a transient unit's name, a table's)."""
    doc = yaml.safe_load((ROOT / "data" / "node.yml").read_text())
    return frozenset(v for _k, v in _values(doc) if isinstance(v, str) and len(v) >= 10 and v[0] not in ".{/")


def constants(text: str) -> Iterator[str]:
    """The node constants a literal names."""
    for word in _WORDS.split(text):
        word = word.rstrip(".,:;")
        if word in node_values():
            yield word
            continue
        for part in word.split(":") if word.startswith("/") else [word]:
            if NODE_PATH.match(part.rstrip(".,")) or UNIT.match(part):
                yield part.rstrip(".,")


def excused(lines: list[str], number: int) -> bool:
    """A `one-owner:` comment on the line, or in the comment block right above it."""
    if PRAGMA in lines[number - 1]:
        return True
    above = number - 2
    while above >= 0 and lines[above].strip().startswith("#"):
        if PRAGMA in lines[above]:
            return True
        above -= 1
    return False


@functools.lru_cache(maxsize=1)
def port_numbers() -> frozenset[int]:
    """The ports of data/sglang/ports.yml (offsets, counts and steps below 1024 are not ports)."""
    doc = yaml.safe_load((ROOT / "data" / "sglang" / "ports.yml").read_text())
    return frozenset(v for v in doc.values() if isinstance(v, int) and v >= 1024)


def is_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in port_numbers()


def _documentation(tree: ast.AST) -> set[int]:
    """ids of the nodes that are documentation: docstrings, and a module's DOCUMENTATION, EXAMPLES and RETURN."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ("DOCUMENTATION", "EXAMPLES", "RETURN")
                                                for t in node.targets):
            skip.update(id(n) for n in ast.walk(node.value))
    return skip


def scan_python(text: str, where: str) -> list[str]:
    """Node constants and port numbers in a Python file's literals, outside its documentation and excused lines."""
    tree = ast.parse(text)
    lines, skip, found = text.splitlines(), _documentation(tree), []
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, ast.Constant):
            continue
        hits = list(constants(node.value)) if isinstance(node.value, str) else \
            [str(node.value)] if is_port(node.value) else []
        if hits and not excused(lines, node.lineno):
            found += [(node.lineno, f"{where}:{node.lineno}: {hit}") for hit in hits]
    return [line for _n, line in sorted(found)]


def _values(doc: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(key, scalar) of a YAML document, leaving out prose and the names of tasks and plays."""
    if isinstance(doc, dict):
        task = any("." in str(k) or k in ("block", "hosts", "include_tasks", "import_tasks") for k in doc)
        for k, v in doc.items():
            if k in PROSE_KEYS or (k == "name" and task):
                continue
            yield from _values(v, f"{key}.{k}")
    elif isinstance(doc, list):
        for v in doc:
            yield from _values(v, key)
    else:
        yield key, doc


_PROSE_LINE = re.compile(r"^\s*(- name|" + "|".join(PROSE_KEYS) + r"):")


def _line_of(lines: list[str], hit: str) -> int:
    """The first line that holds `hit` as a value (not a task's name, a message or a comment)."""
    return next((i for i, line in enumerate(lines, 1) if hit in line.split(" #", 1)[0]
                 and not _PROSE_LINE.match(line)), 1)


def scan_yaml(text: str, where: str) -> list[str]:
    """Node constants in a YAML file's values (ports: a number of ports.yml under a key that names a port)."""
    lines, found = text.splitlines(), []
    for key, value in _values(yaml.safe_load(text)):
        hits = list(constants(value)) if isinstance(value, str) else \
            [str(value)] if is_port(value) and "port" in key else []
        for hit in hits:
            number = _line_of(lines, hit)
            if not excused(lines, number):
                found.append(f"{where}:{number}: {hit}")
    return found


def scan_template(text: str, where: str) -> list[str]:
    lines = text.splitlines()
    return [f"{where}:{n}: {hit}" for n, line in enumerate(lines, 1) for hit in constants(line)
            if not excused(lines, n)]


def code_files(root: Path) -> list[Path]:
    """Everything scanned: controller Python, playbooks, and the roles' tasks, vars, handlers and templates."""
    python = [p for p in [*root.glob("plugins/**/*.py"), *root.glob("tools/**/*.py")]
              if str(p.relative_to(root)) not in NOT_SCANNED]
    yml = [*root.glob("playbooks/**/*.yml"),
           *[p for p in root.glob("roles/*/*/*.yml") if p.parent.name in ("tasks", "vars", "handlers")]]
    return sorted(python + yml + [*root.glob("roles/*/templates/**/*.j2"), *root.glob("playbooks/templates/**/*.j2")])


def scan(path: Path, where: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    kind = path.name.removesuffix(".txt")
    if kind.endswith(".py"):
        return scan_python(text, where)
    if kind.endswith(".j2"):
        return scan_template(text, where)
    return scan_yaml(text, where)


def homes(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("data/**/*.yml") if not NOT_HOMES.search(str(p.relative_to(root))))


def node_folders(root: Path) -> dict[str, str]:
    """data/node.yml's folders, each with the folders it names filled in."""
    path = root / "data" / "node.yml"
    folders = dict(yaml.safe_load(path.read_text())["folders"]) if path.exists() else {}
    for _depth in range(len(folders)):
        folders = {k: re.sub(r"\{(\w+)\}", lambda m: folders.get(m.group(1), m.group(0)), v) for k, v in folders.items()}
    return folders


def home_owners(root: Path, expand: bool = True) -> dict[str, set[str]]:
    """Every node constant of the homes, and the homes that write it (data files, and each role default); a {folder}
    of data/node.yml counts as the path it names (expand), or as not written there (a value composed with it)."""
    owners: dict[str, set[str]] = {}
    folders = node_folders(root) if expand else {}
    for path in homes(root):
        text = re.sub(r"\{(\w+)\}", lambda m: folders.get(m.group(1), m.group(0)), path.read_text(encoding="utf-8"))
        for _key, value in _values(yaml.safe_load(text)):
            for hit in constants(value) if isinstance(value, str) else ():
                owners.setdefault(hit, set()).add(str(path.relative_to(root)))
    for path in sorted(root.glob("roles/*/defaults/main.yml")):
        for name, value in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            for hit in constants(value) if isinstance(value, str) else ():
                owners.setdefault(hit, set()).add(f"{path.relative_to(root)} ({name})")
    return owners


def home_folders(root: Path, owners: dict[str, set[str]]) -> dict[str, set[str]]:
    """The folders a home names: data/node.yml's, and the paths of the roles' defaults (an operator's choice)."""
    out = {v: {"data/node.yml"} for v in node_folders(root).values()}
    out.update({hit: where for hit, where in owners.items() if hit.startswith("/") and any("defaults" in w for w in where)})
    return out


def second_homes(owners: dict[str, set[str]], folders: dict[str, set[str]],
                 written: dict[str, set[str]] | None = None) -> list[str]:
    """A constant two homes write, and one written under another home's folder (it must name or derive from that one;
    `written`: the homes' values as written, a {folder} not filled in)."""
    found = [f"{hit}: {', '.join(sorted(where))}" for hit, where in sorted(owners.items()) if len(where) > 1]
    for hit, where in sorted(o for o in (written or owners).items() if o[0].startswith("/")):
        for folder, theirs in folders.items():
            if hit.startswith(folder + "/") and not where & theirs:
                found.append(f"{hit} ({', '.join(sorted(where))}) lies in {folder} ({', '.join(sorted(theirs))})")
    return found


def test_node_constants_are_written_only_in_their_home() -> None:
    found = [line for path in code_files(ROOT) for line in scan(path, str(path.relative_to(ROOT)))]
    assert not found, ("a node path, unit, URL or port written outside its home (data/node.yml and the vendors' data "
                       "files; read it with the lookup metalserve.sglang.node, plugin_utils/node.py, or from the "
                       "plan):\n" + "\n".join(found))


def test_no_constant_has_two_homes() -> None:
    owners = home_owners(ROOT)
    found = second_homes(owners, home_folders(ROOT, owners), home_owners(ROOT, expand=False))
    assert not found, "a node constant with two homes:\n" + "\n".join(found)


def test_node_yml_names_its_folders() -> None:
    """data/node.yml itself: a value under one of its folders names the folder ({name}) instead of spelling it."""
    doc = yaml.safe_load((ROOT / "data" / "node.yml").read_text())
    folders = {f: v for f, v in doc["folders"].items() if not v.startswith("{")}
    found = [f"{key}: {value} (under {{{name}}})" for key, value in _values(doc) for name, folder in folders.items()
             if isinstance(value, str) and value.startswith(folder + "/")]
    assert not found, "\n".join(found)


# --- the check itself --------------------------------------------------------------------------------------------

MAIN = ROOT / "tests" / "fixtures" / "one_owner" / "2a35766"


def test_the_scan_finds_what_the_tree_before_issue_35_spelled() -> None:
    """The branch point of issue 35 (copies in tests/fixtures/one_owner/2a35766): the check fails there, naming the
    constants the review found written twice."""
    found = {}
    for path in sorted(MAIN.rglob("*.txt")):
        rel = str(path.relative_to(MAIN)).removesuffix(".txt")
        found[rel] = scan(path, rel)
    units, stages = " ".join(found["plugins/plugin_utils/site/units.py"]), " ".join(found["plugins/plugin_utils/site/stages.py"])
    for constant in ("/usr/bin/docker", "/etc/systemd/system", "network-online.target", "multi-user.target",
                     "/run/secrets/hf_token"):
        assert constant in units, constant
    for constant in ("/etc/sglang/rsyncd-weights.conf", "nvidia-persistenced.service", "/usr/bin/rsync",
                     "https://huggingface.co", "/etc/systemd/system/docker.service.d/metalserve-memlock.conf"):
        assert constant in stages, constant
    monitoring = " ".join(found["roles/monitoring/vars/main.yml"])
    for constant in ("prometheus-node-exporter.service", "nvidia-dcgm-exporter.service", "/usr/bin/promtool",
                     "/etc/systemd/system/nvidia-dcgm-exporter.service.d", "/usr/bin/docker"):
        assert constant in monitoring, constant
    upgrade = " ".join(found["playbooks/upgrade.yml"])
    assert "/etc/systemd/system" in upgrade and "sglang-*.service" in upgrade
    assert any(line.endswith(": 8000") for line in found["data/variables.yml"]) \
        and any(line.endswith(": 29000") for line in found["data/variables.yml"])
    # the defaults of that tree: the token file lay in sglang_server's config folder, spelled again
    before = {}
    for path in sorted(MAIN.glob("roles/*/defaults/main.yml.txt")):
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            for hit in constants(value) if isinstance(value, str) else ():
                before.setdefault(hit, set()).add(f"{path.parent.parent.name} ({name})")
    assert "/etc/sglang/hf_token (model_weights (model_weights_token_file)) lies in /etc/sglang (sglang_server " \
           "(sglang_server_config_dir))" in second_homes(before, {k: v for k, v in before.items() if k.startswith("/")})


def test_the_scan_reads_literals_not_prose(tmp_path: Path) -> None:
    """What counts: a literal in code and the text of a rendered file; what does not: docstrings, documentation,
    messages and names, a `one-owner:` line, a port-sized number that is not a port."""
    python = ('"""Writes /etc/x.conf."""\nDOCUMENTATION = "path: /etc/y"\nA = "/usr/bin/docker"\n'
              'B = f"ExecStart=/usr/sbin/nft -f {A}"\n# one-owner: advice\nC = "/etc/hosts"\nD = 8000\nE = 8001\n')
    assert scan_python(python, "x.py") == ["x.py:3: /usr/bin/docker", "x.py:4: /usr/sbin/nft", "x.py:7: 8000"]
    task = ("---\n- name: Restart prometheus.service\n  ansible.builtin.systemd_service:\n    name: prometheus.service\n"
            "  vars:\n    x_port: 29000\n    x_memory: 8000\n- name: Say\n  ansible.builtin.fail:\n"
            "    msg: see /etc/systemd/system\n")
    assert scan_yaml(task, "t.yml") == ["t.yml:4: prometheus.service", "t.yml:6: 29000"]
    owners = {"/etc/a": {"data/node.yml"}, "/etc/a/b": {"roles/r/defaults/main.yml (r_b)"}, "x.service": {"d1", "d2"}}
    assert second_homes(owners, {"/etc/a": owners["/etc/a"], "/etc/a/b": owners["/etc/a/b"]}) == [
        "x.service: d1, d2", "/etc/a/b (roles/r/defaults/main.yml (r_b)) lies in /etc/a (data/node.yml)"]
