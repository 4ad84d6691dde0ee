"""Each component's own validator over many rendered sites (tests/validators.py says which sites and how), and the
site checker held to them: where the plan accepts a host, systemd-analyze, nft and promtool accept every file it gets;
where one mistake of a validator's domain is planted, the plan refuses the host exactly when the validator refuses
the value (in the files the host gets, or, when the plan refused it before any file, where those files would hold it).

The validators come from the machine (tests/unit/validators.sh installs systemd and nftables when missing; promtool is
tests/unit/promtool.sh's). Every unit of every site is one systemd-analyze call, every nft table one namespace.
"""
from __future__ import annotations

import functools
import shutil
import subprocess

import pytest

from ansible_collections.metalserve.sglang.tests import validators as v

M = v.Mutation
#: one value of a validator's domain in one host: mistakes and unusual values that are right
MUTATIONS = [
    M("hardening-key-misspelt", "systemd", "options-uv", "h1",
      (("sglang_server_hardening", ["NoNewPrivileges=yes", "ProtectHomes=yes"]),)),
    M("hardening-of-known-keys", "systemd", "options-uv", "h1",
      (("sglang_server_hardening", ["NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/sglang"]),)),
    M("router-hardening-without-a-value", "systemd", "options-uv", "r1",
      (("sglang_router_service_hardening", ["PrivateTmp"]),)),
    M("after-units-with-a-space", "systemd", "options-docker", "h1",
      (("sglang_server_after_units", ["nvidia fabric.service"]),)),
    M("after-units-without-a-type", "systemd", "options-docker", "h1",
      (("sglang_server_after_units", ["openibd"]),)),
    M("after-units-of-several-types", "systemd", "options-docker", "h1",
      (("sglang_server_after_units", ["openibd.service", "remote-fs.target", "var-lib-sglang.mount"]),)),
    M("extra-arg-with-specifiers-and-quotes-uv", "systemd", "options-uv", "h1",
      (("sglang_extra_args", {"--chat-template": '/etc/sglang/t %n $HOME "q".jinja'}),)),
    M("extra-arg-with-specifiers-docker", "systemd", "options-docker", "h1",
      # a path the container mounts (the checkpoint folder): the process-view check refuses any other
      (("sglang_extra_args", {"--chat-template": "/nvme/models/zai-org/GLM-5.3/t %i ${HOME}.jinja"}),)),
    M("env-with-specifiers", "systemd", "options-uv", "h1", (("sglang_env", {"NCCL_DEBUG_FILE": "/tmp/nccl.%h.%p"}),)),
    M("restart-at-once", "systemd", "options-docker", "r1", (("sglang_router_service_restart_sec", 0),)),
    M("allowed-sources-v4-and-v6", "nft", "options-docker", "mon",
      (("monitoring_allowed_sources", ["10.20.0.0/16", "fd00:1::/64"]),)),
    M("allowed-source-with-host-bits", "nft", "options-docker", "mon", (("monitoring_allowed_sources", ["10.20.0.1/16"]),)),
    M("allowed-source-past-32-bits", "nft", "options-docker", "mon", (("monitoring_allowed_sources", ["10.20.0.0/33"]),)),
    M("allowed-source-by-name", "nft", "options-docker", "mon", (("monitoring_allowed_sources", ["prom.example.com"]),)),
    M("exporter-port-past-65535", "nft", "options-docker", "h1", (("monitoring_node_exporter_port", 70000),)),
    M("exporter-port-moved", "nft", "options-docker", "h1", (("monitoring_node_exporter_port", 9111),)),
    M("alertmanager-with-a-scheme", "promtool", "options-docker", "mon",
      (("monitoring_alertmanagers", ["http://am.example.com:9093"]),)),
    M("alertmanager-with-a-path", "promtool", "options-docker", "mon", (("monitoring_alertmanagers", ["am:9093/api"]),)),
    M("alertmanagers-by-name-and-v6", "promtool", "options-docker", "mon",
      (("monitoring_alertmanagers", ["am.example.com:9093", "[fd00::1]:9093", "am2"]),)),
    M("scrape-interval-zero", "promtool", "options-docker", "mon", (("monitoring_scrape_interval", 0),)),
    M("scrape-interval-a-minute", "promtool", "options-docker", "mon", (("monitoring_scrape_interval", 60),)),
]


