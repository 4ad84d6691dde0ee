"""Each process's view (checks/views.py), names and values in their readers' grammar (checks/grammar.py), routers as
sglang-router runs them (checks/routing.py): issue 40, items 1-3.

The expectations come from the components' own documentation and source, cited case by case: systemd.exec(5)
("Sandboxing": ProtectSystem, ProtectHome, PrivateTmp, ReadOnlyPaths, ReadWritePaths, InaccessiblePaths, BindPaths,
PrivateDevices, DevicePolicy), Docker's `docker run` reference (--volume, --mount, --tmpfs, --read-only, --network) and
its reference grammar's own test cases (tests/fixtures/docker/reference_cases.yml), SGLang's environ.py and
utils/common.py of each release, NCCL's source, sglang-router 0.3.2's ConfigValidator (whose refusals
tests/slow/test_router_semantics.py runs in the real router). The trees are written by hand, never rendered.
"""
from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammar, views
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.readers import docker_run, systemd_words
from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks.site import check_site
from ansible_collections.metalserve.sglang.tests.helpers import ROOT

UNITS = "/etc/systemd/system/"
UV = "/opt/sglang/venvs/0.5.23/bin/sglang serve"
IMAGE = "lmsysorg/sglang:v0.5.23-cu129"


def unit(exec_start: str, service: tuple[str, ...] = (), env_file: str = "") -> str:
    lines = ["[Unit]", "Description=test", "", "[Service]", "Type=exec"]
    lines += [f"EnvironmentFile={env_file}"] if env_file else []
    lines += list(service) + [f"ExecStart={exec_start}", "", "[Install]", "WantedBy=multi-user.target", ""]
    return "\n".join(lines)


#: the sandbox sglang_server writes around a uv server (its defaults, as a node gets them)
SANDBOX = ("User=sglang", "Environment=HOME=/var/lib/sglang-home", "StateDirectory=sglang-home",
           "WorkingDirectory=/var/lib/sglang-home", "NoNewPrivileges=yes", "ProtectSystem=full", "ProtectHome=yes",
           "PrivateTmp=yes")


def node(files: dict[str, str], gpu: str = "h200", vendor: str = "nvidia", **more: Any) -> dict[str, Any]:
    return {"machine": "10.0.0.1", "gpu": gpu, "vendor": vendor, "gpus_per_node": 8, "vram_gb": 141,
            "compute_capability": "9.0", "files": files, "modes": {p: "0600" for p in files if p.endswith(".env")},
            **more}


def uv_server(args: str, sandbox: tuple[str, ...] = SANDBOX, env: str = "") -> dict[str, Any]:
    start = f"{UV} {args} --tp-size 8 --host 0.0.0.0 --port 30000"
    files = {UNITS + "sglang-x.service": unit(start, sandbox, "/etc/sglang/x.env"),
             "/etc/sglang/x.env": env}
    return {"n": node(files)}


def docker_server(args: str, options: str = "-v /models/glm:/models/glm:ro", env: str = "", image: str = IMAGE,
                  **hardware: Any) -> dict[str, Any]:
    start = (f"/usr/bin/docker run --rm --name sglang-x --env-file /etc/sglang/x.env --gpus all --ipc=host "
             f"-p 30000:30000 {options} {image} sglang serve {args} --tp-size 8 --host 0.0.0.0 --port 30000")
    files = {UNITS + "sglang-x.service": unit(start, (), "/etc/sglang/x.env"), "/etc/sglang/x.env": env}
    return {"n": node(files, **hardware)}


def problems(tree: dict[str, Any]) -> list[str]:
    return [m for _h, m in check_site(tree)]


def refused(tree: dict[str, Any], pattern: str) -> None:
    found = problems(tree)
    assert any(re.search(pattern, m) for m in found), found


# --- the filesystem view: systemd's sandbox (systemd.exec(5), "Sandboxing") ----------------------------------------

def fs_of(*service: str) -> views.Filesystem:
    return views.host_fs([("Service", *line.split("=", 1)) for line in service])  # type: ignore[misc]


