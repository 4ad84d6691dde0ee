# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Routers as sglang-router reads and runs them, for the site checker (checks/site.py). Pure.

- every worker URL a router names is a server of the site (a head whose address and --port answer it); its pool
  serves one model; PD pairs agree on what shapes the KV cache and on the bootstrap port;
- the router's own refusals, from the sglang-router release the site runs (0.3.2: its ConfigValidator, the Rust core's
  checks at start): a power_of_two policy over fewer than two workers (of the pool, of the prefill or of the decode
  workers), service discovery without a selector;
- flags that replace the static worker list: with --service-discovery, sglang-router's Router.from_args empties
  --worker-urls (sglang_router/router.py), so the inventory's workers are never routed to;
- a pool whose servers answer differently: servers that differ on a flag that shapes the answer (data/sglang/router.yml
  pool_agree: the reasoning and tool-call parsers, the chat template) give a client another answer depending on the
  server its request lands on.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from ansible_collections.metalserve.sglang.plugins.plugin_utils import yaml_read
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import views
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.readers import (
    Node, Problem, Service, published, split_address, url_parts)

DATA = Path(__file__).resolve().parents[3] / "data"
PD_SHAPE_FLAGS = ("--quantization", "--kv-cache-dtype", "--page-size", "--dtype", "--disaggregation-transfer-backend",
                  "--speculative-algorithm", "--attention-backend")


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
            if views.bridged(svc):
                ports = [published(p) for p in svc.docker.values("-p", "--publish")
                         if p.split("/")[0].rsplit(":", 1)[-1] == str(port)]
            for address in where:
                for reached in ports:
                    if reached is not None:
                        out[(address, int(reached))].append((node, svc))
    return out


def router_worker_urls(router: Service) -> list[str]:
    """Every worker URL a router's command names: PD prefill and decode workers, then plain workers."""
    prefill = list(router.value("--prefill", []) or [])
    decode = list(router.value("--decode", []) or [])
    return [str(w[0]) for w in prefill] + [str(w[0]) for w in decode] + [str(u) for u in router.value("--worker-urls", []) or []]


@functools.lru_cache(maxsize=1)
def _router_data() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "sglang" / "router.yml").read_text(encoding="utf-8")) or {}


@functools.lru_cache(maxsize=1)
def _ports() -> dict[str, Any]:
    return yaml_read.safe_load((DATA / "sglang" / "ports.yml").read_text(encoding="utf-8"))


def check_routers(nodes: list[Node]) -> Iterable[Problem]:
    endpoints = _endpoints(nodes)
    for node in nodes:
        for router in (s for s in node.services if s.kind == "router" and s.parsed is not None):
            yield from _router_line(node, router)
            found: dict[str, tuple[Node, Service]] = {}
            for url in router_worker_urls(router):
                host, port = url_parts(url)
                match = endpoints.get((host.lower(), port), []) if port is not None else []
                if not match:
                    yield node.host, (f"{router.name} sends requests to {url}, which no server of the site serves "
                                      "(no head whose address and --port match it); check the router's workers group "
                                      "and the servers' sglang_host / sglang_port")
                else:
                    found[url] = match[0]
            yield from _one_model(node, router, found)
            prefill = list(router.value("--prefill", []) or [])
            decode = list(router.value("--decode", []) or [])
            if prefill and decode:
                yield from _pd_pairs(node, router, prefill, decode, found)
            yield from _pools_answer_alike(node, router, found)


def _router_line(node: Node, router: Service) -> Iterable[Problem]:
    """What sglang-router itself makes of its line: --host with a port, its policy refusals, service discovery."""
    bound = str(router.value("--host") or "")
    host_only, port_in_host = split_address(bound)
    if port_in_host is not None:
        yield node.host, (f"{router.name}: --host {bound} holds a port; sglang-router takes the address alone "
                          f"(--host {host_only}) and the port from --port (sglang_router_port)")
    yield from _policies(node, router)
    yield from _service_discovery(node, router)


