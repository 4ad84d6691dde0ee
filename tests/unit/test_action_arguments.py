"""Every action plugin refuses a wrong argument before it does anything, with Ansible's own words.

Each case runs the real action through ansible-playbook (localhost, one play) and compares the task's message with
two sources outside the action: what AnsibleModule says when the plugin's module file itself is given the same
arguments (Ansible's module-side validator), and the option names ansible-doc documents for the plugin.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.metalserve.sglang.tests.helpers import ROOT
from ansible_collections.metalserve.sglang.tests.unit.test_plugin_docs import ansible_doc

ACTIONS = sorted(p.stem for p in (ROOT / "plugins" / "action").glob("*.py") if p.stem != "__init__")
# the least each action needs besides the wrong argument (so that the wrong one is the only mistake)
MINIMAL: dict[str, dict[str, Any]] = {
    "acceptance": {"plans": {}}, "bench_report": {"results": "r.jsonl", "host": "h", "model": "glm-5.3",
                                                  "cell": {}, "gpus": 8, "out_dir": "out"},
    "check_variables": {"roles": ["preflight"]}, "gpu_facts": {}, "plan": {}, "preflight": {"plans": {}},
    "import_page": {"dest": "models"}, "node_probe": {"plan": {}},
    "render_plan": {"dest": "rendered"}, "size_report": {"result": {"rows": []}, "dest": "rendered"},
    "upgrade_plan": {"dest": "rendered/upgrade"}, "upgrade_record": {"dest": "rendered/upgrade", "event": "report"},
    "weights_wait": {"jid": "1"},
}
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    **{f"{name}-unknown": (name, {**MINIMAL[name], "bogus": 1}) for name in ACTIONS},
    "acceptance-missing": ("acceptance", {}),
    "bench_report-missing": ("bench_report", {"host": "h"}),
    "check_variables-wrong-type": ("check_variables", {"hosts": ["localhost"], "fail_on_error": "maybe"}),
    "preflight-missing": ("preflight", {"fail": False}),
    "import_page-missing": ("import_page", {"page": "minimax-m3.jsx"}),
    "import_page-type": ("import_page", {"dest": "models", "gpu_platforms": "h100"}),
    "render_plan-missing": ("render_plan", {"template_dir": "templates"}),
    "size_report-missing": ("size_report", {"dest": "rendered"}),
    "weights_wait-missing": ("weights_wait", {"poll": 5}),
    "upgrade_plan-missing": ("upgrade_plan", {"canary": "n1"}),
    "upgrade_record-missing": ("upgrade_record", {"event": "report"}),
    "upgrade_plan-type": ("upgrade_plan", {"dest": "rendered/upgrade", "wave_by": "zone"}),
    "upgrade_record-type": ("upgrade_record", {"dest": "rendered/upgrade", "event": "report", "verify": "all good"}),
    "acceptance-type": ("acceptance", {"plans": {}, "enforce": "perhaps"}),
    "bench_report-type": ("bench_report", {**MINIMAL["bench_report"], "gpus": "eight"}),
    "gpu_facts-type": ("gpu_facts", {"platforms": ["h200"]}),
    "plan-type": ("plan", {"fail_on_error": "maybe"}),
    "preflight-type": ("preflight", {"plans": {}, "vram_headroom": "lots"}),
    "weights_wait-type": ("weights_wait", {"jid": "1", "poll": "soon"}),
    "node_probe-missing": ("node_probe", {"stage": "server"}),
    "node_probe-type": ("node_probe", {"plan": {}, "stage": "everything"}),
}
# arguments that fit: the same play runs them to the end (what is validated is what the action then uses)
FITTING: dict[str, tuple[str, dict[str, Any]]] = {
    "check_variables-fits": ("check_variables", {"roles": ["preflight", "monitoring"], "hosts": ["localhost"]}),
    "check_variables-every-role": ("check_variables", {"hosts": ["localhost"]}),
    "render_plan-fits": ("render_plan", {"dest": "rendered"}),
}


def test_every_action_has_cases() -> None:
    assert ACTIONS == sorted(MINIMAL) and len(ACTIONS) >= 8
    assert {name for name, _args in CASES.values()} == set(ACTIONS)


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every case as one task of one playbook on localhost; what each task returned."""
    work = tmp_path_factory.mktemp("actions")
    out = work / "results.json"
    every = {**CASES, **FITTING}
    tasks = [{"name": case, f"metalserve.sglang.{name}": args, "register": f"r_{i}", "ignore_errors": True}
             for i, (case, (name, args)) in enumerate(every.items())]
    collected = ", ".join(f"'{case}': r_{i}" for i, case in enumerate(every))
    tasks.append({"name": "Write what every task returned", "ansible.builtin.copy": {
        "dest": str(out), "content": "{{ {" + collected + "} | to_json }}", "mode": "0644"}})
    (work / "play.yml").write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CACHE_PLUGIN": "memory",
           "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".build" / "collections")}
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}",
                           # a host render_plan can plan (it plans the inventory itself): an H200 FP8 server
                           "-e", "sglang_gpu=h200 sglang_quant=fp8 sglang_strategy=low-latency", str(work / "play.yml")],
                          capture_output=True, text=True, env=env, cwd=work, check=False, timeout=300)
    assert proc.returncode == 0 and out.exists(), (proc.stdout + proc.stderr)[-4000:]
    return json.loads(out.read_text())