@pytest.mark.parametrize("settings,path,visible,writable", [
    # ProtectHome=yes: "the directories /home/, /root, and /run/user are made inaccessible and empty"
    (("ProtectHome=yes",), "/home/ops/models", False, False),
    (("ProtectHome=yes",), "/root/.cache/huggingface", False, False),
    (("ProtectHome=yes",), "/run/user/1000", False, False),
    (("ProtectHome=yes",), "/srv/models", True, True),
    # ProtectHome=read-only: "the three directories are made read-only instead"
    (("ProtectHome=read-only",), "/home/ops/models", True, False),
    # ProtectSystem=yes: /usr/ and the boot loader directories read-only; full: /etc/ as well; strict: the whole file
    # hierarchy, except the API file systems and what ReadWritePaths= (or StateDirectory= & co.) name
    (("ProtectSystem=yes",), "/usr/local/models", True, False),
    (("ProtectSystem=yes",), "/etc/sglang", True, True),
    (("ProtectSystem=full",), "/etc/sglang", True, False),
    (("ProtectSystem=full",), "/var/lib/models", True, True),
    (("ProtectSystem=strict",), "/var/lib/models", True, False),
    (("ProtectSystem=strict", "ReadWritePaths=/var/lib/models"), "/var/lib/models/glm", True, True),
    (("ProtectSystem=strict", "StateDirectory=sglang-home"), "/var/lib/sglang-home/.cache", True, True),
    (("ProtectSystem=strict", "CacheDirectory=sglang"), "/var/cache/sglang/hf", True, True),
    # PrivateTmp=yes: "a new file system namespace ... /tmp/ and /var/tmp/ ... not shared with processes outside"
    (("PrivateTmp=yes",), "/tmp/models", False, True),
    (("PrivateTmp=yes",), "/var/tmp/x", False, True),
    # ReadOnlyPaths=, InaccessiblePaths= (a "-" prefix: ignore a path that does not exist)
    (("ReadOnlyPaths=/data",), "/data/models", True, False),
    (("InaccessiblePaths=-/data",), "/data/models", False, False),
    # BindReadOnlyPaths= mounts a folder where ProtectHome= left nothing
    (("ProtectHome=tmpfs", "BindReadOnlyPaths=/srv/ops:/home/ops"), "/home/ops/models", True, False),
    ((), "/anywhere", True, True),
    # systemd.exec(5): ProtectHome= and ProtectSystem= take a boolean or their own words, PrivateTmp= a boolean; a
    # boolean is any of parse_boolean's words (src/basic/parse-util.c: 1 yes y true t on / 0 no n false f off)
    (("ProtectHome=on",), "/home/ops/models", False, False),
    (("ProtectHome=1",), "/root/.cache/huggingface", False, False),
    (("ProtectSystem=1",), "/usr/local/models", True, False),
    (("ProtectSystem=on",), "/etc/sglang", True, True),
    (("PrivateTmp=y",), "/tmp/models", False, True),
    (("ProtectHome=off",), "/home/ops/models", True, True),
    # systemd.syntax(7): a setting of one value takes its last assignment; a list setting assigned empty starts over
    (("ProtectHome=yes", "ProtectHome=no"), "/home/ops/models", True, True),
    (("ProtectSystem=strict", "ProtectSystem=full"), "/var/lib/models", True, True),
    (("ReadOnlyPaths=/data", "ReadOnlyPaths="), "/data/models", True, True),
])
def test_systemd_sandbox_as_systemd_exec_documents_it(
        settings: tuple[str, ...], path: str, visible: bool, writable: bool) -> None:
    sight = views.see(fs_of(*settings), path)
    assert (sight.visible, sight.writable) == (visible, writable), sight


# --- the filesystem view: docker's mounts (docker run reference) --------------------------------------------------

def container(options: str) -> views.Filesystem:
    run = docker_run(["docker", "run", *systemd_words(options), IMAGE, "sglang", "serve"])
    assert run is not None
    return views.container_fs(run)


@pytest.mark.parametrize("options,path,visible,writable,lost", [
    # -v host:container[:ro]: the host folder at the container path; read-only with ro
    ("-v /models/glm:/models/glm:ro", "/models/glm/config.json", True, False, False),
    ("-v /var/lib/hf:/root/.cache/huggingface", "/root/.cache/huggingface/hub", True, True, False),
    # --mount type=bind,source=,target=,readonly
    ("--mount type=bind,source=/srv/t,target=/t,readonly", "/t/glm.jinja", True, False, False),
    # --tmpfs: an empty tmpfs
    ("--tmpfs /scratch", "/scratch/x", False, True, False),
    # nothing mounted: the host's folder is not in the container; a write lands in the container's own layer
    ("-v /models/glm:/models/glm:ro", "/etc/sglang/glm.jinja", False, True, True),
    ("--read-only -v /models/glm:/models/glm:ro", "/etc/sglang/glm.jinja", False, False, False),
    # the image's own folders are there; a write lands in the container's layer (--rm drops it)
    ("", "/sgl-workspace/sglang/examples/chat_template/x.jinja", True, True, True),
    # --read-only: "mount the container's root filesystem as read only"
    ("--read-only", "/sgl-workspace/out", True, False, False),
])
def test_docker_mounts_as_docker_run_documents_them(
        options: str, path: str, visible: bool, writable: bool, lost: bool) -> None:
    sight = views.see(container(options), path)
    assert (sight.visible, sight.writable, sight.lost) == (visible, writable, lost), sight


# --- what a process asks for, judged in its view ----------------------------------------------------------------

def test_a_uv_server_cannot_read_weights_under_home() -> None:
    refused(uv_server("--model-path /home/ops/models/GLM-5.3"),
            r"^sglang-x\.service reads --model-path /home/ops/models/GLM-5\.3, set by sglang_model_path, but "
            r"/home/ops/models/GLM-5\.3 is not in its sandbox \(ProtectHome=yes")


def test_an_alias_is_judged_as_its_flag() -> None:
    # SGLang 0.5.23's parser: --model is an alias of --model-path (data/sglang/flags-0.5.23.yml names)
    refused(uv_server("--model /tmp/glm"), r"reads --model /tmp/glm, set by sglang_model_path, but /tmp/glm is not in "
                                           r"its sandbox \(PrivateTmp=yes")


def test_a_docker_server_reads_only_what_it_mounts() -> None:
    refused(docker_server("--model-path /models/glm --chat-template /etc/sglang/glm.jinja"),
            r"^sglang-x\.service reads --chat-template /etc/sglang/glm\.jinja, set by sglang_extra_args .*not in its "
            r"container: no mount brings it into the container; put it under a folder it mounts \(/models/glm\)")
    assert problems(docker_server("--model-path /models/glm --chat-template /models/glm/chat_template.jinja")) == []


@pytest.mark.parametrize("args", [
    "--model-path zai-org/GLM-5.3",                                  # a hub id: SGLang downloads it
    "--model-path /models/glm --chat-template chatml",               # a template SGLang knows by name
    "--model-path /models/glm --tokenizer-path zai-org/GLM-5.3",     # a hub id again
    "--model-path /models/glm --init-expert-location trivial",       # a preset, not a file
])
def test_names_and_hub_ids_are_no_paths(args: str) -> None:
    assert problems(docker_server(args)) == []


