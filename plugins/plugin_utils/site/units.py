# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd units, environment files and docker command lines for SGLang servers and routers. Pure.

The serving role writes what these functions return and render.yml shows the same text, so what an
operator previews is what lands on the node. Secrets never pass through here: the environment file
gets the names of secret variables only, and the role appends their values with no_log.
"""
from __future__ import annotations

import functools
import re
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_@%+=:,./\-\[\]]+$")


@functools.lru_cache(maxsize=None)
def docker_forms() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "sglang" / "docker.yml")


def systemd_quote(token: str) -> str:
    """One argv token for ExecStart: % and $ escaped, quoted when it holds anything else special."""
    text = token.replace("%", "%%").replace("$", "$$")
    if SAFE_TOKEN.match(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def exec_line(argv: list[str]) -> str:
    """ExecStart= value, one flag per continuation line for readability."""
    out = ""
    for i, token in enumerate(argv):
        sep = "" if i == 0 else (" \\\n    " if token.startswith("--") else " ")
        out += sep + systemd_quote(token)
    return out


def env_file(env: dict[str, str], header: str) -> str:
    """KEY=value lines readable by both systemd's EnvironmentFile and docker --env-file."""
    lines = [f"# {header}"]
    for key in sorted(env):
        value = str(env[key])
        if not ENV_NAME.match(key):
            raise RecipeError(f"sglang_env: {key!r} is not an environment variable name")
        if "\n" in value or value[:1] in ("'", '"'):
            raise RecipeError(f"sglang_env.{key}: values cannot hold newlines or start with a quote")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def weights_dir(plan: dict[str, Any]) -> str | None:
    argv = plan["argv"]
    path = argv[argv.index("--model-path") + 1]
    return path if path.startswith("/") else None


HF_TOKEN_IN_CONTAINER = "/run/secrets/hf_token"


def docker_run(plan: dict[str, Any], runtime: dict[str, Any], docker: dict[str, Any] | None = None) -> list[str]:
    """`docker run ...` for a server plan, in the cookbook's form plus our name, env file and mounts."""
    docker = docker or docker_forms()
    rec = plan["recipe"]
    name = f"sglang-{plan['instance']}"
    argv = ["/usr/bin/docker", "run", "--rm", "--name", name, "--env-file", runtime["env_file"]]
    argv += list(docker["vendor"][rec["vendor"]]) + list(docker["common"])
    networked = len(plan["members"]) > 1 or bool(rec.get("pd_role"))
    if networked:
        argv.append("--network=host")
    else:
        argv += ["-p", f"{rec['port']}:{rec['port']}"]
    if runtime.get("rdma") and networked:
        argv += list(docker["rdma"])
        if rec["vendor"] == "amd":
            argv += list(docker["rdma_amd_extra"])
    weights = weights_dir(plan)
    if weights:
        argv += ["-v", f"{weights}:{weights}:ro"]
    else:
        argv += ["-v", f"{runtime['hf_cache']}:{docker['hf_cache']}"]
    if runtime.get("secrets_config"):
        argv += ["-v", f"{runtime['secrets_config']}:{runtime['secrets_config']}:ro"]
    if runtime.get("hf_token_file"):
        # a file, not --env-file: `docker inspect` shows a container's environment to anyone with the socket
        argv += ["-v", f"{runtime['hf_token_file']}:{HF_TOKEN_IN_CONTAINER}:ro"]
    if runtime.get("image_id"):
        argv += ["--label", f"metalserve.image-id={runtime['image_id']}"]
    return argv + [runtime["image"], "sglang", "serve"] + serve_tail(plan, runtime)


def serve_tail(plan: dict[str, Any], runtime: dict[str, Any]) -> list[str]:
    return list(plan["argv"]) + (["--config", runtime["secrets_config"]] if runtime.get("secrets_config") else [])


def server_argv(plan: dict[str, Any], runtime: dict[str, Any], docker: dict[str, Any] | None = None) -> list[str]:
    if runtime["method"] == "docker":
        return docker_run(plan, runtime, docker)
    return [runtime["sglang"], "serve"] + serve_tail(plan, runtime)


def service_account(settings: dict[str, Any], amd: bool = False) -> list[str]:
    """The system user, its GPU groups, and a private HOME systemd creates (caches land there)."""
    lines = [f"User={settings['user']}", f"Group={settings['group']}"]
    if amd:
        lines.append("SupplementaryGroups=video render")
    return lines + ["Environment=HOME=/var/lib/sglang-home", "StateDirectory=sglang-home",
                    "WorkingDirectory=/var/lib/sglang-home"]


