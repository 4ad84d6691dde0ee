"""render.yml and site.yml judge every host's variables inside the plan, from the values the plan reads
(variables.site_errors over inventory_vars.site_inputs), instead of templating each host's variables a second time in
check_variables. This test holds the two paths to the same verdicts on a real Ansible inventory: Ansible's own
InventoryManager, VariableManager and HostVars template the values (group variables, templates, an undefined
variable), and check_variables' reading of that view is the reference."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import variables
from ansible_collections.metalserve.sglang.plugins.plugin_utils.plain_data import to_plain
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import inventory_vars

INVENTORY = """
all:
  vars:
    sglang_gpu: h200
    rack_timeout: 900
    sglang_server_health_timeout: "{{ rack_timeout }}"
  children:
    rack_a:
      vars: {model_weights_source: s3}
      hosts:
        n1: {model_weight_source: hf, sglang_server_health_timeout: soon}
        n2: {monitoring_prometheus_port: "{{ undefined_port }}"}
    rack_b:
      hosts:
        n3: {sglang_server_hf_token: hf_NOT_FOR_LOGS_0123456789, nvidia_driver_brnch: "580"}
        n4: {}
"""


def task_vars(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(tmp_path / "hosts.yml")])
    manager = VariableManager(loader=loader, inventory=inventory)
    # what a task sees: the groups, and Ansible's HostVars (each value templated when read)
    return {"groups": {g.name: [h.name for h in g.get_hosts()] for g in inventory.groups.values()},
            "hostvars": HostVars(inventory=inventory, variable_manager=manager, loader=loader)}


def reference(view_vars: dict[str, Any], hosts: list[str]) -> dict[str, dict[str, list[str]]]:
    """check_variables' reading: each host's HostVars view, every role, Ansible templating each value on access."""
    specs = {role: variables.role_options(role) for role in variables.all_roles()}
    names, secrets = variables.variable_names(specs), variables.secret_names(specs)
    out = {}
    for host in hosts:
        view = view_vars["hostvars"][host]
        values, broken = variables.read_values(names, view.__contains__, lambda n, v=view: to_plain(v[n]), secrets)
        found = variables.host_errors(specs, values, list(view), broken)
        if found:
            out[host] = found
    return out


def test_the_plan_judges_variables_as_check_variables_does(tmp_path: Path) -> None:
    tv = task_vars(tmp_path)
    broken: dict[str, list[str]] = {}
    names: dict[str, list[str]] = {}
    hostvars, _groups = inventory_vars.site_inputs(tv, broken, names)
    assert sorted(hostvars) == ["n1", "n2", "n3", "n4"]
    ours = variables.site_errors(hostvars, names)
    ref = reference(tv, sorted(hostvars))
    # a value that cannot be templated: check_variables files it under "templating"; the plan reads the host without
    # it and names it among the host's own problems (once, in the same message)
    assert ref["n2"].pop("templating") == broken["n2"]
    assert "undefined_port" in broken["n2"][0]
    if not ref["n2"]:
        ref.pop("n2")
    assert ours == ref
    # and the reference found what a reader expects: the wrong choice (from a group), the wrong type, the typo near
    # a variable of ours, the typo under a role's prefix; n4 fits (its timeout templated from an inventory variable)
    assert set(ours) == {"n1", "n2", "n3"}
    assert any("model_weights_source must be one of" in m for m in ours["n1"]["model_weights"])
    assert any("model_weight_source" in m and "model_weights_source" in m for m in ours["n1"]["model_weights"])
    assert any("sglang_server_health_timeout" in m for m in ours["n1"]["sglang_server"])
    assert any("nvidia_driver_brnch" in m for m in ours["n3"]["nvidia_driver"])
    assert "hf_NOT_FOR_LOGS" not in variables.failure_text(ours, 4)