def test_writes_need_a_writable_folder() -> None:
    refused(uv_server("--model-path /srv/glm --download-dir /usr/local/models"),
            r"writes --download-dir /usr/local/models, set by sglang_extra_args .*not writable for it: "
            r"ProtectSystem=full makes /usr read-only")
    # docker run: a path no mount brings in is the container's own writable layer, gone with the container (--rm)
    refused(docker_server("--model-path zai-org/GLM-5.3 --download-dir /data/models", options=""),
            r"writes --download-dir /data/models, .*not writable for it: no mount holds it, so it lands in the "
            r"container's own layer")
    refused(docker_server("--model-path /models/glm", env="HF_HOME=/sgl-workspace/hf\n"),
            r"writes HF_HOME=/sgl-workspace/hf, set by sglang_env, .*lands in the container's own layer")
    assert problems(uv_server("--model-path /srv/glm --download-dir /var/lib/sglang-home/dl")) == []


@pytest.mark.parametrize("line", [
    # Triton's own default is ~/.triton/cache (triton/knobs.py), Inductor's /tmp/torchinductor_<user>
    # (torch/_inductor/runtime/cache_dir_utils.py), SGLang 0.5.23's profiler folder /tmp (environ.py
    # SGLANG_TORCH_PROFILER_DIR = EnvStr("/tmp")): in a container, all in its own layer already
    "TRITON_CACHE_DIR=/tmp/triton", "TORCHINDUCTOR_CACHE_DIR=/tmp/inductor", "SGLANG_TORCH_PROFILER_DIR=/tmp/profiles",
    "SGLANG_DG_CACHE_DIR=/root/.cache/deep_gemm",
])
def test_a_cache_in_the_container_s_own_layer_is_no_mistake(line: str) -> None:
    assert problems(docker_server("--model-path /models/glm", env=line + "\n")) == []


def test_a_cache_needs_a_writable_folder_all_the_same() -> None:
    # docker run --read-only: "Mount the container's root filesystem as read only"
    refused(docker_server("--model-path /models/glm", options="--read-only -v /models/glm:/models/glm:ro",
                          env="TRITON_CACHE_DIR=/tmp/triton\n"),
            r"writes TRITON_CACHE_DIR=/tmp/triton, .*not writable for it: the process does not see it \(no mount brings "
            r"it into the container, and docker --read-only keeps the container's own layer read-only\)")
    refused(uv_server("--model-path /srv/glm", env="TRITON_CACHE_DIR=/usr/local/triton\n"),
            r"writes TRITON_CACHE_DIR=/usr/local/triton, .*ProtectSystem=full makes /usr read-only")


# --- devices -----------------------------------------------------------------------------------------------------

def test_private_devices_take_the_gpus_away() -> None:
    # systemd.exec(5) PrivateDevices=yes: "sets up a new /dev/ mount ... only adds API pseudo devices such as
    # /dev/null, /dev/zero or /dev/random ... but no physical devices"
    refused(uv_server("--model-path /srv/glm", SANDBOX + ("PrivateDevices=yes",)),
            r"runs with PrivateDevices=yes: systemd gives it a /dev of pseudo devices only")


@pytest.mark.parametrize("settings,refused_here", [
    (("PrivateDevices=on",), True), (("PrivateDevices=1",), True),
    (("PrivateDevices=yes", "PrivateDevices=no"), False), (("PrivateDevices=false",), False),
])
def test_private_devices_as_a_systemd_boolean(settings: tuple[str, ...], refused_here: bool) -> None:
    found = problems(uv_server("--model-path /srv/glm", SANDBOX + settings))
    assert any("PrivateDevices" in m for m in found) == refused_here, found


def test_a_closed_device_policy_needs_the_gpu_devices() -> None:
    # systemd.resource-control(5) DevicePolicy=closed: access to all but the pseudo devices and those DeviceAllow= lists
    # is refused; CUDA opens /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia<N>. char-<group> allows every major
    # /proc/devices names so: on a real H200 node 195 is "nvidia" and "nvidiactl" (/dev/nvidia0, /dev/nvidiactl) and
    # 238 "nvidia-uvm" (tests/fixtures/nvidia/h200-x1-devices/proc-devices.txt, dev-nodes.txt)
    closed = SANDBOX + ("DevicePolicy=closed", "DeviceAllow=char-nvidia rw")
    refused(uv_server("--model-path /srv/glm", closed),
            r"DevicePolicy=closed but none that opens /dev/nvidia-uvm for reading and writing: .* Add "
            r"DeviceAllow=/dev/nvidia-uvm rw to sglang_server_hardening")
    assert problems(uv_server("--model-path /srv/glm", closed + ("DeviceAllow=char-nvidia-uvm rw",))) == []


PROC_DEVICES = ROOT / "tests" / "fixtures" / "nvidia" / "h200-x1-devices" / "proc-devices.txt"


