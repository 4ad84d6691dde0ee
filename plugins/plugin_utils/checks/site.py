# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The independent site checker: the files every node gets, read back the way the node reads them, judged as a whole.

    check_site(nodes) -> [(host, message), ...]     (empty: nothing to refuse)

It reads ONLY what the nodes get, never the planner's inputs or its plan, so it catches what a new input path
forgets. Its input, per inventory host:

    {"machine": "10.0.0.1",                 # ansible_host, else the inventory name: hosts with one machine share it
     "gpu": "h200" | None, "vendor": "nvidia" | "amd" | None, "gpus_per_node": 8 | None,   # the hardware
     "vram_gb": 141, "compute_capability": "9.0", "gfx": "gfx942",   # optional: what the platform table says of it
     "addresses": ["10.0.0.1", ...],        # optional: addresses the node is known to hold (facts, ansible_host)
     "files": {"/etc/systemd/system/sglang-x.service": "<text>", ...},   # every file the node gets
     "modes": {"/etc/sglang/x.env": "0600", ...},                        # optional; a file without one is judged
                                                                          # as readable by others
     "views": {"weights": {...}}}           # optional: rendered stage views (rendered/<host>/weights.yml settings)
nodes_from_site(site, hostvars) builds it from a planned site (placement.plan_site's files and the hosts' hardware).

How it reads the files: checks/readers.py (systemd's quoting, environment files, `docker run`, nftables, every SGLang
and sglang-router command line through recipe/cli.py with the flag table of the release that runs it). How it models
each process: checks/views.py (what each process sees of the file system, the network and the GPUs, what it asks
for). Names and values: checks/grammar.py. Routers: checks/routing.py.

What it refuses:
- PD pairs behind one router that disagree on what shapes the KV cache, or a bootstrap port the router uses that the
  prefill does not bind; a router pool serving more than one model or answering differently, a router --host with a
  port, a policy or service discovery sglang-router itself refuses, a static worker list discovery replaces; a secret
  or a repeated flag on a line;
- per machine: one table of every listener (servers, replicas, their NCCL and rendezvous ports, routers and their
  metrics port, exporters, the weights fan-out, Prometheus, blackbox), no two on one port and address; unit files and
  GPUs used twice, GPU sets that do not hold TP x PP / nnodes GPUs or name GPUs the machine lacks, docker GPU
  requests docker refuses, sandboxes that keep the GPUs away;
- a path a process is told to read or write that is not in its view (docker's mounts, systemd's sandbox), an address
  a bridged container cannot bind, a checkpoint whose share of a GPU does not fit --mem-fraction-static of it;
