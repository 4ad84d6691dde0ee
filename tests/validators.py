"""Each component's own validator over many rendered sites (issue 40): what the tests feed them and how they run.

Sites: every inventory under inventories/ (read by Ansible's own inventory loader, with the variables' sources as the
plan actions read them), the lab's shapes (tests/lab/lab.py), the option-effect sites of docker and uv installs
(tests/unit/test_option_effects.py) and seeded generated sites (tests/unit/site_generator.py). Each is planned and
rendered as render.yml does (plan_site + render_all); the validators then read the files a node gets:

    systemd-analyze verify   every unit and drop-in, in one call, under --root of a tree that holds systemd's own
                             units (the machine's systemd package) and what the nodes' packages install
    nft -c -f                every nftables file, in an unprivileged user and network namespace (unshare -rn)
    promtool check           the site's prometheus.yml and alert rules
    SGLang's parser          every server argv (tests/slow, with the cached parser venvs)
    sglang-router's parser   every router argv (tests/slow)
    Docker's reference       every image, by the Docker daemon's own parser (tests/integration, under the lock)

Files with the same text are validated once (a rack of identical nodes is one file to systemd). Mutated sites plant
one mistake of a validator's own domain in one host: the site checker's verdict on that host (plan_site's errors) and
the validator's verdict on that host's files must agree, in either direction.
"""
from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import yaml

ROOT = Path(__file__).resolve().parents[1]

Site = tuple[dict[str, dict[str, Any]], dict[str, list[str]], Optional[dict[str, dict[str, list[str]]]]]


# --- the sites ------------------------------------------------------------------------------------------------------

def inventory_site(path: Path) -> Site:
    """An inventory as Ansible reads it: its loader, group_vars/host_vars layering, templating; and who set what."""
    from ansible.inventory.manager import InventoryManager  # noqa: PLC0415
    from ansible.parsing.dataloader import DataLoader  # noqa: PLC0415
    from ansible.template import Templar  # noqa: PLC0415
    from ansible.vars.hostvars import HostVars  # noqa: PLC0415
    from ansible.vars.manager import VariableManager  # noqa: PLC0415

    from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import inventory_vars  # noqa: PLC0415

    loader = DataLoader()
    inv = InventoryManager(loader=loader, sources=[str(path)])
    manager = VariableManager(loader=loader, inventory=inv)
    hostvars = {}
    for host in inv.get_hosts():
        variables = manager.get_vars(host=host, include_hostvars=False)
        templar = Templar(loader=loader, variables=variables)
        wanted = {k: v for k, v in variables.items()
                  if str(k).startswith(inventory_vars.PREFIXES) or k in inventory_vars.READ_ALSO}
        hostvars[str(host.name)] = {str(k): to_plain(templar.template(v)) for k, v in wanted.items()}
    groups = {str(name): sorted(str(h.name) for h in group.get_hosts()) for name, group in inv.groups.items()}
    origins = inventory_vars.variable_origins(HostVars(inv, manager, loader), sorted(hostvars))
    return hostvars, groups, origins


def flatten(doc: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    sys.path.insert(0, str(ROOT / "tests" / "unit"))
    from ansible_collections.metalserve.sglang.tests.unit.test_plan_speed import flatten as flat  # noqa: PLC0415
    return flat(doc)


def lab_sites() -> dict[str, Site]:
    """The lab's shapes as lab.py writes their inventories (without the lab's addresses)."""
    sys.path.insert(0, str(ROOT / "tests" / "lab"))
    import lab  # noqa: PLC0415

    out: dict[str, Site] = {}
    for shape, servers in (("pd", 2), ("plain", 3), ("full", 4)):
        names = [f"metalserve-v-node{i}" for i in range(1, servers + 1)]
        hv, groups = flatten(lab.inventory("v", names, "metalserve-v-router", shape))
        out[f"lab-{shape}"] = (hv, groups, None)
    hv, groups = flatten(lab.mixed_inventory("v", {}, None))
    out["lab-mixed"] = (hv, groups, None)
    return out


def option_sites() -> dict[str, Site]:
    from ansible_collections.metalserve.sglang.tests.unit import test_option_effects as effects  # noqa: PLC0415
    return {f"options-{m}": (effects.hostvars(m), copy.deepcopy(effects.GROUPS), None) for m in ("docker", "uv")}


def generated_sites(seeds: Iterable[int]) -> dict[str, Site]:
    from ansible_collections.metalserve.sglang.tests.unit import site_generator  # noqa: PLC0415
    return {f"generated-{s}": (*site_generator.generate(s), None) for s in seeds}


@functools.lru_cache(maxsize=1)
def every_site() -> dict[str, Site]:
    """Every site the validators read: the inventories, the lab shapes, the option sites, a few generated ones."""
    out = {f"inventory-{p.name}": inventory_site(p) for p in sorted((ROOT / "inventories").iterdir()) if p.is_dir()}
    out.update(lab_sites())
    out.update(option_sites())
    out.update(generated_sites(range(int(os.environ.get("METALSERVE_VALIDATOR_SEEDS", "6")))))
    return out


@dataclass
class Rendered:
    """One planned site and the files its hosts get (hosts refused by the site checker still have theirs)."""

    name: str
    errors: dict[str, list[str]]
    files: dict[str, tuple[str, str]]  # rendered/ path -> (text, mode)
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)

    def host_files(self, host: str) -> dict[str, str]:
        prefix = f"{host}/files/"
        return {p[len(prefix):]: t for p, (t, _m) in self.files.items() if p.startswith(prefix)}