@pytest.mark.parametrize("allow,opens", [
    # "The device group is matched according to filename globbing rules, you may hence use the * and ? wildcards"
    (("char-nvidia*",), True),
    # a path to a device node allows that node only
    (("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0"), True),
    (("/dev/nvidiactl", "/dev/nvidia-uvm"), False),
    (("char-nvidiactl", "char-nvidia-uvm"), True),
    # access letters: reading and writing both, or none given (rwm)
    (("char-nvidia* r",), False),
    (("char-nvidia* rwm",), True),
])
def test_device_allow_entries_as_systemd_reads_them(allow: tuple[str, ...], opens: bool) -> None:
    groups = {line.split()[1] for line in PROC_DEVICES.read_text().splitlines()[1:] if line.strip()[:1].isdigit()}
    assert {"nvidia", "nvidiactl", "nvidia-uvm"} <= groups  # the group names the data matches against
    unit_lines = SANDBOX + ("DevicePolicy=strict",) + tuple(f"DeviceAllow={a}" for a in allow)
    found = problems(uv_server("--model-path /srv/glm", unit_lines))
    assert (not any("finds no GPU" in m for m in found)) == opens, found


def test_device_policy_auto_closes_once_one_device_is_allowed() -> None:
    # DevicePolicy=auto (the default): "in addition, allows access to all devices if no explicit DeviceAllow= is
    # present"; once one is, only what it lists (and the pseudo devices)
    refused(uv_server("--model-path /srv/glm", SANDBOX + ("DeviceAllow=char-infiniband_verbs rw",)),
            r"runs with DevicePolicy=auto and DeviceAllow= entries but none that opens /dev/nvidiactl")
    assert problems(uv_server("--model-path /srv/glm", SANDBOX + ("DeviceAllow=char-nvidia* rw",))) == []
    assert problems(uv_server("--model-path /srv/glm", SANDBOX + ("DeviceAllow=char-infiniband_verbs rw",
                                                                  "DeviceAllow="))) == []


# --- the network view --------------------------------------------------------------------------------------------

def test_a_bridged_container_binds_no_host_address() -> None:
    # docker run --network: a container on the default bridge has its own network namespace (loopback and its
    # veth address); the host's addresses are not there, so bind() fails with EADDRNOTAVAIL
    tree = docker_server("--model-path /models/glm")
    path = UNITS + "sglang-x.service"
    tree["n"]["files"][path] = tree["n"]["files"][path].replace("--host 0.0.0.0", "--host 10.0.0.1")
    refused(tree, r"binds --host 10\.0\.0\.1 inside its container, whose bridge network holds only loopback.* or "
                  r"install with sglang_install_method: uv")
    tree["n"]["files"][path] = tree["n"]["files"][path].replace("--ipc=host", "--ipc=host --network=host")
    assert not any("bridge network" in m for m in problems(tree))


def monitoring_host(prometheus: str, node_exporter: str = ":9100", blackbox: str = "127.0.0.1:9115") -> dict[str, Any]:
    files = {"/etc/default/prometheus": f'ARGS="--config.file=/etc/prometheus/prometheus.yml '
                                        f'--web.listen-address={prometheus}"\n',
             "/etc/default/prometheus-node-exporter": f'ARGS="--web.listen-address={node_exporter}"\n',
             "/etc/default/prometheus-blackbox-exporter": f'ARGS="--web.listen-address={blackbox}"\n'}
    return {"mon": {"machine": "10.0.9.20", "gpu": None, "vendor": None, "gpus_per_node": None, "files": files}}


def test_one_listener_table_per_machine() -> None:
    assert problems(monitoring_host(":9090")) == []
    refused(monitoring_host(":9100"), r"^port 9100 is bound twice on 10\.0\.9\.20: Prometheus of mon and node exporter "
                                      r"of mon; move one \(monitoring_prometheus_port, monitoring_node_exporter_port\)")
    # a wildcard bind takes the port on every address; two single addresses do not collide (bind(2))
    refused(monitoring_host(":9115"), r"^port 9115 is bound twice")
    assert problems(monitoring_host("10.0.9.20:9115")) == []


def test_a_bridged_container_binds_its_ports_in_its_own_namespace() -> None:
    # docker run --network bridge (the default): the container gets its own network stack, so a port it binds inside
    # takes nothing of the machine's; only -p publishes one there
    tree = docker_server("--model-path /models/glm --nccl-port 29500")
    path = UNITS + "sglang-x.service"
    second = tree["n"]["files"][path].replace("-p 30000:30000", "-p 30010:30000")
    second = second.replace("--name sglang-x", "--name sglang-y")
    tree["n"]["files"][UNITS + "sglang-y.service"] = second.replace("--gpus all", "--gpus 0")
    tree["n"]["files"][path] = tree["n"]["files"][path].replace("--gpus all", "--gpus '\"device=1,2,3,4,5,6,7\"'")
    assert not any("bound twice" in m for m in problems(tree))
    tree["n"]["files"][UNITS + "sglang-y.service"] = second.replace("-p 30010:30000", "-p 30000:30000")
    refused(tree, r"^port 30000 is bound twice on 10\.0\.0\.1: sglang-x\.service -p 30000:30000 of n and "
                  r"sglang-y\.service -p 30000:30000 of n")


@pytest.mark.parametrize("image", ["docker.io/rocm/device-metrics-exporter:v1.5.4",
                                   "registry.local:5000/rocm/device-metrics-exporter:v1.5.4",
                                   "registry.local/hub/rocm/device-metrics-exporter@sha256:" + "b" * 64])
def test_an_image_s_listener_whatever_registry_serves_it(image: str) -> None:
    # ROCm/device-metrics-exporter serves on 5000 (its docs), on the host network, from any registry or mirror
    tree = uv_server("--model-path /srv/glm")
    path = UNITS + "sglang-x.service"
    tree["n"]["files"][path] = tree["n"]["files"][path].replace("--port 30000", "--port 5000")
    tree["n"]["files"][UNITS + "amd-device-metrics-exporter.service"] = unit(
        f"/usr/bin/docker run --rm --name amd-device-metrics-exporter --privileged --network=host {image}")
    refused(tree, r"^port 5000 is bound twice on 10\.0\.0\.1: sglang-x\.service --port of n and AMD device metrics "
                  r"exporter of n")