#: where the plan refuses on purpose what a validator takes, and why (the validator's acceptance is not the meaning the
#: operator wrote)
STRICTER = {
    "scrape-interval-zero": "Prometheus takes a zero interval for its own default (1m; config.go GlobalConfig's "
                            "UnmarshalYAML), not for what was written: the plan refuses it",
}


@functools.lru_cache(maxsize=1)
def rendered() -> list[v.Rendered]:
    return [v.plan_and_render(name, site) for name, site in v.every_site().items()]


def test_the_sites_plan_clean() -> None:
    """The validators below judge sites the plan accepts; their number is what the reader is told."""
    sites = rendered()
    assert len(sites) >= 18
    assert {r.name: r.errors for r in sites if r.errors} == {}


def test_systemd_accepts_every_unit_and_drop_in() -> None:
    units = v.systemd_units(rendered())
    assert len(units) >= 50
    said = {text.splitlines()[1] if len(text.splitlines()) > 1 else text: lines
            for text, lines in v.systemd_verify(units).items() if lines}
    assert said == {}, said


def test_nft_accepts_every_table() -> None:
    tables = v.nft_files(rendered())
    assert len(tables) >= 20
    said = {where[0]: lines for text, lines in v.nft_check(tables).items() if lines for where in [tables[text][0]]}
    assert said == {}, said


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is installed by tests/unit/promtool.sh")
def test_promtool_accepts_every_sites_configuration_and_rules() -> None:
    said = {site: lines for site, lines in v.promtool_check(rendered()).items() if lines}
    assert said == {}, said


def verdicts(m: v.Mutation) -> tuple[list[str], list[str]]:
    """(the plan's refusals of the mutated host, the validator's)."""
    r = v.plan_and_render(m.name, m.apply(v.every_site()[m.site]))
    checker = list(r.errors.get(m.host, []))
    if checker:
        files = v.probe(m)
        assert files is not None, f"{m.name}: refused, and no probe puts {dict(m.values)} where its file would"
        return checker, v.probe_refused(files)
    mine = v.Rendered(r.name, r.errors, {p: f for p, f in r.files.items() if p.startswith(f"{m.host}/")}, r.plans)
    if m.domain == "systemd":
        return checker, [x for xs in v.systemd_verify(v.systemd_units([mine])).values() for x in xs]
    if m.domain == "nft":
        return checker, [x for xs in v.nft_check(v.nft_files([mine])).values() for x in xs]
    return checker, [x for xs in v.promtool_check([r]).values() for x in xs]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: f"{m.domain}-{m.name}")
def test_the_checker_refuses_what_the_validator_refuses(mutation: v.Mutation) -> None:
    checker, validator = verdicts(mutation)
    if mutation.name in STRICTER:
        assert checker and not validator, f"{mutation.name}: no longer stricter than {mutation.domain}; drop it from STRICTER"
        return
    assert bool(checker) == bool(validator), (
        f"{mutation.name}: the plan {'refuses' if checker else 'accepts'} {dict(mutation.values)} on {mutation.host}, "
        f"{mutation.domain} {'refuses' if validator else 'accepts'} it\nplan: {checker}\n{mutation.domain}: {validator}")


def test_each_domain_has_values_both_refused_and_accepted() -> None:
    """The agreement above can fail either way: every validator is given values it refuses and values it takes."""
    seen: dict[str, set[bool]] = {}
    for m in MUTATIONS:
        seen.setdefault(m.domain, set()).add(bool(v.probe_refused(v.probe(m)) if v.probe(m) else False))
    assert all(kinds == {True, False} for kinds in seen.values()), seen


def test_the_validators_are_the_real_ones() -> None:
    assert "systemd" in subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True,
                                       check=False).stdout
    assert subprocess.run(["unshare", "-rn", v.nft_binary(), "--version"], capture_output=True, check=False).returncode == 0
