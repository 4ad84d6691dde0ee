"""What ran on the real H200 machines agrees with what the parsers and checks compute from the raw captures."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.module_utils import gpu_probe

from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import preflight as pc
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.tests.helpers import FIXTURES, raw_from_capture

RUNS = FIXTURES / "device-runs"
CATALOG = load_catalog()
CASES = [("h200-x1", FIXTURES / "nvidia" / "h200-x1-fc", 1), ("h200-x2", FIXTURES / "nvidia" / "h200-x2-fc", 2)]


def module_output(path: Path) -> dict[str, Any]:
    """`ansible localhost -m ...` with the yaml result format: 'localhost | SUCCESS => ' then YAML."""
    return yaml.safe_load(path.read_text().split("=>", 1)[1])


@pytest.mark.parametrize("tag,capture,count", CASES)
def test_gpu_facts_on_the_machine_match_the_parsers(tag: str, capture: Path, count: int) -> None:
    real = module_output(RUNS / tag / "gpu_facts.txt")["ansible_facts"]["metalserve_gpu"]
    assert (real["vendor"], real["source"], real["gpu_id"], real["count"]) == ("nvidia", "nvidia-smi", "h200", count)
    assert (real["driver_version"], real["driver_flavor"], real["cuda_version"]) == ("580.159.04", "open", "13.0")
    assert real["nvswitch"] == {"pci_count": 0, "present": False}
    assert "nvidia" in real["kernel_modules"] and real["secure_boot"] is None
    computed = gpu_probe.compose(raw_from_capture(capture), CATALOG.gpus)
    for key in ("gpu_id", "count", "models", "memory_mib_per_gpu", "driver_version", "driver_flavor", "cuda_version",
                "nvlink"):
        assert computed[key] == real[key], key
    assert [g["pci_device_id"] for g in real["gpus"]] == ["0x2335"] * count
    if count == 2:
        assert real["nvlink"]["links"] == {"0-1": "NV18"} and real["fabric_manager"]["registered"] is True


@pytest.mark.parametrize("tag,capture,count", CASES)
def test_fabric_facts_on_the_machine(tag: str, capture: Path, count: int) -> None:
    real = module_output(RUNS / tag / "fabric_facts.txt")["ansible_facts"]["metalserve_fabric"]
    assert (real["device_count"], real["active_ports"], real["uverbs_present"]) == (0, [], False)
    assert real["dev_infiniband"] == ["rdma_cm"] and real["memlock"] == {"soft": -1, "hard": -1}
    assert real["interfaces"] == {"lo": ["127.0.0.1"]} and "127.0.0.1" in real["resolved"]["localhost"]


@pytest.mark.parametrize("tag,capture,count", CASES)
def test_preflight_on_the_machine(tag: str, capture: Path, count: int) -> None:
    refused = (RUNS / tag / "preflight-fp8.txt").read_text()
    assert refused.rstrip().endswith("rc=2")
    gpu = gpu_probe.compose(raw_from_capture(capture), CATALOG.gpus)
    # the runs predate cookbook revisions: they rendered the seed page, 03d5035a (its h200/fp8/balanced cell)
    ran = {**yaml.safe_load((RUNS / tag / "fp8.vars").read_text()), "sglang_cookbook_revision": "03d5035a"}
    plan = site_plan.host_plan(tag, {tag: ran}, {})
    report = pc.check_host(plan, {tag: {"gpu": gpu, "fabric": {}, "weights_staged": True}}, CATALOG, pc.Limits())
    assert report.problems[0] in refused  # the same words the role printed there
    assert f"this node has {count} (NVIDIA H200)" in report.problems[0]
    passed = (RUNS / tag / "preflight-site.txt").read_text()
    assert passed.rstrip().endswith("rc=0") and "failed=0" in passed