def test_the_fan_out_daemon_is_a_listener() -> None:
    tree = docker_server("--model-path /models/glm")
    tree["n"]["files"][UNITS + "sglang-weights-rsyncd.service"] = unit(
        "/usr/bin/rsync --daemon --no-detach --port=30000 --config=/etc/sglang/rsyncd-weights.conf")
    refused(tree, r"^port 30000 is bound twice on 10\.0\.0\.1: sglang-x\.service -p 30000:30000 of n and weights "
                  r"fan-out \(rsync daemon\) of n; move one \(sglang_port, model_weights_fanout_port\)")


def test_every_port_flag_is_classified() -> None:
    """A flag of a shipped server table whose name ends in -port is either bound by the server or another process's
    port (data/sglang/listeners.yml serve_ports): a new release's port flag is judged the day its table lands."""
    doc = yaml.safe_load((ROOT / "data" / "sglang" / "listeners.yml").read_text())["serve_ports"]
    known = set(doc["binds"]) | set(doc["elsewhere"])
    unclassified = []
    for path in sorted((ROOT / "data" / "sglang").glob("flags-0*.yml")):
        for flag, entry in (yaml.safe_load(path.read_text())["flags"] or {}).items():
            names = set(entry.get("names") or []) | {flag}
            if any(n.endswith("-port") for n in names) and not known & names:
                unclassified.append(f"{path.name}: {flag}")
    assert unclassified == [], unclassified


def test_a_seed_instance_s_port_is_not_bound_here() -> None:
    # SGLang 0.5.23 --remote-instance-weight-loader-seed-instance-service-port: "The service port of the seed instance
    # for loading weights from remote instance" (the loader requests http://<seed ip>:<port>): another server's --port
    seed = ("--model-path /srv/glm --load-format remote_instance --remote-instance-weight-loader-seed-instance-ip "
            "10.0.0.2 --remote-instance-weight-loader-seed-instance-service-port 30000")
    assert problems(uv_server(seed)) == []
    refused(uv_server("--model-path /srv/glm --nccl-port 30000"), r"^port 30000 is bound twice on 10\.0\.0\.1")


# --- memory fit --------------------------------------------------------------------------------------------------

def test_weights_over_the_memory_fraction() -> None:
    # SGLang's model_runner stops ("Not enough memory") when the weights of one GPU take the --mem-fraction-static
    # share of its memory; GLM-5.3 FP8 is ~755 GB (data/models/glm-5.3/model.yml), an H200 141 GB (data/gpus.yml)
    refused(docker_server("--model-path zai-org/GLM-5.3 --mem-fraction-static 0.5"),
            r"loads zai-org/GLM-5\.3 \(glm-5\.3 fp8, ~755 GB\) over 8 GPU\(s\) \(--tp-size 8\): ~94\.4 GB of weights on "
            r"each h200 GPU, more than --mem-fraction-static 0\.5 of its 141 GB \(70\.5 GB\)")
    assert problems(docker_server("--model-path zai-org/GLM-5.3 --mem-fraction-static 0.85")) == []
    # unset: SGLang keeps at least 10 GiB on a GPU of more than 60 GiB (memory_hook.py)
    assert problems(docker_server("--model-path zai-org/GLM-5.3")) == []


def test_a_16_bit_checkpoint_quantized_while_loading() -> None:
    # SGLang's --quantization fp8 on a BF16 checkpoint quantizes the weights as it loads them (docs: "online
    # quantization"), so the bytes on each GPU are not the checkpoint's stored size: the fit is not judged
    bf16 = "--model-path zai-org/GLM-5.3-BF16 --mem-fraction-static 0.85"
    refused(docker_server(bf16), r"loads zai-org/GLM-5\.3-BF16 \(glm-5\.3 bf16")
    assert problems(docker_server(bf16 + " --quantization fp8")) == []


def test_a_platform_the_site_adds() -> None:
    tree = docker_server("--model-path zai-org/GLM-5.3 --mem-fraction-static 0.85", gpu="h100", vram_gb=80)
    refused(tree, r"~94\.4 GB of weights on each h100 GPU, more than --mem-fraction-static 0\.85 of its 80 GB")
    # the flag comes from the extra arguments or a site recipe's cell (sglang_recipes): the message names both
    refused(tree, r"Raise --mem-fraction-static \(sglang_extra_args \(or a site recipe's cell flags, sglang_recipes\)\)")


# --- images ------------------------------------------------------------------------------------------------------

REFERENCES = yaml.safe_load((ROOT / "tests" / "fixtures" / "docker" / "reference_cases.yml").read_text())


@pytest.mark.parametrize("ref", REFERENCES["parses"])
def test_references_docker_parses(ref: str) -> None:
    assert grammar.image_problem(ref) == ""


@pytest.mark.parametrize("case", REFERENCES["refused"], ids=[c["input"] or "empty" for c in REFERENCES["refused"]])
def test_references_docker_refuses(case: dict[str, str]) -> None:
    assert grammar.image_problem(case["input"]) == case["err"]


