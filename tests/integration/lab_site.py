"""The lab site test_lab_site.py and test_lab_slices.py share (one bring-up, one set of converges per session):
tests/lab/lab.py's `full` shape over SSH as an unprivileged user with sudo, with an HF token, an API key and a
registry password set; converged at -vvv, again, then --check --diff. Destroyed at the end of the session, which
must leave no container, network or inventory behind."""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator

from ansible_collections.metalserve.sglang.tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "lab"))
import lab  # noqa: E402

NAME = "audit"
SECRETS = {"sglang_hf_token": "hf_AUDIT_token_5c1b2e9d", "sglang_api_key": "sk-AUDIT-key-77e1d0aa",
           "sglang_install_registry_password": "reg-AUDIT-pass-9f3a41"}


def bring_up() -> Iterator[dict]:
    lab.destroy(NAME)
    inv = lab.up(NAME, 4, "full", SECRETS)
    runs = {}
    try:
        # the second run counts the modules each task ran on the hosts (bench/callback_plugins/module_count.py)
        counts = lab.lab_dir(NAME) / "modules-second.json"
        count_env = {"ANSIBLE_CALLBACKS_ENABLED": "module_count", "BENCH_MODULE_COUNT": str(counts),
                     "ANSIBLE_CALLBACK_PLUGINS": str(ROOT / "bench" / "callback_plugins")}
        for key, extra in (("first", ["-vvv"]), ("second", []), ("check", ["--check", "--diff", "-v"])):
            proc = lab.converge(NAME, False, extra) if key == "first" else lab.run_ansible(
                ["ansible-playbook", "-i", str(inv), "playbooks/site.yml", "--skip-tags", lab.SKIP] + extra,
                quiet=key == "check", extra_env=count_env if key == "second" else None)
            runs[key] = proc
        modules = json.loads(counts.read_text()) if counts.exists() else {}
        yield {"inv": inv, "runs": runs, "hosts": lab.containers(NAME), "modules": modules}
    finally:
        lab.destroy(NAME)
        assert lab.containers(NAME) == []
        assert not lab.lab_dir(NAME).exists()
