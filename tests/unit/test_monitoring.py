"""Observability from the site plan: --enable-metrics, the router's Prometheus endpoint, scrape targets and labels,
the monitoring firewall, the per-machine port check, the dashboard, and the alert rules through promtool
(`promtool check rules` and `promtool test rules` with tests/unit/promtool/*.test.yml; promtool comes with
Debian's prometheus package, which `make unit` installs when it is missing)."""
from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import engine as recipe_engine
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe import knobs
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import firewall, monitoring, render
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site
from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, ROOT
from ansible_collections.metalserve.sglang.tests.unit.monitoring_site import groups, hostvars, site

PROMTOOL_TESTS = sorted((Path(__file__).parent / "promtool").glob("*.test.yml"))
MON = FIXTURES / "monitoring"


def promtool() -> str:
    path = shutil.which("promtool")
    if not path:
        pytest.fail("promtool is missing: `make promtool` installs Debian's prometheus package, which carries it")
    return path


def rules_dir(tmp_path: Path, text: str) -> Path:
    (tmp_path / "metalserve.rules.yml").write_text(text)
    for test in PROMTOOL_TESTS:
        shutil.copy(test, tmp_path / test.name)
    return tmp_path


def jobs(s: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    doc = yaml.safe_load(s["monitoring"]["files"]["prometheus"]["content"])
    return {j["job_name"]: j for j in doc["scrape_configs"]}


def targets(job: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {t: group["labels"] for group in job["static_configs"] for t in group["targets"]}


# --- the servers and the router export metrics ------------------------------------------------------------------

def test_servers_run_with_metrics_by_default_and_without_when_asked() -> None:
    on = recipe_engine.recipe({"gpu": "h200", "strategy": "high-throughput"})
    assert "--enable-metrics" in on["args"] and on["metrics"] is True
    for sel in ({"gpu": "h200", "strategy": "high-throughput", "metrics": False}, {"gpu": "h200", "strategy": "high-throughput", "metrics": "no"}):
        rec = recipe_engine.recipe(sel)
        assert "--enable-metrics" not in rec["args"] and rec["metrics"] is False, sel
    # sglang_metrics alone owns the switch: the extra/remove args name it instead of silently changing the scrape
    for sel in ({"gpu": "h200", "strategy": "high-throughput", "remove_args": ["--enable-metrics"]},
                {"gpu": "h200", "strategy": "high-throughput", "extra_args": {"--enable-metrics": False}}):
        with pytest.raises(RecipeError, match=r"--enable-metrics contradicts sglang_metrics.*change sglang_metrics"):
            recipe_engine.recipe(sel)


def test_both_shipped_releases_have_the_switch() -> None:
    """SGLang's own flag tables (0.5.23 and 0.5.13.post1, each from its parser) carry --enable-metrics."""
    for release in ("0.5.23", "0.5.13.post1"):
        rec = recipe_engine.recipe({"gpu": "h200", "strategy": "high-throughput", "sglang_version": release, "install_method": "uv"})
        assert rec["metrics"] and rec["sglang_version"] == release


def test_a_release_without_the_switch_is_refused_with_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    real = knobs.flag_table

    def without(version: str) -> dict[str, Any] | None:
        table = dict(real(version) or {})
        table.pop("--enable-metrics", None)
        return table

    monkeypatch.setattr(knobs, "flag_table", without)
    with pytest.raises(RecipeError, match=r"sglang_metrics: SGLang 0\.5\.23 has no --enable-metrics .* set "
                                          r"sglang_metrics: false"):
        recipe_engine._build({"gpu": "h200", "quant": "fp8", "strategy": "high-throughput"})
    assert "--enable-metrics" not in recipe_engine._build({"gpu": "h200", "strategy": "high-throughput", "metrics": False}).args


def test_the_router_exports_on_the_port_the_plan_names() -> None:
    s = site()
    argv = s["plans"]["r1"]["argv"]
    # sglang-router 0.3.2's own flags (`launch_router --help`): --prometheus-host, --prometheus-port (default 29000)
    assert argv[argv.index("--prometheus-host") + 1] == "0.0.0.0"
    assert argv[argv.index("--prometheus-port") + 1] == "29000"
    hv = hostvars()
    hv["r1"]["sglang_router_metrics_port"] = 29100
    assert plan_site(hv, groups())["plans"]["r1"]["metrics_port"] == 29100


@pytest.mark.parametrize("change,message", [
    ({"sglang_router_extra_args": ["--prometheus-port", "9999"]},
     r"sglang_router_extra_args: --prometheus-port 9999 contradicts sglang_router_metrics_port, which gives the command "
     r"--prometheus-port 29000; change sglang_router_metrics_port instead"),
    ({"sglang_router_metrics_port": 8000}, r"sglang_router_metrics_port: 8000 \(router r1\) is also its serving port"),
    ({"sglang_router_metrics_port": 70000}, r"sglang_router_metrics_port: 70000 \(router r1\) is not a TCP port"),
])
def test_router_metrics_port_mistakes(change: dict[str, Any], message: str) -> None:
    hv = hostvars()
    hv["r1"].update(change)
    assert re.search(message, " ".join(plan_site(hv, groups())["errors"]["r1"]))


# --- ports per machine --------------------------------------------------------------------------------------------

def test_an_exporter_port_taken_by_a_server_flag_is_refused() -> None:
    hv = hostvars()
    hv["a1"]["sglang_extra_args"] = {"--grpc-port": 9100}
    errors = plan_site(hv, groups())["errors"]
    assert any("ports: a1 opens 9100 twice (--grpc-port and node exporter (monitoring_node_exporter_port))" in m
               for m in errors["a1"])


def test_the_router_metrics_port_enters_the_machine_check() -> None:
    hv = hostvars()
    hv["r1"]["ansible_host"] = "10.0.0.1"  # the router on a1's machine, its metrics on a1's --port
    hv["r1"]["sglang_router_metrics_port"] = 30000
    errors = plan_site(hv, groups())["errors"]
    assert any("are one machine (10.0.0.1) and both open 30000" in m for m in errors["r1"])


def test_two_inventory_names_of_one_machine_share_its_exporters() -> None:
    hv = hostvars()
    hv["r1"]["ansible_host"] = "10.0.0.1"
    assert plan_site(hv, groups())["errors"] == {}


# --- the scrape configuration ------------------------------------------------------------------------------------

def test_every_server_head_and_member_router_and_exporter_is_a_target() -> None:
    j = jobs(site())
    assert set(targets(j["metalserve-sglang"])) == {"10.0.0.1:30000", "10.0.0.2:30000", "10.0.0.3:30000",
                                                    "10.0.0.4:30000"}
    assert set(targets(j["metalserve-sglang-router"])) == {"10.0.0.9:29000"}
    assert set(targets(j["metalserve-node"])) == {f"10.0.0.{i}:9100" for i in (1, 2, 3, 4, 9, 20)}
    assert set(targets(j["metalserve-dcgm"])) == {"10.0.0.1:9400", "10.0.0.2:9400", "10.0.0.3:9400"}
    assert set(targets(j["metalserve-amd-gpu"])) == {"10.0.0.4:5000"}
    assert set(targets(j["metalserve-health"])) == {
        "http://10.0.0.1:30000/health", "http://10.0.0.2:30000/health", "http://10.0.0.3:30000/health",
        "http://10.0.0.4:30000/health", "http://10.0.0.9:8000/health"}
    member = targets(j["metalserve-sglang"])["10.0.0.3:30000"]
    assert member == {"instance": "b2", "role": "server", "rack": "B", "sglang_instance": "pair", "head": "b1",
                      "model": "glm-5.3", "gpu_model": "h200", "quant": "bf16", "strategy": "balanced", "rank": "1"}
    assert targets(j["metalserve-node"])["10.0.0.20:9100"] == {"instance": "mon", "role": "none"}
    router = {"instance": "r1", "role": "router", "rack": "A", "sglang_instance": "router", "model": "glm-5.3"}
    assert targets(j["metalserve-sglang-router"])["10.0.0.9:29000"] == router


def test_health_is_probed_through_the_local_blackbox_exporter() -> None:
    health = jobs(site())["metalserve-health"]
    assert health["metrics_path"] == "/probe" and health["params"] == {"module": ["http_2xx"]}
    assert health["relabel_configs"] == [{"source_labels": ["__address__"], "target_label": "__param_target"},
                                         {"target_label": "__address__", "replacement": "127.0.0.1:9115"}]


def test_a_server_without_metrics_is_probed_but_not_scraped() -> None:
    hv = hostvars()
    hv["m1"]["sglang_metrics"] = False
    j = jobs(plan_site(hv, groups()))
    assert "10.0.0.4:30000" not in targets(j["metalserve-sglang"])
    assert "http://10.0.0.4:30000/health" in targets(j["metalserve-health"])


def test_a_server_listening_on_loopback_only_is_named() -> None:
    hv = hostvars()
    hv["a1"]["sglang_host"] = "127.0.0.1"
    hv["r1"]["ansible_host"] = "10.0.0.1"  # the router on the same machine reaches it
    s = plan_site(hv, groups())
    assert any("a1 listens on 127.0.0.1 only; the Prometheus of the monitoring group cannot scrape it" in w
               for w in s["plans"]["a1"]["warnings"])


def test_alertmanagers_and_interval_reach_the_configuration() -> None:
    hv = hostvars()
    hv["mon"].update(monitoring_alertmanagers=["am.example:9093"], monitoring_scrape_interval=5)
    doc = yaml.safe_load(plan_site(hv, groups())["monitoring"]["files"]["prometheus"]["content"])
    assert doc["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["am.example:9093"]}]}]}
    assert doc["global"] == {"scrape_interval": "5s", "scrape_timeout": "5s", "evaluation_interval": "5s"}


# --- the monitoring firewall ---------------------------------------------------------------------------------------

def test_guarded_ports_are_the_exporters_the_router_metrics_and_a_members_port() -> None:
    plans = site()["plans"]
    guarded = {h: p["monitoring"]["guarded_ports"] for h, p in plans.items()}
    assert guarded == {"a1": [9100, 9400], "b1": [9100, 9400], "b2": [9100, 9400, 30000], "m1": [5000, 9100],
                       "r1": [9100, 29000], "mon": [9100]}


def test_the_allow_list_is_the_monitoring_hosts_and_the_allowed_sources() -> None:
    hv = hostvars()
    hv["mon"]["monitoring_allowed_sources"] = ["192.168.7.0/24", "fd00::10"]
    hv["mon"]["ansible_facts"] = {"default_ipv4": {"address": "10.1.0.20"}}
    text = plan_site(hv, groups())["plans"]["b2"]["monitoring"]["files"]["firewall"]["content"]
    assert "table inet metalserve_monitoring\ndelete table inet metalserve_monitoring\n" in text
    assert "elements = { 10.0.0.20, 10.1.0.20, 192.168.7.0/24 }" in text and "elements = { fd00::10 }" in text
    assert "meta nfproto ipv4 tcp dport { 9100, 9400, 30000 } ip saddr != @monitors_v4 drop" in text
    assert "policy accept" in text and 'iifname "lo" accept' in text


def test_without_monitoring_hosts_or_sources_no_table_is_written() -> None:
    hv = hostvars()
    gr = groups()
    del gr["monitoring"]
    s = plan_site(hv, gr)
    assert all("firewall" not in p["monitoring"]["files"] for p in s["plans"].values())
    assert any("no `monitoring` group and no monitoring_allowed_sources" in w for w in s["monitoring"]["warnings"])


def test_a_monitoring_host_without_a_known_ip_leaves_the_table_to_site_yml() -> None:
    hv = hostvars()
    hv["mon"]["ansible_host"] = "mon.example"
    s = plan_site(hv, groups())
    assert s["errors"] == {}
    assert s["plans"]["b2"]["monitoring"]["files"]["firewall"]["content"] is None
    assert any(r["what"] == "monitoring firewall" and "mon" in r["source"] for r in s["plans"]["b2"]["resolved"])


def test_a_bad_allowed_source_is_refused() -> None:
    hv = hostvars()
    hv["mon"]["monitoring_allowed_sources"] = ["10.0.0.0/33"]
    assert any("monitoring_allowed_sources: '10.0.0.0/33' is neither an IP address nor a network" in m
               for m in plan_site(hv, groups())["errors"]["mon"])


def test_source_networks_split_by_family() -> None:
    # 10.0.0.1 lies inside 10.0.0.0/24: both in one interval set is what nft refuses ("conflicting intervals")
    want = (["10.0.0.0/24"], ["fd00::/64"])
    assert firewall.source_networks(["10.0.0.1", "10.0.0.0/24", "fd00::/64"]) == want


# --- the node's files ------------------------------------------------------------------------------------------

def test_exporter_files_follow_the_vendor() -> None:
    plans = site()["plans"]
    assert set(plans["a1"]["monitoring"]["files"]) == {"node_exporter_defaults", "dcgm_dropin", "firewall",
                                                       "firewall_unit"}
    dropin = plans["a1"]["monitoring"]["files"]["dcgm_dropin"]["content"]
    # dcgm-exporter's own flags: -f/--collectors, -a/--address (NVIDIA/dcgm-exporter pkg/cmd/app.go)
    assert "ExecStart=\nExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/metalserve-counters.csv -a :9400" in dropin
    amd = plans["m1"]["monitoring"]["files"]["amd_unit"]["content"]
    assert ("--privileged --network=host --device=/dev/dri --device=/dev/kfd -v /sys:/sys:ro "
            "docker.io/rocm/device-metrics-exporter:v1.5.4") in amd
    assert 'ARGS="--web.listen-address=:9100"' in plans["r1"]["monitoring"]["files"]["node_exporter_defaults"]["content"]
    assert set(plans["r1"]["monitoring"]["files"]) == {"node_exporter_defaults", "firewall", "firewall_unit"}


def test_rendered_holds_the_monitoring_files() -> None:
    s = site()
    files = render.render_all(s["plans"], "test", site_monitoring=s["monitoring"])
    assert {"monitoring/prometheus.yml", "monitoring/metalserve.rules.yml", "monitoring/grafana-dashboard.json",
            "b2/files/etc/metalserve/monitoring-firewall.nft",
            "b2/files/etc/systemd/system/metalserve-monitoring-firewall.service"} <= set(files)
    assert files["monitoring/metalserve.rules.yml"][0] == s["monitoring"]["files"]["rules"]["content"]


# --- metric names come from the exporters ----------------------------------------------------------------------

def exposed_names() -> set[str]:
    names = {"up", "probe_success"}
    for line in (MON / "sglang-0.5.23-metrics.txt").read_text().splitlines():
        name, kind = line.split()
        # prometheus_client's exposition: a Counter keeps its _total name, a Histogram adds _bucket/_sum/_count
        names |= {name} | ({f"{name}_bucket", f"{name}_sum", f"{name}_count"} if kind == "Histogram" else set())
    for fixture in ("sglang-router-0.3.2.metrics", "node-exporter-1.5.0.metrics"):
        text = (MON / fixture).read_text()
        names |= {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{| )", text, re.M)}
    counters = (ROOT / "roles" / "monitoring" / "files" / "metalserve-counters.csv").read_text()
    names |= {line.split(",")[0] for line in counters.splitlines() if line and not line.startswith("#")}
    names |= {line.strip().lower() for line in (MON / "amd-device-metrics-exporter.fields").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    return names


def referenced(expr: str) -> set[str]:
    return {m for m in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{", expr) if not m.startswith("metalserve:")}


def test_every_metric_the_rules_and_dashboard_read_is_one_an_exporter_serves() -> None:
    s = site()
    rules = yaml.safe_load(s["monitoring"]["files"]["rules"]["content"])
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    board = json.loads(s["monitoring"]["files"]["dashboard"]["content"])
    exprs += [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    used = set().union(*(referenced(e) for e in exprs))
    assert {"sglang:prompt_tokens_total", "sglang:num_running_reqs", "smg_worker_health", "DCGM_FI_DEV_XID_ERRORS",
            "node_infiniband_state_id", "gpu_ecc_uncorrect_total"} <= used
    assert sorted(used - exposed_names()) == []


def test_our_dcgm_field_list_is_nvidias_defaults_plus_fields_nvidia_lists() -> None:
    nvidia = dict(line.split() for line in (MON / "dcgm-exporter-default-counters.fields").read_text().splitlines()
                  if line and not line.startswith("#"))
    ours = [line.split(",")[0] for line in
            (ROOT / "roles" / "monitoring" / "files" / "metalserve-counters.csv").read_text().splitlines()
            if line and not line.startswith("#")]
    assert set(ours) <= set(nvidia)
    added = sorted(f for f in ours if nvidia[f] == "listed")
    assert added == ["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
                     "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                     "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"]


# --- the dashboard ----------------------------------------------------------------------------------------------------

def test_dashboard_has_a_datasource_variable_and_a_row_per_instance() -> None:
    board = json.loads(site()["monitoring"]["files"]["dashboard"]["content"])
    assert board["templating"]["list"] == [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                            "query": "prometheus", "current": {}, "hide": 0}]
    rows = [p for p in board["panels"] if p["type"] == "row"]
    assert [r["title"] for r in rows] == ["glm-5.3 on a1 (h200/fp8/high-throughput)", "pair on b1, b2 (h200/bf16/balanced)",
                                          "glm-5.3 on m1 (mi355x/fp8/balanced)"]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert all(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in panels)
    assert all(t["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for p in panels for t in p["targets"])
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for p in board["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24  # Grafana's grid is 24 columns wide
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"panel {p['id']} overlaps another"
                cells.add((x, y))


def test_dashboard_draws_the_cookbooks_number_beside_the_measured_one() -> None:
    board = json.loads(site()["monitoring"]["files"]["dashboard"]["content"])
    throughput = [p for p in board["panels"] if p["title"].startswith("Throughput per GPU")]
    by_row = {i: [t["expr"] for t in p["targets"]] for i, p in enumerate(throughput)}
    # h200/fp8/high-throughput: 2440 tok/s/GPU at 64, 2558 at 256 (data/models/glm-5.3/benchmarks.yml, the cookbook's)
    assert by_row[0][1:] == ["vector(2440)", "vector(2558)"]
    assert "/ 8" in by_row[0][0] and 'head="a1"' in by_row[0][0]
    assert by_row[1][1:] == [] and "/ 16" in by_row[1][0]  # bf16 TP16: no published number upstream
    amd = [t["expr"] for p in board["panels"] for t in p.get("targets", []) if 'instance=~"m1"' in t["expr"]]
    assert amd and all(e.split("{")[0].split("(")[-1].startswith("gpu_") for e in amd)


# --- the alert rules through promtool ------------------------------------------------------------------------------

def test_generated_rules_pass_promtool_check(tmp_path: Path) -> None:
    d = rules_dir(tmp_path, site()["monitoring"]["files"]["rules"]["content"])
    proc = subprocess.run([promtool(), "check", "rules", str(d / "metalserve.rules.yml")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"SUCCESS: \d+ rules found", proc.stdout)


def test_generated_configuration_passes_promtool_check(tmp_path: Path) -> None:
    s = site()
    rules = tmp_path / "metalserve.rules.yml"
    rules.write_text(s["monitoring"]["files"]["rules"]["content"])
    config = tmp_path / "prometheus.yml"
    config.write_text(s["monitoring"]["files"]["prometheus"]["content"].replace(monitoring.RULES_FILE, str(rules)))
    proc = subprocess.run([promtool(), "check", "config", str(config)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("test_file", PROMTOOL_TESTS, ids=lambda p: p.name)
def test_promtool_rule_tests(test_file: Path, tmp_path: Path) -> None:
    d = rules_dir(tmp_path, site()["monitoring"]["files"]["rules"]["content"])
    proc = subprocess.run([promtool(), "test", "rules", test_file.name], cwd=d, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_every_alert_has_a_firing_and_a_quiet_test() -> None:
    s = site()
    alerts = {r["alert"] for g in yaml.safe_load(s["monitoring"]["files"]["rules"]["content"])["groups"]
              for r in g["rules"] if "alert" in r}
    firing: set[str] = set()
    quiet: set[str] = set()
    for test_file in PROMTOOL_TESTS:
        for test in yaml.safe_load(test_file.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case["exp_alerts"] else quiet).add(case["alertname"])
    assert alerts == firing == quiet == {
        "SGLangInstanceNotServing", "SGLangInstanceMemberDown", "SGLangRouterNotServing", "SGLangRouterWorkerUnhealthy",
        "MetalserveExporterDown", "GPUXidError", "GPUMemoryECCError", "NVLinkDown", "InfiniBandLinkDown",
        "WeightsDiskAlmostFull", "SGLangThroughputBelowCookbook"}


@pytest.mark.parametrize("setting,value,test_file", [
    ("monitoring_throughput_percent", 30, "throughput.test.yml"),
    ("monitoring_not_serving_minutes", 5, "serving.test.yml"),
    ("monitoring_weights_free_percent", 3, "hardware.test.yml"),
])
def test_settings_reach_the_rules_and_the_tests_notice(
        setting: str, value: int, test_file: str, tmp_path: Path) -> None:
    """The promtool tests can fail: with another threshold the same series no longer fire where they expect."""
    hv = copy.deepcopy(hostvars())
    hv["mon"][setting] = value
    d = rules_dir(tmp_path, plan_site(hv, groups())["monitoring"]["files"]["rules"]["content"])
    proc = subprocess.run([promtool(), "test", "rules", test_file], cwd=d, capture_output=True, text=True, check=False)
    assert proc.returncode != 0 and "FAILED" in proc.stdout + proc.stderr


_ALPHABET = ["a", "Z", "0", "1", " ", "\n", "\t", ":", "#", "-", "'", '"', "|", ">", "{", "[", "*", "&", "!", "%",
             "@", "`", ",", "?", "\\", "é", "\r", "\x85", "\u2028", "\x00", "yes", "null", "~", "0x1", "1e3", ".inf", "- ", ": ", " #",
             "\U0001f600", "\U000e0001", "\ufeff", "\u2029", "\x7f", "\ud7ff"]


def _random_doc(rng: Any, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([None, True, False, 0, -7, 3.5, 1e20, 2.5e-9, float("inf"), -float("inf"), 10**30])
    if kind < 5:
        return "".join(rng.choice(_ALPHABET) for _round in range(rng.randrange(0, 8)))
    if kind < 7:
        return {"".join(rng.choice(_ALPHABET) for _round in range(rng.randrange(0, 5))) + f"{i}": _random_doc(rng, depth + 1)
                for i in range(rng.randrange(0, 4))}
    return [_random_doc(rng, depth + 1) for _round in range(rng.randrange(0, 4))]


def test_dump_large_reads_back_as_written() -> None:
    """The hand-written emitter behind prometheus.yml, the rules and the stage views: whatever it writes, PyYAML's
    safe_load (the independent reader; Prometheus and Ansible read YAML the same way for these types) reads back
    as the same document, over 5000 random documents of awkward strings (indicators, reserved words, newlines,
    tabs, trailing spaces, carriage returns)."""
    import random
    rng = random.Random(20261201)
    for _round in range(5000):
        doc = {"root": _random_doc(rng)}
        text = monitoring.dump_large(doc)
        assert yaml.safe_load(text) == doc, text


def test_bad_site_wide_settings_are_each_refused_and_the_rest_of_the_site_is_planned() -> None:
    """Every host carries a site-wide setting (group_vars/all): two of the wrong type are both named on every host,
    by the role's argument spec (the plan does not stop at them), and another host's own mistake is still found."""
    hv = hostvars()
    for values in hv.values():
        values.update(monitoring_retention_days="two weeks", monitoring_scrape_interval=[15])
    hv["a1"]["sglang_strategy"] = "fastest"
    errors = plan_site(hv, groups())["errors"]
    for host in ("mon", "b1", "m1"):
        said = "\n".join(errors[host])
        assert "monitoring_retention_days: expected int (its argument spec), got str 'two weeks'" in said, host
        assert "monitoring_scrape_interval: expected int (its argument spec), got list [15]" in said, host
    assert any("fastest" in m for m in errors["a1"])


def test_a_limit_run_is_refused_while_the_site_wide_settings_it_reads_are() -> None:
    """Only the monitoring host carries the bad value (group_vars/monitoring): it alone is refused, but the others'
    firewall allow-lists are made from its settings, so a run limited to them depends on it (and is refused)."""
    from ansible_collections.metalserve.sglang.plugins.action.plan import _depends_on  # noqa: PLC0415

    hv = hostvars()
    hv["mon"]["monitoring_allowed_sources"] = {"prom": "192.0.2.7"}
    planned = plan_site(hv, groups())
    assert sorted(planned["errors"]) == ["mon"]
    assert "monitoring_allowed_sources: expected list (its argument spec), got dict" in planned["errors"]["mon"][0]
    assert planned["monitoring"]["settings_from"] == "mon" and planned["monitoring"]["settings_refused"]
    assert "mon" in _depends_on(planned["plans"], ["a1"], planned["monitoring"])
    good = plan_site(hostvars(), groups())
    assert _depends_on(good["plans"], ["a1"], good["monitoring"]) == {"a1"}


def test_a_type_the_argument_spec_refused_is_not_said_again_per_host() -> None:
    """The refusal names a site-wide setting of the wrong type once, in Ansible's validator's words (its argument
    spec, read by Ansible's own ArgumentSpecValidator), and keeps the plan's other problems."""
    hv = hostvars()
    for values in hv.values():
        values["monitoring_retention_days"] = "two weeks"
    hv["a1"]["sglang_strategy"] = "fastest"
    specs = {"monitoring": variables.role_options("monitoring")}
    refused = {h: variables.role_errors(specs, {"monitoring_retention_days": "two weeks"}) for h in hv}
    assert "argument 'monitoring_retention_days'" in refused["mon"]["monitoring"][0]
    text = site_plan.refusal_text("mon", refused, plan_site(hv, groups())["errors"], len(hv), len(hv))
    assert text.count("monitoring_retention_days") == 2  # the refusal and what the spec wants, once for every host
    assert "- a1: sglang_strategy: 'fastest'" in text


def test_each_refused_setting_of_a_stage_is_its_own_line() -> None:
    """Two values of one role's settings that its argument spec refuses: two problems of the host, each naming its
    variable (the refusal lists each on its own line under the host)."""
    hv = hostvars()
    hv["a1"].update(model_weights_poll="often", model_weights_timeout="long")
    problems = plan_site(hv, groups())["errors"]["a1"]
    assert any(m.startswith("model_weights_poll: expected int") for m in problems), problems
    assert any(m.startswith("model_weights_timeout: expected int") for m in problems), problems
    assert not any("\n" in m for m in problems)


@pytest.mark.parametrize("name, value", [
    ("monitoring_prometheus_port", 70000), ("monitoring_blackbox_port", 0), ("monitoring_scrape_interval", -15),
    ("monitoring_retention_days", 0), ("monitoring_not_serving_minutes", 0), ("monitoring_weights_free_percent", -5),
    ("monitoring_throughput_percent", 150), ("monitoring_dashboard_dir", "relative/dir"),
    ("monitoring_dashboard_dir", "/../../escaped")])
def test_a_site_wide_value_out_of_range_is_refused_on_the_host_it_is_read_from(name: str, value: Any) -> None:
    """TCP ports are 1-65535; Prometheus needs a positive interval and retention; a percentage of free disk or of the
    cookbook's throughput above 100 or below 1 never or always fires; the dashboard folder is a path on the
    monitoring hosts, which rendered/ mirrors under the host's folder."""
    hv = hostvars()
    hv["mon"][name] = value
    planned = plan_site(hv, groups())
    assert sorted(planned["errors"]) == ["mon"], planned["errors"]
    assert any(m.startswith(f"{name}: {value!r}" if isinstance(value, str) else f"{name}: {value} is out of range")
               for m in planned["errors"]["mon"]), planned["errors"]["mon"]
    assert planned["monitoring"]["settings_refused"]


def test_every_site_wide_value_out_of_range_is_said_at_once() -> None:
    hv = hostvars()
    hv["mon"].update(monitoring_prometheus_port=70000, monitoring_scrape_interval=0, monitoring_retention_days=0)
    said = "\n".join(plan_site(hv, groups())["errors"]["mon"])
    for name in ("monitoring_prometheus_port", "monitoring_scrape_interval", "monitoring_retention_days"):
        assert f"{name}: " in said, name


def test_every_bad_entry_of_a_site_wide_list_is_named_at_once() -> None:
    """Each bad allowed source and each alertmanager with a scheme or a path (promtool refuses those:
    test_real_validators), in one message."""
    hv = hostvars()
    hv["mon"].update(monitoring_allowed_sources=["10.0.0.0/33", "10.0.0.0/8", "10.0.0.300"],
                     monitoring_alertmanagers=["http://am1:9093", "am2:9093", "am3:9093/api"])
    said = "\n".join(plan_site(hv, groups())["errors"]["mon"])
    assert "'10.0.0.0/33', '10.0.0.300' are neither an IP address nor a network" in said
    assert "'http://am1:9093', 'am3:9093/api' are not host:port" in said


def test_alertmanagers_as_host_port_reach_prometheus() -> None:
    hv = hostvars()
    hv["mon"]["monitoring_alertmanagers"] = ["am1.example.com:9093", "[fd00::1]:9093", "10.0.0.7:9093"]
    doc = yaml.safe_load(site(hv)["monitoring"]["files"]["prometheus"]["content"])
    assert doc["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == hv["mon"]["monitoring_alertmanagers"]