def test_reference_past_the_grammar() -> None:
    # go-digest (algorithm.go) validates a sha256 digest against ^[a-f0-9]{64}$ ("Note that /A-F/ disallowed"):
    # ErrDigestInvalidFormat; and Go's RE2 reads the tag's \w as ASCII letters, digits and _ only
    assert grammar.image_problem("lmsysorg/sglang@sha256:" + "A" * 64) == "invalid checksum digest format"
    assert grammar.image_problem("lmsysorg/sglang:v0.5.23-cu129é") == "invalid reference format"


def test_reference_name_length() -> None:
    assert grammar.image_problem("a/" * 128 + "a:tag") == "repository name must not be more than 255 characters"
    assert grammar.image_problem("a/" * 127 + "a:tag-puts-this-over-max") == ""


def test_a_mirror_prefix_applied_twice() -> None:
    refused(docker_server("--model-path /models/glm", image="registry.local/registry.local/lmsysorg/sglang:v0.5.23-cu129"),
            r"the registry registry\.local is named twice")
    refused(docker_server("--model-path /models/glm", image="registry.local:5000/registry.local:5000/lmsysorg/sglang:x"),
            r"which docker refuses \(invalid reference format")
    # a mirror with a path (sglang_install_registry_mirror: registry.local/hub/), and a digest reference
    refused(docker_server("--model-path /models/glm", image="registry.local/hub/registry.local/hub/lmsysorg/sglang:"
                                                            "v0.5.23-cu129"), r"the registry registry\.local is named twice")
    refused(docker_server("--model-path /models/glm", image="registry.local:5000/hub/registry.local/hub/lmsysorg/"
                                                            "sglang@sha256:" + "a" * 64),
            r"the registry registry\.local:5000 is named twice")
    # a pull-through mirror that keeps the upstream registry in its paths is not the mirror applied twice
    assert not any("named twice" in m for m in problems(docker_server(
        "--model-path /models/glm", image="registry.local/ghcr.io/lmsysorg/sglang:v0.5.23-cu129")))


@pytest.mark.parametrize("gpu,capability,tag,lacks", [
    # CUDA 12.8 adds sm_100 (NVIDIA's CUDA Features Archive); SGLang's docker/Dockerfile builds its 12.8.1 image for
    # 9.0;10.0;10.3 and its 12.6.1 image for 9.0 only; Hopper (9.0) since 11.8
    ("b300", "10.3", "v0.5.23-cu126", True), ("b300", "10.3", "v0.5.23-cu128", False),
    ("b300", "10.3", "v0.5.23-cu129", False), ("b200", "10.0", "v0.5.23-cu128", False),
    ("b200", "10.0", "v0.5.23-cu126", True), ("h200", "9.0", "v0.5.23-cu126", False),
])
def test_a_cuda_build_carries_the_gpu(gpu: str, capability: str, tag: str, lacks: bool) -> None:
    tree = docker_server("--model-path /models/glm", image=f"lmsysorg/sglang:{tag}", gpu=gpu,
                         compute_capability=capability)
    assert any("cannot run its kernels" in m for m in problems(tree)) == lacks


def test_a_rocm_build_carries_the_gpu() -> None:
    # AMD's ROCm 6.4 support table lists no OS for MI355X (data/amd/releases.yml): a ROCm 6.x build lacks gfx950
    amd = "--device=/dev/kfd --device=/dev/dri -v /models/glm:/models/glm:ro"
    old = docker_server("--model-path /models/glm", options=amd, gpu="mi355x", vendor="amd",
                        image="lmsysorg/sglang-rocm:v0.5.13.post1-rocm640-mi35x-20260618")
    old["n"]["files"][UNITS + "sglang-x.service"] = old["n"]["files"][UNITS + "sglang-x.service"].replace("--gpus all ", "")
    refused(old, r"built with ROCm 6\.4, a series whose GPU support leaves mi355x out")
    new = copy.deepcopy(old)
    path = UNITS + "sglang-x.service"
    new["n"]["files"][path] = new["n"]["files"][path].replace("rocm640", "rocm720")
    assert not any("cannot run its kernels" in m for m in problems(new))


def test_a_rocm_build_is_judged_by_its_own_series(monkeypatch: pytest.MonkeyPatch) -> None:
    """An image built with ROCm 7.2 runs where ROCm 7.2 supports the GPU: a later series that leaves the GPU out (as AMD
    retires old GPUs from its support matrix) says nothing of it."""
    table = copy.deepcopy(grammar.rocm_support())
    table["support"]["8.0"] = {"mi300x": [], "mi355x": ["Ubuntu-24"]}
    monkeypatch.setattr(grammar, "rocm_support", lambda: table)
    image = "lmsysorg/sglang-rocm:v0.5.13.post1-rocm720-mi30x-20260616"
    assert grammar.build_lacks(image, "amd", "mi300x", {}) == ""
    assert grammar.build_lacks(image.replace("rocm720", "rocm800"), "amd", "mi300x", {}).startswith("ROCm 8.0")
    assert grammar.build_lacks(image.replace("rocm720", "rocm640"), "amd", "mi355x", {}).startswith("ROCm 6.4")


@pytest.mark.parametrize("value,vendor", [
    ("flashinfer_cutlass", "nvidia"), ("deep_gemm", "nvidia"), ("fa3", "nvidia"), ("trtllm_mla", "nvidia"),
    ("flashmla_sparse_q8", "nvidia"), ("aiter", "amd"), ("wave", "amd"), ("mori", "amd"),
    ("triton", ""), ("tilelang", ""), ("auto", ""), ("flashinfer_mxfp4", "nvidia"),
])
def test_backend_words(value: str, vendor: str) -> None:
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.backends import backend_vendor  # noqa: PLC0415

    assert backend_vendor(value) == vendor