def device_allowlist(vendor: str, rdma: bool) -> list[str]:
    """DevicePolicy=closed and the device nodes a server needs (data/sglang/devices.yml)."""
    table = read_yaml(DATA_DIR / "sglang" / "devices.yml")
    entries = list(table.get(vendor) or []) + (list(table["rdma"]) if rdma else [])
    return ["DevicePolicy=closed"] + [f"DeviceAllow={entry} rw" for entry in entries]


def _unit(description: str, after: list[str], wants: list[str], service: list[str],
          settings: dict[str, Any]) -> str:
    lines = ["# Managed by metalserve.sglang; local changes are overwritten.", "[Unit]",
             f"Description={description}",
             "After=" + " ".join(["network-online.target"] + after),
             "Wants=" + " ".join(["network-online.target"] + wants),
             f"StartLimitIntervalSec={settings['start_limit_interval']}",
             f"StartLimitBurst={settings['start_limit_burst']}", "",
             "[Service]", *service, "", "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


def server_unit(plan: dict[str, Any], runtime: dict[str, Any], settings: dict[str, Any],
                docker: dict[str, Any] | None = None) -> str:
    """The systemd unit of one server instance member."""
    rec = plan["recipe"]
    name = f"sglang-{plan['instance']}"
    head = plan["rank"] == 0
    role = f"PD {rec['pd_role']} " if rec.get("pd_role") else ""
    where = f", rank {plan['rank']} of {len(plan['members'])}" if len(plan["members"]) > 1 else ""
    description = (f"SGLang {role}server {plan['instance']}: {rec['model']} {rec['gpu']}/{rec['quant']}/"
                   f"{rec['strategy']}{where}")
    after = list(settings.get("after") or [])
    service = ["Type=exec", f"EnvironmentFile={runtime['env_file']}"]
    if runtime["method"] == "docker":
        after = ["docker.service"] + after
        service += [f"ExecStartPre=-/usr/bin/docker rm -f {name}",
                    "ExecStart=" + exec_line(server_argv(plan, runtime, docker)),
                    f"ExecStop=/usr/bin/docker stop --time {settings['stop_timeout']} {name}"]
    else:
        service += service_account(settings, amd=rec["vendor"] == "amd")
        service += ["ExecStart=" + exec_line(server_argv(plan, runtime, docker))]
        service += settings.get("hardening") or []
        if settings.get("device_allowlist"):
            service += device_allowlist(rec["vendor"], bool(runtime.get("rdma", True)))
    if head and settings.get("health_wait"):
        service.append(f"ExecStartPost={settings['python']} {settings['health_script']} "
                       f"--url http://127.0.0.1:{rec['port']}/health --timeout {settings['timeout_start'] - 30} --pid $MAINPID")
    service += [f"TimeoutStartSec={settings['timeout_start']}", f"TimeoutStopSec={settings['stop_timeout'] + 30}",
                "Restart=on-failure", f"RestartSec={settings['restart_sec']}",
                "LimitMEMLOCK=infinity", f"LimitNOFILE={settings['limit_nofile']}",
                "StandardOutput=journal", "StandardError=journal", f"SyslogIdentifier={name}"]
    wants = list(settings.get("wants") or [])
    return _unit(description, after + wants, wants, service, settings)


def router_unit(plan: dict[str, Any], runtime: dict[str, Any], settings: dict[str, Any]) -> str:
    name = f"sglang-{plan['instance']}"
    if runtime["method"] == "docker":
        argv = ["/usr/bin/docker", "run", "--rm", "--name", name, "--network=host", runtime["image"],
                "python3", "-m", "sglang_router.launch_router"] + list(plan["argv"])
        service = [f"ExecStartPre=-/usr/bin/docker rm -f {name}", "ExecStart=" + exec_line(argv),
                   f"ExecStop=/usr/bin/docker stop --time 30 {name}"]
        after = ["docker.service"]
    else:
        argv = [runtime["python"], "-m", "sglang_router.launch_router"] + list(plan["argv"])
        service = service_account(settings) + ["ExecStart=" + exec_line(argv)]
        service += settings.get("hardening") or []
        after = []
    service = ["Type=exec"] + service + [
        f"ExecStartPost={settings['python']} {settings['health_script']} --url http://127.0.0.1:{plan['port']}/health "
        "--timeout 120 --pid $MAINPID",
        "Restart=on-failure", f"RestartSec={settings['restart_sec']}", f"LimitNOFILE={settings['limit_nofile']}",
        "StandardOutput=journal", "StandardError=journal", f"SyslogIdentifier={name}"]
    return _unit(f"SGLang router ({plan['mode']}) for {', '.join(plan['workers'])}", after, [], service, settings)
