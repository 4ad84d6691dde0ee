# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files a node gets for its plan: systemd units, the environment file, the instance firewall. Pure.

node_files() runs once per host when the site is planned; render.yml writes its result to rendered/ and
the serving roles write the same text to the node, so what an operator previews is what lands there.
Secrets never pass through a plan: the environment file in it holds a placeholder where a secret goes,
and the role fills it (env_file() with the value, under no_log).
"""
from __future__ import annotations

import functools
import re
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import container, node, systemd
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, cached_yaml, load_catalog, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import firewall, placement, replicas, runtime, stages

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HEADER = systemd.HEADER
#: one argv token for ExecStart, and an ExecStart= value (plugin_utils/systemd.py writes every unit's text)
systemd_quote = systemd.quote
exec_line = systemd.exec_line


@functools.lru_cache(maxsize=None)
def docker_forms() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "sglang" / "docker.yml")


def check_env(env: dict[str, Any], variable: str = "sglang_env") -> None:
    """Names and values both systemd's EnvironmentFile and docker --env-file read the same way."""
    for key, value in env.items():
        if not ENV_NAME.match(str(key)):
            raise RecipeError(f"{variable}: {str(key)!r} is not an environment variable name (letters, digits and _, "
                              "not starting with a digit)")
        text = str(value)
        if "\n" in text or "\r" in text or text[:1] in ("'", '"'):
            raise RecipeError(f"{variable}.{key}: values cannot hold newlines or start with a quote (got {text!r})")
        if "\\" in text or text != text.strip():
            raise RecipeError(f"{variable}.{key}: {text!r} holds a backslash or leading/trailing spaces, which "
                              "systemd's EnvironmentFile (uv servers) reads as escapes and trims while docker "
                              "--env-file keeps them: one value would reach the two kinds of server differently")


def secret_lines(plan: dict[str, Any], secrets: dict[str, str] | None) -> list[str]:
    """The environment lines that carry secrets: the value when given, a placeholder in previews."""
    lines = []
    if "HF_TOKEN" in plan.get("secret_env", []):
        if plan["install"]["method"] == "docker":
            # a file, not the container's environment: `docker inspect` shows that to anyone with the socket
            lines.append(f"HF_TOKEN_PATH={node.path('hf_token_in_container')}")
        else:
            value = (secrets or {}).get("HF_TOKEN")
            lines.append(f"HF_TOKEN={value if value is not None else '<secret: sglang_hf_token>'}")
    return lines


def env_file(plan: dict[str, Any], secrets: dict[str, str] | None = None) -> str:
    """KEY=value lines readable by both systemd's EnvironmentFile and docker --env-file."""
    env = plan["env"]
    check_env(env)
    lines = [f"# Environment of {plan['unit']}; {HEADER}"]
    lines += [f"{key}={env[key]}" for key in sorted(env)]
    return "\n".join(lines + secret_lines(plan, secrets)) + "\n"


def serve_tail(plan: dict[str, Any]) -> list[str]:
    return list(plan["argv"]) + (["--config", plan["settings"]["secrets_config"]] if plan.get("api_key") else [])


def container_name(plan: dict[str, Any]) -> str:
    """The docker container of an instance (docker installs), and SyslogIdentifier: sglang-<instance>; node
    acceptance recognises the serving processes of a docker install by it."""
    return node.container_name(plan["instance"])


def networked(plan: dict[str, Any]) -> bool:
    return placement.is_networked(plan["members"], plan["recipe"].get("pd_role"))