def test_a_backend_of_the_other_vendor_in_any_backend_flag() -> None:
    refused(docker_server("--model-path /models/glm --fp8-gemm-backend aiter"),
            r"runs --fp8-gemm-backend aiter, which only AMD GPUs have; n is NVIDIA h200")
    # sglang_moe_a2a offers deepep only: the other vendor's MoE all-to-all on NVIDIA came from the extra arguments
    found = problems(docker_server("--model-path /models/glm --moe-a2a-backend mori"))
    assert any("runs --moe-a2a-backend mori, which only AMD GPUs have" in m and "from sglang_extra_args" in m
               and "sglang_moe_a2a" not in m for m in found), found


# --- environment names and values ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line,verdict", [
    # SGLang 0.5.23 environ.py EnvBool.parse: "true", "1", "yes", "y" and "false", "0", "no", "n" (after lower())
    ("SGLANG_ENABLE_JIT_DEEPGEMM=no", None),
    ("SGLANG_ENABLE_JIT_DEEPGEMM=Yes", None),
    ("SGLANG_ENABLE_JIT_DEEPGEMM=on", r"EnvBool reads it as no boolean and keeps the variable's default"),
    # utils/common.py get_bool_env_var: ("true", "1") true, anything else false (with a warning)
    ("SGLANG_SET_CPU_AFFINITY=no", None),
    ("SGLANG_SET_CPU_AFFINITY=yes", r"get_bool_env_var reads it as false\. Write true/1 or false/0"),
    # read by both: a word one of them reads otherwise
    ("SGLANG_DEBUG_MEMORY_POOL=y", r"get_bool_env_var reads it as false"),
    ("SGLANG_DEBUG_MEMORY_POOL=1", None),
    # names: close to a name the release or NCCL reads
    ("SGLANG_ENABLE_JIT_DEEPGEM=1", r"is no variable SGLang 0\.5\.23 reads; did you mean SGLANG_ENABLE_JIT_DEEPGEMM\?"),
    ("NCCL_IB_GID_INDX=3", r"is no variable NCCL reads; did you mean NCCL_IB_GID_INDEX\?"),
    ("MY_OWN_SETTING=1", None),
    ("NCCL_NET_PLUGIN=none", None),
])
def test_environment_as_its_readers_read_it(line: str, verdict: str | None) -> None:
    found = problems(docker_server("--model-path /models/glm", env=line + "\n"))
    if verdict is None:
        assert found == [], found
    else:
        assert any(re.search(verdict, m) for m in found), found


def test_a_misspelt_rocm_mask() -> None:
    found = problems(docker_server("--model-path /models/glm", env="HIP_VISIBLE_DEVICE=0\n"))
    assert any("did you mean HIP_VISIBLE_DEVICES?" in m for m in found), found


def test_every_nccl_name_the_collection_writes_is_nccl_s() -> None:
    """The NCCL variables the collection's own data sets (fabric environments, cells) are all in NCCL's source."""
    data = "\n".join(p.read_text() for p in (ROOT / "data").rglob("*.yml") if p.name != "env-nccl.yml")
    spelled = set(re.findall(r"\bNCCL_[A-Z0-9_]+\b", data))
    spelled |= set(re.findall(r"\bNCCL_[A-Z0-9_]+\b", (ROOT / "plugins" / "plugin_utils" / "site" / "fabric_env.py")
                              .read_text()))
    unknown = sorted(n for n in spelled if n not in grammar.nccl_names())
    assert unknown == [], unknown


@pytest.mark.parametrize("release", ["0.5.23", "0.5.18", "0.5.13.post1"])
def test_every_sglang_name_the_collection_writes_is_the_release_s(release: str) -> None:
    table = grammar.sglang_env(release)
    spelled = set(re.findall(r"\bSGL(?:ANG)?_[A-Z0-9_]+\b", "\n".join(
        p.read_text() for p in (ROOT / "data" / "models").rglob("*.yml"))))
    misspelt = sorted(n for n in spelled if n not in table["names"] and grammar.closest(n, table["names"]))
    assert misspelt == [], misspelt


# --- the paths table ---------------------------------------------------------------------------------------------

def test_every_flag_named_like_a_path_is_classified() -> None:
    """A flag of a shipped table whose name ends like a path's is in data/sglang/paths.yml, as a path or not: a new
    release's path flag is judged the day its table lands, once it is named here."""
    table = views.paths_table()
    suffixes = tuple(table["suffixes"])
    unclassified = []
    for path in sorted((ROOT / "data" / "sglang").glob("flags-*.yml")):
        kind = "router" if "router" in path.name else "serve"
        known = set(table[kind]) | set(table["not_paths"][kind])
        for flag, entry in (yaml.safe_load(path.read_text())["flags"] or {}).items():
            names = entry.get("names") or [flag]
            if flag.endswith(suffixes) and not known & set(names):
                unclassified.append(f"{path.name}: {flag}")
    assert unclassified == [], unclassified
    # the checker knows three kinds of access (views.check_paths); another word would be judged as none of them
    accesses = {str(e["access"]) for kind in ("serve", "router") for e in table[kind].values()}
    accesses |= {str(a) for a in (yaml.safe_load((ROOT / "data" / "env.yml").read_text())["paths"] or {}).values()}
    assert accesses <= {"read", "write", "cache"}, accesses


# --- routers ----------------------------------------------------------------------------------------------------