def plan_and_render(name: str, site: Site) -> Rendered:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import render  # noqa: PLC0415
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415

    hostvars, groups, origins = site
    planned = plan_site(copy.deepcopy(hostvars), copy.deepcopy(groups), copy.deepcopy(origins))
    with_files = {h: p for h, p in planned["plans"].items() if "files" in p or p["role"] == "none"}
    files = render.render_all(with_files, name, site_monitoring=planned["monitoring"])
    return Rendered(name, planned["errors"], files, planned["plans"])


# --- systemd-analyze verify -------------------------------------------------------------------------------------------

#: what the nodes' packages put where the units run it (Debian bookworm's file lists: docker.io /usr/bin/docker and dockerd,
#: nftables /usr/sbin/nft, python3 /usr/bin/python3, prometheus-node-exporter, prometheus,
#: prometheus-blackbox-exporter; NVIDIA's datacenter-gpu-manager-exporter /usr/bin/dcgm-exporter), and what the
#: collection's roles install (the helper scripts; a uv venv's bin/ under /opt/sglang/venvs/<release>, which the
#: sglang_install role builds with uv, is added from each unit's own ExecStart)
PACKAGED = ("/usr/bin/docker", "/usr/bin/dockerd", "/usr/sbin/nft", "/usr/bin/python3", "/usr/bin/prometheus-node-exporter",
            "/usr/bin/prometheus", "/usr/bin/prometheus-blackbox-exporter", "/usr/bin/dcgm-exporter",
            "/usr/bin/nv-hostengine", "/usr/bin/nvidia-persistenced", "/usr/bin/nvidia-imex",
            "/usr/local/lib/metalserve/wait_healthy.py", "/usr/local/lib/metalserve/check_args.py")
#: the units that the drop-ins extend and the rendered units need, as their packages ship them (a minimal stand-in:
#: the drop-in is what is read), put under --root where this machine lacks them (docker.io is installed later, by
#: make lab-infra)
BASE_UNITS = {"docker.service": "[Unit]\nDescription=Docker Application Container Engine\n[Service]\n"
                                "ExecStart=/usr/bin/dockerd -H fd://\n[Install]\nWantedBy=multi-user.target\n",
              "nvidia-dcgm-exporter.service": "[Unit]\nDescription=NVIDIA DCGM exporter\n[Service]\n"
                                              "ExecStart=/usr/bin/dcgm-exporter\n[Install]\n"
                                              "WantedBy=multi-user.target\n"}
_VENV_BIN = re.compile(r"(/opt/sglang/venvs/[^/\s]+/bin/[\w.-]+|/[\w./-]+/venvs/[^/\s]+/bin/[\w.-]+)")


def systemd_units(rendered: Iterable[Rendered]) -> dict[str, list[tuple[str, str]]]:
    """{unit text: [(site, path on the node), ...]} of every unit and drop-in the sites' hosts get."""
    out: dict[str, list[tuple[str, str]]] = {}
    for r in rendered:
        for path, (text, _mode) in r.files.items():
            node = path.split("/files", 1)[-1]
            if "/files/etc/systemd/system/" in path and (node.endswith(".service") or node.endswith(".conf")):
                out.setdefault(text, []).append((r.name, path))
    return out