def _policies(node: Node, router: Service) -> Iterable[Problem]:
    """sglang-router's ConfigValidator (validate_compatibility, without service discovery): power_of_two compares the
    loads of two workers it picks, so it needs two of them; in PD mode the pool is the prefill and decode workers
    together, and --prefill-policy / --decode-policy each need two of their own."""
    if router.value("--service-discovery"):
        return
    prefill = len(router.value("--prefill", []) or [])
    decode = len(router.value("--decode", []) or [])
    pd = bool(router.value("--pd-disaggregation"))
    plain = len(router.value("--worker-urls", []) or [])
    checks = [("--policy", router.value("--policy"), prefill + decode if pd else plain, "workers", "",
               "sglang_router_policy")]
    if pd:
        checks += [("--prefill-policy", router.value("--prefill-policy"), prefill, "prefill workers", " for prefill",
                    "sglang_router_extra_args"),
                   ("--decode-policy", router.value("--decode-policy"), decode, "decode workers", " for decode",
                    "sglang_router_extra_args")]
    for flag, policy, count, what, which, variable in checks:
        if policy == "power_of_two" and count < 2:
            shown = what[:-1] if count == 1 else what
            yield node.host, (f"{router.name} runs {flag} power_of_two over {count} {shown}; sglang-router "
                              f"{router.release} refuses to start (\"Power-of-two policy{which} requires at least 2 "
                              f"{what}\"): it picks two workers and sends to the less loaded. Give the pool two "
                              f"{what} (sglang_router_workers_group), or another policy ({variable})")


def _service_discovery(node: Node, router: Service) -> Iterable[Problem]:
    """--service-discovery makes sglang-router find its workers among Kubernetes pods: its Router.from_args drops the
    static --worker-urls, and its ConfigValidator refuses discovery without a pod selector."""
    if not router.value("--service-discovery"):
        return
    static = list(router.value("--worker-urls", []) or [])
    if static and not router.value("--pd-disaggregation"):
        yield node.host, (f"{router.name} has --service-discovery and --worker-urls {' '.join(static)}: "
                          f"sglang-router {router.release} drops the static worker list when it discovers workers "
                          "(Kubernetes pods matching --selector), so the inventory's servers would get no request. "
                          "Remove --service-discovery from sglang_router_extra_args (the workers come from "
                          "sglang_router_workers_group)")
    pd = bool(router.value("--pd-disaggregation"))
    selectors = ([router.value("--prefill-selector"), router.value("--decode-selector")] if pd
                 else [router.value("--selector")])
    if not any(selectors):
        which = "--prefill-selector or --decode-selector" if pd else "--selector"
        yield node.host, (f"{router.name} has --service-discovery without {which}; sglang-router {router.release} "
                          f"refuses to start (\"{'PD' if pd else 'Regular'} mode with service discovery requires "
                          f"{'at least one non-empty selector (prefill or decode)' if pd else 'a non-empty selector'}"
                          "\")")


def _one_model(node: Node, router: Service, found: dict[str, tuple[Node, Service]]) -> Iterable[Problem]:
    names = {_served(s)[0] for _n, s in found.values()}
    models = defaultdict(list)
    for _url, (n, s) in found.items():
        served, folder = _served(s)
        models[served if len(names) > 1 else f"{served} from {folder}"].append(n.host)
    if len(models) > 1:
        shown = "; ".join(f"{name} on {', '.join(hosts)}" for name, hosts in sorted(models.items()))
        yield node.host, (f"{router.name} spreads requests over servers of different models ({shown}); "
                          "a router pool serves one model: give each model its own router, or the same "
                          "sglang_quant / sglang_model_path / sglang_served_model_name to every server of it")


def _pools_answer_alike(node: Node, router: Service, found: dict[str, tuple[Node, Service]]) -> Iterable[Problem]:
    """Servers the router spreads one client's requests over answer alike: the flags that shape an answer
    (router.yml pool_agree) hold one value over the pool (in PD mode, over the decode workers, which write it)."""
    decode = {str(e[0]) for e in router.value("--decode", []) or []}
    pool = [(n, s) for url, (n, s) in found.items() if not decode or url in decode]
    differ = []
    for flag in _router_data().get("pool_agree") or []:
        values: dict[str, list[str]] = defaultdict(list)
        for n, s in pool:
            value = s.value(flag)
            values["unset" if value in (None, False) else f"{flag} {value}"].append(n.host)
        if len(values) > 1:
            differ.append("; ".join(f"{v} on {', '.join(sorted(set(h)))}" for v, h in sorted(values.items())))
    if differ:
        yield node.host, (f"{router.name} spreads requests over servers that answer differently ({'; '.join(differ)}): "
                          "the same request gets another answer depending on the server it lands on. Give every "
                          "server of the pool the same value (sglang_parsers, or the flag in sglang_extra_args), or "
                          "give each its own router")


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