def docker_run(plan: dict[str, Any], docker: dict[str, Any] | None = None) -> list[str]:
    """`docker run ...` for a server plan, in the cookbook's form plus our name, env file and mounts."""
    docker = docker or docker_forms()
    rec, s = plan["recipe"], plan["settings"]
    name = container_name(plan)
    argv = ["--env-file", s["env_file"]]
    argv += vendor_options(list(docker["vendor"][rec["vendor"]]), replicas.docker_gpu_options(rec["vendor"],
                                                                                              plan.get("gpus")))
    argv += list(docker["common"])
    if networked(plan):
        argv.append("--network=host")
    else:
        argv += ["-p", f"{rec['port']}:{rec['port']}"]
    if plan.get("rdma") and networked(plan):
        argv += list(docker["rdma"])
        if rec["vendor"] == "amd":
            argv += list(docker["rdma_amd_extra"])
    if (load_catalog().gpus.get(rec["gpu"]) or {}).get("imex"):
        # IMEX channel 0 (data/nvidia/services.yml, its one owner): `--gpus all` does not pass IMEX channels
        argv += ["--device", cached_yaml(str(DATA_DIR / "nvidia" / "services.yml"))["imex"]["docker_device"]]
    weights = stages.served_path(plan)
    if weights:
        argv += ["-v", f"{weights}:{weights}:ro"]
    else:
        argv += ["-v", f"{s['hf_cache']}:{docker['hf_cache']}"]
    draft = draft_path(plan)
    if draft and not (weights and (draft + "/").startswith(weights.rstrip("/") + "/")):
        argv += ["-v", f"{draft}:{draft}:ro"]
    if plan.get("api_key"):
        argv += ["-v", f"{s['secrets_config']}:{s['secrets_config']}:ro"]
    if "HF_TOKEN" in plan.get("secret_env", []):
        argv += ["-v", f"{s['hf_token_file']}:{node.path('hf_token_in_container')}:ro"]
    return container.run(argv, plan["install"]["image"], ["sglang", "serve"] + serve_tail(plan), name)


def draft_path(plan: dict[str, Any]) -> str | None:
    """The local folder of a draft-model preset's drafter (sglang_draft_model_path), None for a hub id or no drafter:
    a docker server mounts it beside the weights."""
    argv = plan["argv"]
    if "--speculative-draft-model-path" not in argv[:-1]:
        return None
    path = argv[argv.index("--speculative-draft-model-path") + 1]
    return path if path.startswith("/") else None


def vendor_options(options: list[str], gpu_set: list[str] | None) -> list[str]:
    """The vendor's docker options with a GPU set's options in place of its own of the same flag (`--gpus all` becomes
    the replica's `--gpus "device=0,1"`)."""
    if not gpu_set:
        return options
    flag = gpu_set[0]
    if flag in options:
        at = options.index(flag)
        return options[:at] + gpu_set + options[at + 2:]
    return options + gpu_set


def server_argv(plan: dict[str, Any], docker: dict[str, Any] | None = None) -> list[str]:
    if plan["install"]["method"] == "docker":
        return docker_run(plan, docker)
    return [plan["install"]["sglang"], "serve"] + serve_tail(plan)


def probe_url(argv: list[str], port: int) -> str:
    """The health URL a unit's ExecStartPost asks, on the node itself: the address the program binds (--host), or
    loopback when it binds every address (0.0.0.0: 127.0.0.1; ::: [::1])."""
    bound = argv[argv.index("--host") + 1] if "--host" in argv[:-1] else "0.0.0.0"
    if bound in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif bound == "::":
        host = "[::1]"
    else:
        host = f"[{bound}]" if ":" in bound else bound
    return f"http://{host}:{port}/health"


def service_groups(plan: dict[str, Any]) -> list[str]:
    """The groups a uv server's account needs besides its own: video and render for AMD's /dev/kfd and render
    nodes, and the group the rdma stage gives /dev/infiniband/* (its udev rule, 0660) when the server uses RDMA and
    this collection manages that stage. The unit (SupplementaryGroups) and sglang_server's account read this."""
    groups = ["video", "render"] if plan["recipe"]["vendor"] == "amd" else []
    rdma = (plan.get("stages") or {}).get("rdma") or {}
    if plan.get("rdma") and rdma.get("applies") and rdma["settings"].get("udev_group"):
        groups.append(str(rdma["settings"]["udev_group"]))
    return groups


def service_account(settings: dict[str, Any], groups: list[str] | None = None) -> list[str]:
    """The system user, its device groups, and a private HOME systemd creates (caches land there)."""
    lines = [f"User={settings['user']}", f"Group={settings['group']}"]
    if groups:
        lines.append("SupplementaryGroups=" + " ".join(groups))
    return lines + [f"Environment=HOME={settings['home']}", f"StateDirectory={settings['home'].rsplit('/', 1)[1]}",
                    f"WorkingDirectory={settings['home']}"]


def device_allowlist(vendor: str, rdma: bool) -> list[str]:
    """DevicePolicy=closed and the device nodes a server needs (data/sglang/devices.yml)."""
    table = cached_yaml(str(DATA_DIR / "sglang" / "devices.yml"))
    entries = list(table.get(vendor) or []) + (list(table["rdma"]) if rdma else [])
    return ["DevicePolicy=closed"] + [f"DeviceAllow={entry} rw" for entry in entries]