- secret-shaped strings (credentials in any URL form included) in any command line, unit or file that is not 0600;
- environment names close to one their reader knows (did you mean), values their reader reads otherwise (SGLang's
  EnvBool and get_bool_env_var, NCCL's integers), URLs without their scheme;
- images docker cannot parse or that name their registry twice, CUDA or ROCm builds that lack the node's GPU;
- health probes aimed at an address or port the server does not serve, docker servers published with -p but
  bound to loopback inside the container;
- multi-node members whose rendezvous address differs, is loopback, is not the head's own, or is shared with
  another instance, and instance firewalls that do not admit exactly the members;
- images, installs, devices and backends of the other GPU vendor.
Pure.
"""
from __future__ import annotations

import functools
import json
import posixpath
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional

from ansible_collections.metalserve.sglang.plugins.plugin_utils import backends, yaml_read
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammar, routing, views
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.readers import (
    UNIT_DIR, Node, Problem, Service, docker_run, exec_argv, ip_of, is_loopback, nft_read, node_of, published, read_release,
    read_services, split_address, systemd_words, unit_entries, url_parts)
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.views import used_gpus
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import Catalog, load_catalog, managed
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.secret_shapes import (
    placeholder, secret_env_name, secret_kind)

DATA = Path(__file__).resolve().parents[3] / "data"
#: the readers this module's callers reach through it (checks/readers.py is their home)
__all__ = ["check_site", "failure_text", "nodes_from_site", "node_addresses", "read_nodes", "Node", "docker_run",
           "exec_argv", "read_release", "systemd_words", "unit_entries"]
#: where the KV caches of a PD pair must agree (checks/routing.py)
PD_SHAPE_FLAGS = routing.PD_SHAPE_FLAGS


@functools.lru_cache(maxsize=1)
def _ports() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "sglang" / "ports.yml").read_text(encoding="utf-8"))


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


def check_file_paths(node: Node) -> Iterable[Problem]:
    """Every file a node gets is at an absolute path in normal form: a relative one has no place on the node (the
    role would write it under its working folder), and one with '..' or '.' names another folder than it reads
    (rendered/ would place it outside the host's folder)."""
    for path in sorted(node.files):
        if not path.startswith("/") or posixpath.normpath(path) != path or path.startswith("//"):
            yield node.host, (f"a file this host would get is at {path!r}, not an absolute path in normal form (no "
                              "'..', '.' or '//'): check the *_dir and *_path settings it is made from and write "
                              "them as absolute paths")


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


def check_machines(nodes: list[Node]) -> Iterable[Problem]:
    """Inventory hosts that are one machine: one owner per file, listener and GPU."""
    by_machine: dict[str, list[Node]] = defaultdict(list)
    for node in nodes:
        by_machine[node.machine].append(node)
    for machine, here in sorted(by_machine.items()):
        yield from _machine_files(machine, here)
        yield from _machine_listeners(machine, here)
        yield from _machine_gpus(machine, here)


def _machine_files(machine: str, here: list[Node]) -> Iterable[Problem]:
    """A file two hosts of one machine write differently: the last run wins."""
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


def _machine_listeners(machine: str, here: list[Node]) -> Iterable[Problem]:
    """One table of every socket of the machine (views.listeners): no two on one port and address. A file two hosts
    of the machine write identically runs once."""
    owner: dict[tuple[str, str], str] = {}
    table: list[tuple[str, views.Listener]] = []
    for node in here:
        for listener in views.listeners(node):
            key = (listener.source, node.files.get(listener.source, ""))
            if owner.setdefault(key, node.host) == node.host:
                table.append((node.host, listener))
    by_port: dict[int, list[tuple[str, views.Listener]]] = defaultdict(list)
    for host, listener in table:
        by_port[listener.port].append((host, listener))
    hosts = [n.host for n in here]
    for port, owners in sorted(by_port.items()):
        clashing = [(h, x) for i, (h, x) in enumerate(owners)
                    if any(x.overlaps(y) for j, (_g, y) in enumerate(owners) if i != j)]
        if len(clashing) < 2:
            continue
        detail = " and ".join(f"{x.what}{' on ' + x.address if x.address else ''} of {h}" for h, x in clashing)
        variables = ", ".join(dict.fromkeys(x.variable for _h, x in clashing))
        for host in sorted({h for h, _x in clashing}):
            yield host, (f"port {port} is bound twice on {machine}: {detail}; move one ({variables})"
                         + (f" or give {' and '.join(hosts)} their own machines" if len(hosts) > 1 else ""))


def _machine_gpus(machine: str, here: list[Node]) -> Iterable[Problem]:
    """Every server's GPUs as its runtime hands them (views.used_gpus); no GPU serves two servers at once."""
    used: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for node in here:
        for svc in node.services:
            key = (svc.unit, node.files[svc.unit])
            if svc.kind != "server" or svc.parsed is None or key in seen:
                continue
            seen.add(key)
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


def check_probes(node: Node) -> Iterable[Problem]:
    for svc in node.services:
        if svc.parsed is None:
            continue
        bound = str(svc.value("--host") or "")
        port = svc.value("--port")
        bridged = views.bridged(svc)
        publishes = svc.docker.values("-p", "--publish") if bridged and svc.docker else []
        if bridged and publishes and is_loopback(bound):
            yield node.host, (f"{svc.name}: the server binds {bound} inside its container and docker publishes "
                              f"{', '.join(publishes)}: docker forwards to the container's own address, so nothing "
                              "reaches it. Bind 0.0.0.0 (sglang_host), or serve from a uv venv (sglang_install_method: uv)")
        for url in svc.probes:
            host, probe_port = url_parts(url)
            expect_port = port
            if bridged:
                mapped = [published(s) for s in publishes if s.split("/")[0].rsplit(":", 1)[-1] == str(port)]
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
        ip = ip_of(host)
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
                out.add(split_address(str(svc.value("--dist-init-addr") or ""))[0].lower())
            else:
                out |= {url_parts(u)[0].lower() for u in routing.router_worker_urls(svc)}
    usable = set()
    for address in out:
        ip = ip_of(address)
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
            ip = ip_of(bound)
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
    firewalls that admit exactly the members; every machine its own address."""
    groups: dict[str, list[tuple[Node, Service]]] = defaultdict(list)
    for node in nodes:
        for svc in node.services:
            if svc.kind == "server" and svc.parsed is not None and int(svc.value("--nnodes", 1)) > 1:
                groups[svc.name].append((node, svc))
    yield from _claimed_addresses(nodes)
    addresses_used: dict[str, list[str]] = defaultdict(list)
    for unit, members in sorted(groups.items()):
        for address in {str(s.value("--dist-init-addr") or "") for _n, s in members}:
            addresses_used[address].append(unit)
        yield from _instance(unit, members)
    for address, units in sorted(addresses_used.items()):
        if len(units) > 1:
            for node, _svc in (m for u in units for m in groups[u]):
                yield node.host, (f"{' and '.join(units)} rendezvous at the same address {address}: two instances "
                                  "would join one another. Each instance needs its own head (sglang_instance_group, "
                                  "sglang_dist_address) or its own sglang_dist_port")


def _claimed_addresses(nodes: list[Node]) -> Iterable[Problem]:
    """An address the site sends traffic to that two machines claim."""
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


def _instance(unit: str, members: list[tuple[Node, Service]]) -> Iterable[Problem]:
    """One multi-node instance: its members agree on the rendezvous, hold ranks 0..n-1, and the head owns the address."""
    hosts = [n.host for n, _s in members]
    addrs = {n.host: str(s.value("--dist-init-addr") or "") for n, s in members}
    nnodes = {n.host: int(s.value("--nnodes", 1)) for n, s in members}
    ranks = {n.host: int(s.value("--node-rank", 0)) for n, s in members}
    if len(set(addrs.values())) > 1:
        shown = ", ".join(f"{h}: {a}" for h, a in addrs.items())
        for host in hosts:
            yield host, (f"the members of {unit} rendezvous at different addresses ({shown}); every member "
                         "needs the head's --dist-init-addr (set sglang_instance_group on all of them, and "
                         "sglang_dist_address only on hosts, never copied between them)")
        return
    expected = max(nnodes.values())
    if sorted(ranks.values()) != list(range(expected)) or len(set(nnodes.values())) > 1:
        shown = ", ".join(f"{h}: rank {ranks[h]} of {nnodes[h]}" for h in hosts)
        for host in hosts:
            yield host, (f"{unit} is run by {len(hosts)} host(s) ({shown}); an instance of --nnodes "
                         f"{expected} needs ranks 0..{expected - 1} once each: fix sglang_instance_group "
                         "(or sglang_node_rank on every member)")
        return
    address = list(addrs.values())[0]
    dist_host, dist_port = split_address(address)
    head_node = [n for n, _s in members if ranks[n.host] == 0][0]
    if is_loopback(dist_host):
        for host in hosts:
            yield host, (f"{unit}: the rendezvous address {address} is loopback, which the other members cannot "
                         f"reach; {head_node.host} needs an address the members reach (sglang_dist_address, "
                         "sglang_dist_interface, or an ansible_host that is not localhost)")
        return
    if dist_host.lower() not in head_node.addresses:
        for host in hosts:
            yield host, (f"{unit}: the rendezvous address {dist_host} is not an address of the head "
                         f"{head_node.host} ({', '.join(head_node.addresses)}); rank 0 binds it, so the members "
                         "would wait for a rendezvous that never opens")
    yield from _firewalls(unit, members, dist_port)


def _firewalls(unit: str, members: list[tuple[Node, Service]], dist_port: Optional[int]) -> Iterable[Problem]:
    """Each member's instance firewall admits exactly the members' addresses to the rendezvous port."""
    if dist_port is None:
        return
    known = {n.host: [a for a in n.addresses if ip_of(a) is not None] for n, _s in members}
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
    vendors = grammar.vendors()
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
        yield from _backends(node, svc, other)


def _backends(node: Node, svc: Service, other: str) -> Iterable[Problem]:
    """Every backend flag of the command (a dest ending in 'backend' in the release's table) whose value names the
    other vendor's kernels (data/sglang/vendors.yml backend_words)."""
    if svc.parsed is None or svc.table is None:
        return
    for occ in svc.parsed.occurrences:
        dest = svc.table.dest(occ.option) if occ.option in svc.table.flags else ""
        if not dest.endswith("backend") or backends.backend_vendor(occ.value) != other:
            continue
        hint = (": drop sglang_moe_a2a: deepep (or --moe-a2a-backend) for AMD racks"
                if dest == "moe_a2a_backend" and other == "nvidia"
                else f": drop {occ.written} from sglang_extra_args (the cookbook cell's own backends run on "
                     f"{(node.vendor or '').upper()})")
        yield node.host, (f"{svc.name} runs {occ.option} {occ.value}, which only {other.upper()} GPUs have; "
                          f"{node.host} is {_hardware(node)}{hint}")
    yield from _attention_arch(node, svc)


#: the flags whose backend SGLang creates through attention_registry.py (the vision encoder's is another code path)
ATTENTION_DESTS = frozenset(("attention_backend", "prefill_attention_backend", "decode_attention_backend"))


def _attention_arch(node: Node, svc: Service) -> Iterable[Problem]:
    """An attention backend SGLang refuses to create on the node's compute capability (vendors.yml attention_majors)."""
    majors = (grammar.vendors().get(node.vendor or "") or {}).get("attention_majors") or {}
    capability = str(node.platform.get("compute_capability") or "")
    if svc.parsed is None or svc.table is None or not majors or not re.fullmatch(r"\d+\.\d+", capability):
        return  # a site's own platform without a major.minor capability is not judged
    for occ in svc.parsed.occurrences:
        dest = svc.table.dest(occ.option) if occ.option in svc.table.flags else ""
        takes = majors.get(str(occ.value))
        if dest in ATTENTION_DESTS and takes and int(capability.split(".", maxsplit=1)[0]) not in takes:
            yield node.host, (f"{svc.name} runs {occ.option} {occ.value}, which SGLang creates only on compute "
                              f"capability {' or '.join(f'{m}.x' for m in takes)} (attention_registry.py); "
                              f"{node.host}'s {node.gpu} is {capability}: drop {occ.written} from sglang_extra_args "
                              "and let the cookbook cell's backend run")


# --- entry points -----------------------------------------------------------------------------------------------------

def read_nodes(nodes: dict[str, dict[str, Any]]) -> list[Node]:
    out = []
    for host in sorted(nodes):
        node = node_of(host, nodes[host])
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
        problems += list(check_file_paths(node))
        problems += list(check_secrets(node))
        problems += list(grammar.check_env(node))
        problems += list(grammar.check_urls(node))
        problems += list(grammar.check_images(node))
        problems += list(check_probes(node))
        problems += list(check_vendor(node))
        problems += list(views.check_paths(node))
        problems += list(views.check_memory(node))
        problems += list(views.check_bridge_binds(node))
    problems += list(check_machines(read))
    problems += list(routing.check_routers(read))
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
    describe, and the stage views rendered/ shows beside the files (weights.yml). Nothing else the planner decided is
    passed on."""
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
        platforms = _site_catalog("gpu_platforms", hv.get("sglang_gpu_platforms"))
        platform = (platforms.gpus if platforms else catalog.gpus).get(str(gpu)) if gpu else None
        out[host] = {"machine": str(hv.get("ansible_host") or host), "gpu": gpu,
                     "vendor": (platform or {}).get("vendor"), "gpus_per_node": (platform or {}).get("gpus_per_node"),
                     "addresses": node_addresses(host, hv), "files": files, "modes": modes,
                     **{k: (platform or {}).get(k) for k in ("vram_gb", "compute_capability", "gfx")},
                     "checkpoints": _site_checkpoints(hv.get("sglang_recipes")),
                     "views": _stage_views(plan)}
    return out


def _site_catalog(kind: str, given: Any) -> Optional[Catalog]:
    """The catalog with a host's sglang_recipes or sglang_gpu_platforms merged over it, read once per distinct value
    (a site sets them group-wide, so 2,048 hosts share one); None without them, or when they are wrong: the planner
    reports that on the hosts that read them, and a host that does not (sglang_role: none) must not stop the plan."""
    if not given:
        return None
    try:
        key = json.dumps(given, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return _catalog_of(kind, key)


@functools.lru_cache(maxsize=64)
def _catalog_of(kind: str, key: str) -> Optional[Catalog]:
    try:
        return load_catalog(json.loads(key)) if kind == "recipes" else load_catalog(None, json.loads(key))
    except RecipeError:
        return None


def _site_checkpoints(recipes: Any) -> Optional[dict[str, float]]:
    """The checkpoint sizes a host's own recipes declare (sglang_recipes), as the hardware the site describes; None
    for a host without recipes (the shipped data/models hold the rest)."""
    catalog = _site_catalog("recipes", recipes)
    if catalog is None:
        return None
    ids = {str(doc.get("id")) for doc in (recipes if isinstance(recipes, list) else [recipes]) if isinstance(doc, dict)}
    return {str(c["id"]).rstrip("/"): float(c["size_gb"]) for m in catalog.models.values() if m.id in ids
            for c in m.checkpoints.values() if c.get("size_gb")} or None


def _stage_views(plan: dict[str, Any]) -> dict[str, Any]:
    """The stage views rendered/<host>/ shows that the checker judges (weights.yml's settings: where the weights
    stage fetches from)."""
    weights = (plan.get("stages") or {}).get("weights") or {}
    return {"weights": dict(weights.get("settings") or {})} if weights.get("applies") else {}


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
