"""data/node.yml read three ways (the plan's node.py, the lookup the roles use, the launcher the playbooks use) gives
one answer, and the docker command lines the collection writes keep docker's own order: options before the image,
the command after it (docker run --help: `docker run [OPTIONS] IMAGE [COMMAND] [ARG...]`)."""
from __future__ import annotations

import pytest
import yaml
from ansible.errors import AnsibleLookupError

from ansible_collections.metalserve.sglang.plugins.filter.python_launcher import python_launcher
from ansible_collections.metalserve.sglang.plugins.lookup.node import LookupModule
from ansible_collections.metalserve.sglang.plugins.plugin_utils import container, node
from ansible_collections.metalserve.sglang.tests.helpers import ROOT


def test_a_folder_is_filled_in_wherever_a_value_names_it() -> None:
    raw = yaml.safe_load((ROOT / "data" / "node.yml").read_text())
    assert raw["files"]["rocm_grub"].startswith("{grub_defaults}/") and raw["folders"]["grub_defaults"].startswith(
        "{service_defaults}/")
    assert node.path("rocm_grub") == f"{raw['folders']['service_defaults']}/grub.d/60-metalserve-rocm.cfg"
    assert node.unit_path("x.service") == f"{raw['folders']['units']}/x.service"
    assert node.expand({"keyring": "{apt_keyrings}/k.asc", "url": "https://x/{distribution}"}) == {
        "keyring": f"{raw['folders']['apt_keyrings']}/k.asc", "url": "https://x/{distribution}"}


def test_an_unknown_name_says_what_there_is() -> None:
    with pytest.raises(KeyError, match="'nope' is not among .*programs"):
        node.get("nope.docker")


def test_the_lookup_reads_the_same_values() -> None:
    lookup = LookupModule()
    assert lookup.run(["programs.docker", "firewalls.imex.unit"]) == [node.program("docker"),
                                                                      node.get("firewalls.imex")["unit"]]
    with pytest.raises(AnsibleLookupError, match="data/node.yml has no 'programs.dockr'"):
        lookup.run(["programs.dockr"])


def test_one_launcher_for_the_clients_on_a_node() -> None:
    uv = {"method": "uv", "python": "/opt/sglang/venvs/0.5.23/bin/python", "image": None}
    assert python_launcher(uv, mounts=["/a:/a"], env=["K"], host_network=True) == [uv["python"]]
    docker = {"method": "docker", "python": "python3", "image": "img:1"}
    assert python_launcher(docker, mounts=["/a:/a", "/t:/t:ro"], env=["OPENAI_API_KEY"], host_network=True) == [
        node.program("docker"), "run", "--rm", "--network=host", "-e", "OPENAI_API_KEY", "-v", "/a:/a", "-v", "/t:/t:ro",
        "img:1", "python3"]
    assert python_launcher(docker, mounts=["/c:/check_args.py:ro"], entrypoint=True) == [
        node.program("docker"), "run", "--rm", "-v", "/c:/check_args.py:ro", "--entrypoint", "python3", "img:1"]


def test_a_container_unit_starts_and_stops_by_its_name() -> None:
    docker = node.program("docker")
    assert container.run(["--network=host"], "img:1", ["python3", "-m", "x"], "sglang-r") == [
        docker, "run", "--rm", "--name", "sglang-r", "--network=host", "img:1", "python3", "-m", "x"]
    assert container.unit_lines("sglang-r", "START", 30) == [f"ExecStartPre=-{docker} rm -f sglang-r",
                                                             "ExecStart=START", f"ExecStop={docker} stop --time 30 sglang-r"]