def router_tree(router_args: str, servers: int = 1) -> dict[str, Any]:
    tree = {}
    for i in range(servers):
        start = (f"{UV} --model-path /srv/glm --tp-size 8 --reasoning-parser glm45 --host 0.0.0.0 --port 30000")
        tree[f"s{i}"] = {**node({UNITS + "sglang-x.service": unit(start, SANDBOX)}), "machine": f"10.0.1.{i + 1}"}
    workers = " ".join(f"http://10.0.1.{i + 1}:30000" for i in range(servers))
    start = (f"/opt/sglang/venvs/0.5.23/bin/python -m sglang_router.launch_router --worker-urls {workers} "
             f"--host 0.0.0.0 --port 8000 --prometheus-port 29000 {router_args}")
    tree["r"] = {"machine": "10.0.9.10", "gpu": None, "vendor": None, "gpus_per_node": None,
                 "files": {UNITS + "sglang-router.service": unit(start)}}
    return tree


@pytest.mark.parametrize("network,reached", [("", True), ("--network bridge ", True), ("--network=bridge ", True),
                                             ("--network host ", False)])
def test_a_router_reaches_a_bridged_server_on_its_published_port(network: str, reached: bool) -> None:
    # docker run: the default network and --network bridge both answer on the host only at the port -p publishes
    # (30001 here); on --network host the server answers at its own --port (30000), and -p is ignored
    tree = router_tree("--policy cache_aware")
    start = (f"/usr/bin/docker run --rm --name sglang-x --gpus all {network}-p 30001:30000 -v /srv/glm:/srv/glm:ro "
             f"{IMAGE} sglang serve --model-path /srv/glm --tp-size 8 --reasoning-parser glm45 --host 0.0.0.0 "
             "--port 30000")
    tree["s0"]["files"] = {UNITS + "sglang-x.service": unit(start)}
    path = UNITS + "sglang-router.service"
    tree["r"]["files"][path] = tree["r"]["files"][path].replace("10.0.1.1:30000", "10.0.1.1:30001")
    assert (not any("which no server of the site serves" in m for m in problems(tree))) == reached, problems(tree)


def test_power_of_two_needs_two_workers() -> None:
    # sglang-router 0.3.2 ConfigValidator: "Power-of-two policy requires at least 2 workers"
    refused(router_tree("--policy power_of_two"), r"runs --policy power_of_two over 1 worker; sglang-router 0\.3\.2 "
                                                  r"refuses to start")
    assert problems(router_tree("--policy power_of_two", servers=2)) == []
    assert problems(router_tree("--policy cache_aware")) == []


def test_service_discovery_replaces_the_static_workers() -> None:
    # sglang_router/router.py Router.from_args: worker_urls = [] if service_discovery; ConfigValidator: "Regular mode
    # with service discovery requires a non-empty selector"
    refused(router_tree("--service-discovery --selector app=sglang"), r"drops the static worker list")
    refused(router_tree("--service-discovery"), r"requires a non-empty selector")


def test_a_pool_that_answers_differently() -> None:
    tree = router_tree("--policy cache_aware", servers=2)
    path = UNITS + "sglang-x.service"
    tree["s1"]["files"][path] = tree["s1"]["files"][path].replace(" --reasoning-parser glm45", "")
    refused(tree, r"spreads requests over servers that answer differently \(--reasoning-parser glm45 on s0; unset on "
                  r"s1\)")


def test_each_lora_adapter_is_a_path_or_a_hub_id() -> None:
    # SGLang's --lora-paths takes NAME=PATH or PATH items; a path under /home is hidden by ProtectHome=yes
    refused(uv_server("--model-path /srv/glm --lora-paths a=/home/ops/lora-a b=org/lora-b"),
            r"reads --lora-paths /home/ops/lora-a, set by sglang_extra_args .*not in its sandbox \(ProtectHome=yes")
    assert problems(uv_server("--model-path /srv/glm --lora-paths a=/srv/lora-a b=org/lora-b")) == []


def test_another_release_s_variable_is_no_typo() -> None:
    # SGLANG_ENABLE_DETERMINISTIC_INFERENCE is in 0.5.23's source; a name only another shipped release spells is not
    # "meant as" one of this release's (data/sglang/env-0.5.13.post1.yml, env-0.5.23.yml)
    newer = sorted(grammar.sglang_env("0.5.23")["names"] - grammar.sglang_env("0.5.13.post1")["names"])
    assert newer
    assert all(grammar.meant_name(n, "0.5.13.post1") == ("", "") for n in newer)


def test_a_wrong_platform_on_a_host_that_serves_nothing_does_not_stop_the_plan() -> None:
    """sglang_gpu_platforms set group-wide with a mistake: the planner names it on the hosts that read it (servers); a
    host of sglang_role: none does not read it, and the checker's own read of the hardware must not raise there."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.plan import plan_site  # noqa: PLC0415

    wrong = {"h100x": {"display_name": "H100"}}  # no vendor, gpus_per_node, vram_gb
    server = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "low-latency", "ansible_host": "10.0.0.1",
              "sglang_gpu_platforms": wrong}
    hostvars = {"n": server, "mon": {"sglang_role": "none", "ansible_host": "10.0.9.20", "sglang_gpu_platforms": wrong,
                                     "sglang_recipes": "not a list"}}
    errors = plan_site(hostvars, {"all": ["mon", "n"]})["errors"]
    assert "sglang_gpu_platforms.h100x: needs 'vendor'" in " ".join(errors["n"]), errors
    # mon is refused only for what it sets and nothing of it reads (issue 40 item 4), never for the platform's mistake
    assert [m.split(":")[0] for m in errors.get("mon", [])] == ["sglang_recipes"], errors