def same_words(msg: str) -> str:
    """Ansible lists the valid booleans from a set, in an order that changes from one process to the next."""
    head, sep, tail = msg.partition("Valid booleans include: ")
    return head + sep + ", ".join(sorted(tail.split(", "))) if sep else msg


def module_says(name: str, args: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    """What AnsibleModule, run from the plugin's module file with the same arguments, fails with."""
    module = importlib.import_module(f"ansible_collections.metalserve.sglang.plugins.modules.{name}")
    with patch_module_args({**args, "_ansible_module_name": f"metalserve.sglang.{name}"}), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)["msg"]


@pytest.mark.parametrize("case", list(CASES))
def test_a_wrong_argument_is_refused_as_the_module_would(case: str, refusals: dict[str, dict[str, Any]],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    name, args = CASES[case]
    got = refusals[case]
    assert got.get("failed") is True, got
    assert same_words(got["msg"]) == same_words(module_says(name, args, capsys))
    assert not set(got) & {"plans", "report", "rows", "changed_files", "ansible_facts"}, "refused before any work"


@pytest.fixture(scope="module")
def action_docs() -> dict[str, Any]:
    return ansible_doc("module", ACTIONS)


@pytest.mark.parametrize("name", ACTIONS)
def test_an_unknown_option_is_named_with_the_documented_ones(name: str, refusals: dict[str, dict[str, Any]],
                                                             action_docs: dict[str, Any]) -> None:
    documented = sorted(action_docs[f"metalserve.sglang.{name}"]["doc"]["options"])
    assert refusals[f"{name}-unknown"]["msg"] == (f"Unsupported parameters for (metalserve.sglang.{name}) module: bogus. "
                                                  f"Supported parameters include: {', '.join(documented)}.")


def test_arguments_that_fit_are_used(refusals: dict[str, dict[str, Any]]) -> None:
    fits = refusals["check_variables-fits"]
    assert not fits.get("failed") and fits["errors"] == {}, fits
    assert fits["msg"] == "the variables of 1 host(s) fit the argument specs of 2 role(s)"
    # without roles: every role of the collection (twelve, nftables the newest; counted by hand from roles/)
    every = refusals["check_variables-every-role"]
    assert every["msg"] == "the variables of 1 host(s) fit the argument specs of 12 role(s)", every
    rendered = refusals["render_plan-fits"]
    assert not rendered.get("failed") and rendered["dest"].endswith("rendered") and "PLAN.md" in rendered["files"]


def test_missing_and_mistyped_arguments_read_as_ansible_writes_them(refusals: dict[str, dict[str, Any]]) -> None:
    assert refusals["bench_report-missing"]["msg"] == \
        "missing required arguments: cell, gpus, model, out_dir, results"
    assert refusals["weights_wait-missing"]["msg"] == "missing required arguments: jid"
    assert refusals["plan-type"]["msg"].startswith(
        "argument 'fail_on_error' is of type str and we were unable to convert to bool: ")
    assert refusals["weights_wait-type"]["msg"].startswith(
        "argument 'poll' is of type str and we were unable to convert to int: ")


def test_a_render_folder_inside_the_inventory_is_refused(tmp_path: Path) -> None:
    """Ansible reads every file of an inventory directory, and runs the executable ones as inventory scripts: an
    operator trial's second render.yml ran rendered/<host>/docker-run.sh on the controller."""
    from ansible_collections.metalserve.sglang.plugins.action.render_plan import inside_inventory  # noqa: PLC0415
    inventory = tmp_path / "site"
    inventory.mkdir()
    assert inside_inventory(inventory / "rendered", [str(inventory)]) == str(inventory)
    assert inside_inventory(inventory, [str(inventory)]) == str(inventory)
    assert inside_inventory(tmp_path / "rendered", [str(inventory)]) == ""
    (tmp_path / "hosts.ini").write_text("n\n")
    assert inside_inventory(tmp_path / "rendered", [str(tmp_path / "hosts.ini")]) == ""  # a file inventory
