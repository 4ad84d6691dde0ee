# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer of the docker CLI: `docker run` for every container the collection starts (servers, routers, the AMD
exporter, the node_acceptance probes, bench_serving, the parse check) and the start and stop of a unit whose process is
a container. Pure."""
from __future__ import annotations

from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node


def run(options: list[str], image: str, command: list[str], name: str | None = None) -> list[str]:
    """`docker run --rm [--name NAME] OPTIONS IMAGE COMMAND` as argv (the container goes when it stops)."""
    return [node.program("docker"), "run", "--rm", *(["--name", name] if name else []), *options, image, *command]


def unit_lines(name: str, exec_start: str, stop_timeout: int) -> list[str]:
    """A container unit's [Service] start and stop: the container of that name removed first (a crash leaves it
    behind), started by `exec_start` (the ExecStart= value), stopped by docker with the unit's stop timeout."""
    docker = node.program("docker")
    return [f"ExecStartPre=-{docker} rm -f {name}", f"ExecStart={exec_start}",
            f"ExecStop={docker} stop --time {stop_timeout} {name}"]


def python_in(install: dict[str, Any], options: list[str], entrypoint: bool = False) -> list[str]:
    """The argv that runs the Python of a node's SGLang install, up to the interpreter: the venv's python (uv), or
    python3 in its image (`docker run --rm OPTIONS IMAGE python3`; with `entrypoint`, python3 replaces the image's
    entrypoint). What follows is the script or `-m module` and its arguments."""
    if install.get("method") != "docker":
        return [str(install.get("python") or "")]
    if entrypoint:
        return run([*options, "--entrypoint", "python3"], str(install.get("image") or ""), [])
    return run(options, str(install.get("image") or ""), ["python3"])


def launcher(install: dict[str, Any], mounts: list[str] | None = None, env: list[str] | None = None,
             host_network: bool = False, entrypoint: bool = False) -> list[str]:
    """python_in() for a client on the node (bench_serving, the parse check, a measuring router): the host network when
    asked, the named environment variables passed in (their values stay in the client's environment), and each mount
    (`-v` SOURCE:TARGET[:ro])."""
    options = ["--network=host"] if host_network else []
    options += [part for name in env or [] for part in ("-e", str(name))]
    options += [part for mount in mounts or [] for part in ("-v", str(mount))]
    return python_in(install, options, entrypoint)