def systemd_verify(units: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    """systemd-analyze verify over every distinct unit text (one call); {unit text: what systemd said of it}."""
    with tempfile.TemporaryDirectory(prefix="metalserve-verify-") as tmp:
        root = Path(tmp)
        (root / "usr" / "lib" / "systemd").mkdir(parents=True)
        system = next(p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir())
        shutil.copytree(system, root / "usr" / "lib" / "systemd" / "system", symlinks=True)
        for base, text in BASE_UNITS.items():  # what the nodes' packages ship, whether or not this machine has it
            shipped = root / "usr" / "lib" / "systemd" / "system" / base
            if not os.path.lexists(shipped):
                shipped.write_text(text)
        etc = root / "etc" / "systemd" / "system"
        etc.mkdir(parents=True)
        stubs = set(PACKAGED)
        names: dict[str, str] = {}
        for i, (text, where) in enumerate(sorted(units.items(), key=lambda kv: kv[1][0])):
            node = where[0][1].split("/files", 1)[1]
            stubs.update(_VENV_BIN.findall(text))
            if node.endswith(".conf"):  # a drop-in: the unit it extends, under a name of its own
                base = node.rsplit("/", 2)[-2][: -len(".d")]
                name = f"v{i:04d}-{base}"
                (etc / name).write_text(BASE_UNITS.get(base, "[Service]\nExecStart=/usr/bin/docker\n"))
                (etc / f"{name}.d").mkdir()
                (etc / f"{name}.d" / node.rsplit("/", 1)[-1]).write_text(text)
            else:
                name = f"v{i:04d}-{node.rsplit('/', 1)[-1]}"
                (etc / name).write_text(text)
            names[name] = text
        for stub in stubs:
            target = root / stub.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("#!/bin/sh\n")
            target.chmod(0o755)
        proc = subprocess.run(["systemd-analyze", "verify", f"--root={root}", *[str(etc / n) for n in sorted(names)]],
                              capture_output=True, text=True, timeout=600, check=False)
        said: dict[str, list[str]] = {text: [] for text in units}
        for line in (proc.stdout + proc.stderr).splitlines():
            found = re.search(r"(v\d{4}-[\w@.:-]+?)(?:\.d/[\w.-]+)?(?::\d+)?:", line)
            name = found.group(1) if found else None
            if name in names:
                said[names[name]].append(line.replace(str(root), ""))
            elif line.strip():
                said.setdefault("(no unit)", []).append(line)
        return said


# --- nft -c -f ----------------------------------------------------------------------------------------------------------

def nft_files(rendered: Iterable[Rendered]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for r in rendered:
        for path, (text, _mode) in r.files.items():
            if "/files/" in path and path.endswith(".nft"):
                out.setdefault(text, []).append((r.name, path))
    return out


def nft_binary() -> str:
    return shutil.which("nft") or "/usr/sbin/nft"


def nft_check(files: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    """nft -c -f over every distinct file, in one unprivileged user and network namespace; {text: nft's refusal}."""
    with tempfile.TemporaryDirectory(prefix="metalserve-nft-") as tmp:
        paths = {}
        for i, text in enumerate(files):
            path = Path(tmp) / f"f{i:04d}.nft"
            path.write_text(text)
            paths[str(path)] = text
        script = ("for f in \"$@\"; do out=$(\"$NFT\" -c -f \"$f\" 2>&1) || { printf '%s\\t%s\\n' \"$f\" "
                  "\"$(printf '%s' \"$out\" | tr '\\n' ' ')\"; }; done")
        proc = subprocess.run(["unshare", "-rn", "sh", "-c", script, "nft-check", *paths], capture_output=True,
                              text=True, timeout=600, check=False, env={**os.environ, "NFT": nft_binary()})
        assert proc.returncode == 0, proc.stderr
        said: dict[str, list[str]] = {text: [] for text in files}
        for line in proc.stdout.splitlines():
            path, _tab, message = line.partition("\t")
            said[paths[path]].append(message)
        return said


# --- promtool ------------------------------------------------------------------------------------------------------------

def promtool_check(rendered: Iterable[Rendered]) -> dict[str, list[str]]:
    """promtool check config over every site's prometheus.yml (its rule_files pointed at the site's rules, which it
    reads too) and check rules over every site's rules: two calls for all sites; {site: what promtool refused}."""
    said: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="metalserve-promtool-") as tmp:
        configs, rules_files = {}, {}
        for i, r in enumerate(rendered):
            config = next((t for p, (t, _m) in r.files.items() if p.endswith("monitoring/prometheus.yml")), None)
            rules = next((t for p, (t, _m) in r.files.items() if p.endswith("monitoring/metalserve.rules.yml")), None)
            if config is None:
                continue
            said[r.name] = []
            rules_path = Path(tmp) / f"s{i:03d}.rules.yml"
            rules_path.write_text(rules or "groups: []\n")
            rules_files[str(rules_path)] = r.name
            doc = yaml.safe_load(config)
            doc["rule_files"] = [str(rules_path)] if doc.get("rule_files") else []
            config_path = Path(tmp) / f"s{i:03d}.prometheus.yml"
            config_path.write_text(yaml.safe_dump(doc))
            configs[str(config_path)] = r.name
        for command, files in ((["check", "config"], configs), (["check", "rules"], rules_files)):
            if not files:
                continue
            proc = subprocess.run(["promtool", *command, *files], capture_output=True, text=True, timeout=600,
                                  check=False)
            current = None
            for line in (proc.stdout + proc.stderr).splitlines():
                checking = re.match(r"Checking (\S+)", line)
                if checking:
                    current = files.get(checking.group(1), current if checking.group(1) in rules_files else None)
                    continue
                if current and ("FAILED" in line or "error" in line.lower()):
                    said[current].append(f"promtool {' '.join(command)}: {line.strip()}")
            if proc.returncode != 0 and not any(said.values()):
                said.setdefault("(promtool)", []).append((proc.stdout + proc.stderr).strip())
    return said


# --- images and command lines ----------------------------------------------------------------------------------------------

def images(rendered: Iterable[Rendered]) -> dict[str, list[tuple[str, str]]]:
    """Every image reference a node's units or views name: docker run's image, the install's pull."""
    out: dict[str, list[tuple[str, str]]] = {}
    for r in rendered:
        for host, plan in r.plans.items():
            for image in {(plan.get("install") or {}).get("image"),
                          ((plan.get("monitoring") or {}).get("gpu_exporter") or {}).get("image")} - {None}:
                out.setdefault(str(image), []).append((r.name, host))
    return out


def argvs(rendered: Iterable[Rendered], kind: str) -> dict[tuple[str, tuple[str, ...]], list[tuple[str, str]]]:
    """{(release, argv): [(site, host), ...]} of every server (kind server: each replica's) or router command."""
    out: dict[tuple[str, tuple[str, ...]], list[tuple[str, str]]] = {}
    for r in rendered:
        for host, plan in r.plans.items():
            if plan.get("role") != kind or host in r.errors:
                continue
            if kind == "server":
                for one in plan.get("replicas") or [plan]:
                    release = str(plan["recipe"]["sglang_version"])
                    out.setdefault((release, tuple(one["argv"])), []).append((r.name, host))
            else:
                out.setdefault(("router", tuple(plan["argv"])), []).append((r.name, host))
    return out


# --- mutations ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutation:
    """One mistake (or one unusual but valid value) of a validator's domain, planted in one host of a site."""

    name: str
    domain: str  # systemd, nft, promtool, parser, router-parser, image
    site: str
    host: str
    values: tuple[tuple[str, Any], ...]

    def apply(self, site: Site) -> Site:
        hostvars, groups, origins = copy.deepcopy(site)
        hostvars[self.host].update(copy.deepcopy(dict(self.values)))
        if origins is not None:
            for name, _v in self.values:
                origins.setdefault(self.host, {}).setdefault(name, [f"host {self.host}"])
        return hostvars, groups, origins


def json_safe(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


Verdict = Callable[[Rendered, str], list[str]]


# --- where a refused value would stand: the probes ----------------------------------------------------------------------
#
# A value the plan refuses never reaches a file; to ask the validator about it all the same, it is put where the
# collection writes that variable (the unit key, the nft set or port list, the Prometheus setting), in a file of the
# validator's own minimal form. Whether the validator refuses the value there is its verdict.

PROBE_UNIT: dict[str, Callable[[Any], list[str]]] = {
    "sglang_server_hardening": lambda v: ["[Service]", *map(str, v)],
    "sglang_router_service_hardening": lambda v: ["[Service]", *map(str, v)],
    "sglang_server_after_units": lambda v: ["[Unit]", "After=network-online.target " + " ".join(map(str, v))],
    "sglang_server_restart_sec": lambda v: ["[Service]", f"RestartSec={v}"],
    "sglang_server_limit_nofile": lambda v: ["[Service]", f"LimitNOFILE={v}"],
    "sglang_router_service_restart_sec": lambda v: ["[Service]", f"RestartSec={v}"],
}
PROBE_PORTS = ("monitoring_node_exporter_port", "monitoring_dcgm_exporter_port", "sglang_router_metrics_port")


def probe(m: Mutation) -> Optional[dict[str, str]]:
    """{validator: file text} holding the mutation's values where the node's file would hold them, or None."""
    values = dict(m.values)
    if m.domain == "systemd" and set(values) <= set(PROBE_UNIT):
        lines = ["[Unit]", "Description=probe"]
        service = ["[Service]", "ExecStart=/usr/bin/python3"]
        for name, value in values.items():
            section, *body = PROBE_UNIT[name](value)
            (lines if section == "[Unit]" else service).extend(body)
        return {"systemd": "\n".join(lines + service + ["[Install]", "WantedBy=multi-user.target", ""])}
    if m.domain == "nft" and "monitoring_allowed_sources" in values:
        given = [str(v) for v in values["monitoring_allowed_sources"]]
        v6, v4 = [v for v in given if ":" in v], [v for v in given if ":" not in v]
        sets = [f"  set s{f} {{ type {t}; flags interval; elements = {{ {', '.join(vs)} }} }}"
                for f, t, vs in (("4", "ipv4_addr", v4), ("6", "ipv6_addr", v6)) if vs]
        return {"nft": "table inet probe {\n" + "\n".join(sets) + "\n}\n"}
    if m.domain == "nft" and set(values) & set(PROBE_PORTS):
        ports = ", ".join(str(values[n]) for n in PROBE_PORTS if n in values)
        return {"nft": f"table inet probe {{\n  chain c {{\n    tcp dport {{ {ports} }} drop\n  }}\n}}\n"}
    if m.domain == "promtool":
        doc: dict[str, Any] = {"global": {"scrape_interval": f"{values.get('monitoring_scrape_interval', 15)}s"}}
        if "monitoring_alertmanagers" in values:
            doc["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(values["monitoring_alertmanagers"])}]}]}
        return {"promtool": yaml.safe_dump(doc)}
    return None


def probe_refused(files: dict[str, str]) -> list[str]:
    """What the validator says of a probe file."""
    out: list[str] = []
    if "systemd" in files:
        out += [x for xs in systemd_verify({files["systemd"]: [("probe", "p/files/etc/systemd/system/probe.service")]})
                .values() for x in xs]
    if "nft" in files:
        out += [x for xs in nft_check({files["nft"]: [("probe", "probe.nft")]}).values() for x in xs]
    if "promtool" in files:
        with tempfile.TemporaryDirectory(prefix="metalserve-promtool-") as tmp:
            path = Path(tmp) / "prometheus.yml"
            path.write_text(files["promtool"])
            proc = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True,
                                  timeout=120, check=False)
            if proc.returncode != 0:
                out.append((proc.stdout + proc.stderr).strip())
    return out


# --- Docker's reference grammar ----------------------------------------------------------------------------------------------

def docker_refuses(refs: Iterable[str]) -> dict[str, str]:
    """{reference: the Docker daemon's refusal} for the references its own parser (distribution/reference, inside
    dockerd) refuses: `docker image inspect` parses the reference before it looks for the image, and answers "invalid
    reference format" for one it cannot read, "No such image" for one it reads but does not hold. Nothing is pulled."""
    out = {}
    for ref in sorted(set(refs)):
        proc = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True,
                              text=True, timeout=60, check=False)
        said = (proc.stdout + proc.stderr).strip()
        if "invalid reference format" in said or "invalid reference" in said.lower():
            out[ref] = said
        elif proc.returncode != 0 and "No such image" not in said and "no such image" not in said.lower():
            raise AssertionError(f"docker image inspect {ref!r}: {said}")
    return out