def _unit(description: str, after: list[str], wants: list[str], service: list[str],
          settings: dict[str, Any]) -> str:
    online = node.systemd("network_online")
    return systemd.service_unit([HEADER], description, [
        "After=" + " ".join([online] + after), "Wants=" + " ".join([online] + wants),
        f"StartLimitIntervalSec={settings['start_limit_interval']}", f"StartLimitBurst={settings['start_limit_burst']}"],
        service)


def firewall_on(plan: dict[str, Any]) -> bool:
    return bool(plan["settings"]["firewall"]) and len(plan["members"]) > 1


def server_unit(plan: dict[str, Any], docker: dict[str, Any] | None = None) -> str:
    """The systemd unit of one server instance member."""
    rec, s = plan["recipe"], plan["settings"]
    name = container_name(plan)
    head = plan["rank"] == 0
    role = f"PD {rec['pd_role']} " if rec.get("pd_role") else ""
    where = f", rank {plan['rank']} of {len(plan['members'])}" if len(plan["members"]) > 1 else ""
    description = (f"SGLang {role}server {plan['instance']}: {rec['model']} {rec['gpu']}/{rec['quant']}/"
                   f"{rec['strategy']}{where}")
    # ordering only: a unit listed here that a node lacks is ignored by systemd
    after = list(s["after"])
    wants = [firewall.UNIT] if firewall_on(plan) else []
    service = ["Type=exec", f"EnvironmentFile={s['env_file']}"]
    if plan["install"]["method"] == "docker":
        after = [runtime.docker_unit()] + [u for u in after if u != runtime.docker_unit()]
        service += container.unit_lines(name, exec_line(server_argv(plan, docker)), s["stop_timeout"])
    else:
        service += service_account(s, plan.get("service_groups") or service_groups(plan))
        service += ["ExecStart=" + exec_line(server_argv(plan, docker))]
        service += s.get("hardening") or []
        if s.get("device_allowlist"):
            service += device_allowlist(rec["vendor"], bool(plan.get("rdma")))
    if head and s.get("health_wait"):
        service.append(f"ExecStartPost={s['python']} {s['health_script']} "
                       f"--url {plan['health_url']} --timeout {s['health_timeout']} --pid $MAINPID")
    service += [f"TimeoutStartSec={s['timeout_start']}", f"TimeoutStopSec={s['stop_timeout'] + 30}",
                "Restart=on-failure", f"RestartSec={s['restart_sec']}",
                "LimitMEMLOCK=infinity", f"LimitNOFILE={s['limit_nofile']}",
                "StandardOutput=journal", "StandardError=journal", f"SyslogIdentifier={name}"]
    return _unit(description, after + wants, wants, service, s)


def router_argv(plan: dict[str, Any]) -> list[str]:
    name = container_name(plan)
    if plan["install"]["method"] == "docker":
        return container.run(["--network=host"], plan["install"]["image"],
                             ["python3", "-m", "sglang_router.launch_router"] + list(plan["argv"]), name)
    return [plan["install"]["python"], "-m", "sglang_router.launch_router"] + list(plan["argv"])


def router_unit(plan: dict[str, Any]) -> str:
    s = plan["settings"]
    name = container_name(plan)
    if plan["install"]["method"] == "docker":
        service = container.unit_lines(name, exec_line(router_argv(plan)), s["stop_timeout"])
        after = [runtime.docker_unit()]
    else:
        service = service_account(s) + ["ExecStart=" + exec_line(router_argv(plan))]
        service += s.get("hardening") or []
        after = []
    service = ["Type=exec"] + service + [
        f"ExecStartPost={s['python']} {s['health_script']} --url {plan['health_url']} "
        f"--timeout {s['health_timeout']} --pid $MAINPID",
        "Restart=on-failure", f"RestartSec={s['restart_sec']}", f"LimitNOFILE={s['limit_nofile']}",
        "StandardOutput=journal", "StandardError=journal", f"SyslogIdentifier={name}"]
    return _unit(f"SGLang router ({plan['mode']}) for {', '.join(plan['workers'])}", after, [], service, s)


def member_addresses(plan: dict[str, Any], plans: dict[str, dict[str, Any]],
                     hostvars: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Each member's addresses the firewall admits (placement.source_addresses)."""
    del plans  # the addresses come from each member's variables and facts, as its own plan's do
    return {member: placement.source_addresses(member, hostvars.get(member, {})) for member in plan["members"]}


def firewall_file(plan: dict[str, Any], plans: dict[str, dict[str, Any]],
                  hostvars: dict[str, dict[str, Any]]) -> str | None:
    """The instance firewall, or None while a member's IP is unknown (its facts are not gathered)."""
    try:
        return firewall.ruleset(plan, member_addresses(plan, plans, hostvars))
    except ValueError:
        return None


def _file(path: str, content: str | None, mode: str, owner: str = "root", group: str = "root") -> dict[str, Any]:
    return {"path": path, "content": content, "mode": mode, "owner": owner, "group": group}


def retire_rule(plan: dict[str, Any]) -> dict[str, Any]:
    """How sglang_server finds the units of this host's instance that the plan no longer runs (replicas dropped or
    added): the unit names the instance has had, the instance name captured, and the other files such a unit had,
    with {instance} where its name goes."""
    base = str(plan.get("replica_of") or plan["instance"])
    s = plan["settings"]
    paths = []
    for key in ("env_file", "secrets_config", "hf_token_file"):
        path = str(s.get(key) or "")
        folder, _sep, name = path.rpartition("/")
        if name.startswith(plan["instance"]):
            paths.append(f"{folder}/{{instance}}{name[len(plan['instance']):]}")
    # the instance name of a unit is the name between these, cut by length in the role: a regex back-reference there
    # ('\\1' in regex_replace, inside {{ }} of a folded YAML block) reached re as two backslashes and wrote a literal
    # \1 (ansible-core 2.18 and 2.19 alike), so retired env and secret files stayed
    return {"pattern": placement.retired_units(base), "units_dir": node.folder("units"), "paths": paths,
            "unit_prefix": node.systemd("unit_prefix"), "unit_suffix": node.systemd("unit_suffix")}


def host_files(plan: dict[str, Any], plans: dict[str, dict[str, Any]],
               hostvars: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every file the serving roles write on a host: node_files() of its one instance, or of each replica (each replica
    keeps its own under plan['replicas'][i]['files']; the host's hold them all, by '<instance>.<name>')."""
    if plan["role"] == "server":
        plan["service_groups"] = service_groups(plan)
        plan["retire"] = retire_rule(plan)
    if not plan.get("replicas"):
        plan["container"] = container_name(plan)
        return node_files(plan, plans, hostvars)
    out: dict[str, dict[str, Any]] = {}
    for replica in plan["replicas"]:
        replica["service_groups"] = plan["service_groups"]  # one account per host: the host's stages decide
        replica["container"] = container_name(replica)
        replica["files"] = node_files(replica, plans, hostvars)
        out.update({f"{replica['instance']}.{key}": entry for key, entry in replica["files"].items()})
    plan["container"] = plan["replicas"][0]["container"]
    return out


def node_files(plan: dict[str, Any], plans: dict[str, dict[str, Any]],
               hostvars: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every file the serving roles write for this plan (the env file with secret placeholders)."""
    if plan["role"] == "router":
        plan["health_url"] = probe_url(plan["argv"], plan["port"])
        # the health wait its ExecStartPost runs: sglang_server's helper (roles/sglang_server/files), its one source
        return {"unit": _file(node.unit_path(plan["unit"]), router_unit(plan), "0644"),
                "helper_health": _file(plan["settings"]["health_script"], stages.role_file("sglang_server", "wait_healthy.py"),
                                       "0755")}
    plan["health_url"] = probe_url(plan["argv"], plan["recipe"]["port"])
    s = plan["settings"]
    files = {"unit": _file(node.unit_path(plan["unit"]), server_unit(plan), "0644"),
             "env": _file(s["env_file"], env_file(plan), "0600")}
    if firewall_on(plan):
        text = firewall_file(plan, plans, hostvars)
        files["firewall"] = _file(firewall.SGLANG.file, text, "0644")
        files["firewall_unit"] = _file(node.unit_path(firewall.SGLANG.unit), firewall.table_unit(firewall.SGLANG), "0644")
        if text is None:
            unknown = [m for m, a in member_addresses(plan, plans, hostvars).items() if not any(map(firewall.is_ip, a))]
            plan["resolved"].append(runtime.resolved(
                "instance firewall", None, f"the IPv4 of {', '.join(unknown)} (default_ipv4 facts, or sglang_dist_"
                "address as an IP); not gathered yet, so the firewall is written by site.yml once they are", False))
    return files
