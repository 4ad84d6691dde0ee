"""A local lab site: systemd containers (the molecule image) shaped like a small site, and site.yml
run against it with the hardware-bound stages off.

  lab.py up [--name lab] [--servers 2] [--shape pd|plain]   containers, network, inventory
  lab.py converge [--name lab] [--check] [ARGS...]          site.yml against it (prints the recap)
  lab.py destroy [--name lab]                               removes everything `up` made
  lab.py inventory [--name lab]                             prints the inventory path

Shapes: pd (default) - node1 a PD prefill worker, node2 a PD decode worker, a router in PD mode in front;
plain - N plain servers behind one router; full - the pd shape (with sglang_dist_interface) plus node3 a
uv server of another SGLang release (0.5.13.post1), node4 a docker-mode server whose image comes through
a registry mirror (the lab registry's stand-in), and a docker-mode router in front of those two; mixed - a site
of three models (issue 28): node1 GLM-5.3 (H200), node2 DeepSeek-V4-Pro (B200), node3 four TP2 replicas of
Qwen3.8-27B (H200, sglang_replicas: 4), and one real sglang-router per model (router-glm, router-dsv4,
router-qwen); docker - N plain servers of which all but the last are docker installs with a Docker daemon of their
own (the node image DOCKERD_IMAGE: Debian's docker.io, a real Docker Engine standing in for the docker-ce the skipped
container_runtime stage installs from Docker's repository, and a stand-in NVIDIA Container Toolkit hook so that
`--gpus all` starts a container on a GPU-less node), pulling from the lab registry through the lab network's gateway;
the last server is a uv install, so the site mixes both. In the mixed shape each server's endpoint (every replica's --port) is answered by a TEST DOUBLE
(tests/doubles/openai_double.py, a unit of its own named metalserve-test-double-<port>, started before the
converge) standing in for the SGLang server the node cannot start, so the routers and verify.yml reach every
instance of every model. The
servers are GPU-less: SGLang is installed (uv, from the venv volume the molecule scenarios share), weights
are staged (a tiny checkpoint-shaped folder copied from /mnt/shared), units are written, checked by
SGLang's own parser and enabled, but not started (without a GPU SGLang stops at device detection). The
PD router is real sglang-router and serves; the docker-mode ones are written and enabled (their image
is a stand-in; molecule/sglang_router_docker runs a real one).
Transport: like a real site, Ansible connects over SSH to each container's address on the lab's docker
network, as the unprivileged `ops` account with sudo, checking host keys against the known_hosts file the
lab writes from the containers' own keys (read through `docker exec`, never trusted on first use).
Skipped stages: preflight, drivers, rdma, container_runtime (they need GPUs, HCAs or a real kernel).
Kept by destroy: the caches it shares with molecule (the image, the uv cache, the venv volume).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("METALSERVE_CACHE", Path.home() / ".cache" / "metalserve-sglang"))
IMAGE = os.environ.get("LAB_IMAGE", "metalserve-lab/debian-sshd:12")
# shared by the lab's nodes: the release venvs only (each node keeps its own /opt/sglang/current, which points at
# the release that node runs; nodes of two releases share the volume)
VENV_VOLUME = "metalserve-sglang-venvs"
# the hardware-bound stages: lab nodes have no GPU (accept: node acceptance, once site.yml has that stage)
# monitoring: its DCGM exporter comes from NVIDIA's repository, like the drivers; molecule/monitoring tests it
SKIP = "preflight,drivers,rdma,container_runtime,accept,monitoring"
LABEL = "metalserve.lab"


def sh(args: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, text=True, capture_output=True, **kw)


def lab_dir(name: str) -> Path:
    return CACHE / "lab" / "sites" / name


def containers(name: str) -> list[str]:
    out = sh(["docker", "ps", "-a", "--filter", f"label={LABEL}={name}", "--format", "{{.Names}}"]).stdout
    return sorted(out.split())


SSH_KEY = CACHE / "lab" / "ssh" / "id_ed25519"
USER = "ops"


#: the node image of the docker shape: the lab image with a Docker daemon of its own (built by dockerd_image())
DOCKERD_IMAGE = "metalserve-lab/debian-sshd-dockerd:12"
#: The stand-in for the NVIDIA Container Toolkit's OCI hook. dockerd (daemon/nvidia_linux.go) answers `--gpus` only
#: where nvidia-container-runtime-hook is on its PATH, and runs it as the container's prestart hook; this one reads
#: the container state runc gives it and exposes nothing (the lab's nodes have no GPU).
STANDIN_HOOK = """#!/bin/sh
# STAND-IN for the NVIDIA Container Toolkit's nvidia-container-runtime-hook (tests/lab/lab.py; tests only):
# the lab node has no GPU, so the container gets none
cat >/dev/null
exit 0
"""
#: the nodes' daemons: overlay2 (a silent fall back to vfs would copy every layer; this fails loudly instead), their
#: bridges on addresses no Docker network of the machine hands out; up() adds the lab registry's address on the lab
#: network's gateway as an insecure (plain HTTP) registry, as 127.0.0.0/8 is by default
DOCKERD_CONFIG = {"storage-driver": "overlay2", "bip": "10.251.0.1/24",
                  "default-address-pools": [{"base": "10.251.16.0/20", "size": 24}]}


def dockerd_image() -> str:
    """DOCKERD_IMAGE, built from IMAGE when missing or when IMAGE or this recipe changed (Debian's docker.io from
    Debian's mirror, the stand-in hook, the daemon's configuration)."""
    base = sh(["docker", "image", "inspect", "-f", "{{.Id}}", IMAGE]).stdout.strip()
    # no package lists left, and an old lists mtime, as in the lab image (setup.sh): apt's cache_valid_time must not
    # trust lists of the build's day; python3-requests stays out (sglang_install's docker step installs it)
    steps = ("RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
             "docker.io >/dev/null && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb "
             "&& mkdir -p /var/lib/apt/lists/partial && touch -d @0 /var/lib/apt/lists\n"
             "COPY nvidia-container-runtime-hook /usr/bin/nvidia-container-runtime-hook\n"
             "COPY daemon.json /etc/docker/daemon.json\n")
    recipe = json.dumps([base, STANDIN_HOOK, DOCKERD_CONFIG, steps], sort_keys=True)
    key = subprocess.run(["sha256sum"], input=recipe, text=True, capture_output=True, check=True).stdout[:16]
    have = sh(["docker", "image", "inspect", "-f", '{{ index .Config.Labels "metalserve.lab.key" }}', DOCKERD_IMAGE],
              check=False).stdout.strip()
    if have == key:
        return DOCKERD_IMAGE
    ctx = Path(sh(["mktemp", "-d"]).stdout.strip())
    (ctx / "nvidia-container-runtime-hook").write_text(STANDIN_HOOK)
    (ctx / "nvidia-container-runtime-hook").chmod(0o755)  # COPY keeps the mode (the legacy builder has no --chmod)
    (ctx / "daemon.json").write_text(json.dumps(DOCKERD_CONFIG, indent=1) + "\n")
    (ctx / "Dockerfile").write_text(
        f"FROM {IMAGE}\n"
        f'LABEL metalserve.lab.key="{key}" org.opencontainers.image.description="lab node with a Docker daemon of its '
        'own (Debian docker.io) and a stand-in NVIDIA Container Toolkit hook; tests only"\n' + steps)
    print(f"[lab] building {DOCKERD_IMAGE} (once; Debian's docker.io inside)")
    subprocess.run(["docker", "build", "-q", "-t", DOCKERD_IMAGE, str(ctx)], check=True, stdout=subprocess.DEVNULL)
    sh(["rm", "-rf", str(ctx)])
    return DOCKERD_IMAGE


def trust_registry(host: str, registry: str) -> None:
    """The node's daemon pulls from the lab registry over plain HTTP at `registry` (the lab network's gateway)."""
    config = {**DOCKERD_CONFIG, "insecure-registries": [registry]}
    sh(["docker", "exec", "-i", host, "sh", "-c", "cat > /etc/docker/daemon.json && systemctl restart docker"],
       input=json.dumps(config, indent=1) + "\n", check=False)
    info = sh(["docker", "exec", host, "docker", "info", "-f", "{{.Driver}} {{json .RegistryConfig.IndexConfigs}}"],
              check=False).stdout
    if not info.startswith("overlay2 ") or f'"{registry}"' not in info:
        journal = sh(["docker", "exec", host, "journalctl", "-u", "docker", "-n", "20", "--no-pager"], check=False).stdout
        raise SystemExit(f"{host}: its Docker daemon did not start with overlay2 and the registry {registry} "
                         f"(docker info: {info.strip() or 'no answer'}):\n{journal}")


def start_container(name: str, host: str, network: str, checkpoint: Path, docker_socket: bool = False,
                    dockerd: bool = False) -> None:
    extra = ["-v", "/var/run/docker.sock:/var/run/docker.sock"] if docker_socket else []
    # a node's own daemon keeps its images and containers on a volume of the machine's file system (removed with
    # the node), where its overlay2 driver can mount layers (the container's own root is an overlay already); it
    # gets no SGLang venvs: what it runs must come from its images
    extra += ["-v", "/var/lib/docker"] if dockerd else ["-v", f"{VENV_VOLUME}:/opt/sglang/venvs"]
    sh(["docker", "run", "-d", "--name", host, "--hostname", host, "--network", network, "--label", f"{LABEL}={name}",
        *extra,
        "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
        "--security-opt", "apparmor=unconfined", "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
        "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "-v", f"{CACHE / 'uv'}:/var/cache/sglang-uv",
        "-v", f"{checkpoint}:/mnt/shared/tiny-org/Tiny:ro",
        "--stop-signal", "SIGRTMIN+3", DOCKERD_IMAGE if dockerd else IMAGE, "/lib/systemd/systemd"])


def wait_booted(host: str, timeout: float = 120, restarts: int = 2) -> None:
    """Until the container's systemd is up. Started among dozens of others (bench.py's N=32), a container's systemd
    now and then exits within its first second (status 255, nothing logged) and starts fine again: such a container
    is started again, at most `restarts` times, and said so."""
    end = time.time() + timeout
    while time.time() < end:
        state = sh(["docker", "exec", host, "systemctl", "is-system-running"], check=False).stdout.strip()
        if state in ("running", "degraded"):
            return
        status = sh(["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", host], check=False).stdout.split()
        if status and status[0] == "exited" and restarts > 0:
            print(f"[lab] {host} exited while booting (status {' '.join(status[1:])}): starting it again")
            sh(["docker", "start", host])
            restarts -= 1
            end = time.time() + timeout
        time.sleep(0.5)
    raise SystemExit(f"{host} did not finish booting in {timeout:.0f}s")


def address(host: str) -> str:
    return sh(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", host]).stdout.strip()


def known_hosts(hosts: list[str], path: Path, timeout: float = 60) -> dict[str, str]:
    """{host: IP}, and known_hosts lines from each container's own host key (read out of band)."""
    lines, ips = [], {}
    for host in hosts:
        end = time.time() + timeout
        while True:
            key = sh(["docker", "exec", host, "cat", "/etc/ssh/ssh_host_ed25519_key.pub"], check=False)
            listening = sh(["docker", "exec", host, "systemctl", "is-active", "ssh"], check=False).stdout.strip()
            if key.returncode == 0 and listening == "active":
                break
            if time.time() > end:
                raise SystemExit(f"{host}: sshd did not come up in {timeout:.0f}s")
            time.sleep(0.5)
        ips[host] = address(host)
        lines.append(f"{ips[host]} {' '.join(key.stdout.split()[:2])}")
    path.write_text("\n".join(lines) + "\n")
    return ips


def ssh_vars(known: Path) -> dict:
    """What an inventory of real nodes says: who to log in as, with which key, which host keys to trust."""
    return {"ansible_connection": "ssh", "ansible_user": USER, "ansible_ssh_private_key_file": str(SSH_KEY),
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={known}"}


def inventory(name: str, servers: list[str], router: str, shape: str, extra: dict | None = None,
              ips: dict[str, str] | None = None, known: Path | None = None, registry: str = "") -> dict:
    ips = ips or {}
    hosts = {h: {"ansible_host": ips[h]} if h in ips and known else {} for h in servers}
    if shape in ("pd", "full"):
        hosts[servers[0]].update(sglang_pd={"role": "prefill", "transfer_backend": "mooncake"})
        hosts[servers[1]].update(sglang_pd={"role": "decode", "transfer_backend": "mooncake"})
    transport = ssh_vars(known) if known else {"ansible_connection": "community.docker.docker"}
    doc = {"all": {
        "vars": {**transport, "sglang_install_method": "uv",
                 "sglang_rack": f"lab-{name}", **(extra or {})},
        "children": {
            "servers": {"hosts": hosts, "vars": {
                "sglang_gpu": "h200", "sglang_quant": "fp8",
                "sglang_strategy": "high-throughput" if shape == "pd" else "low-latency",
                "sglang_model_path": "/var/lib/sglang/models/tiny-org/Tiny",
                "model_weights_source": "copy", "model_weights_copy_source": "/mnt/shared/tiny-org/Tiny",
                "sglang_server_start": False}},
            "routers": {"hosts": {router: {"ansible_host": ips[router]} if router in ips and known else {}}, "vars": {
                "sglang_role": "router", "sglang_router_workers_group": "servers"}}}}}
    if shape == "docker":
        # all servers but the last run their server as a container of their own daemon, pulling through the gateway;
        # the image's stand-in holds no SGLang parser to validate with (make slow runs the real ones)
        doc["all"]["children"]["docker_servers"] = {"hosts": {h: {} for h in servers[:-1]}, "vars": {
            "sglang_install_method": "docker", "sglang_install_registry_mirror": f"{registry}/",
            "sglang_server_validate": False}}
    if shape == "full":
        children = doc["all"]["children"]
        pd = {h: hosts.pop(h) for h in servers[:2]}
        for h in pd.values():
            h["sglang_dist_interface"] = "eth0"
        children["servers"]["hosts"] = pd
        # node3 (uv, another release) and node4 (docker, image through the mirror) behind a docker-mode router
        children["singles"] = {"hosts": {servers[2]: {**hosts[servers[2]], "sglang_version": "0.5.13.post1"},
                                         servers[3]: {**hosts[servers[3]], "sglang_install_method": "docker",
                                                      "sglang_install_registry_mirror": "127.0.0.1:5000/",
                                                      "sglang_server_validate": False}},
                               "vars": {**children["servers"]["vars"], "sglang_strategy": "low-latency",
                                        "sglang_extra_args": {"--max-running-requests": 48}}}
        children["docker_routers"] = {"hosts": {f"{router}2": {"ansible_host": ips.get(f"{router}2")}}, "vars": {
            "sglang_role": "router", "sglang_router_workers_group": "singles", "sglang_install_method": "docker",
            "sglang_install_registry_mirror": "127.0.0.1:5000/", "sglang_router_service_start": False,
            "sglang_instance": "router-singles"}}
    return doc


#: the mixed shape: (node suffix, its group, the group's variables); one router per group, named router-<group>
MIXED = (
    ("node1", "glm", {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput"}),
    ("node2", "dsv4", {"sglang_gpu": "b200", "sglang_model": "deepseek-v4-pro", "sglang_strategy": "balanced"}),
    ("node3", "qwen", {"sglang_gpu": "h200", "sglang_model": "qwen3.8-27b", "sglang_strategy": "balanced",
                       "sglang_extra_args": ["--tp-size", "2"], "sglang_replicas": 4}),
)
#: what the TEST DOUBLE answers on each server node of the mixed shape: (--port, served model name) per instance
MIXED_DOUBLES = {"node1": [(30000, "zai-org/GLM-5.3")], "node2": [(30000, "deepseek-ai/DeepSeek-V4-Pro")],
                 "node3": [(30000 + 10 * i, "Qwen/Qwen3.8-27B-FP8") for i in range(4)]}
#: the request fields each double answers with reasoning_content, written from SGLang 0.5.23's own code, not from the
#: collection's data (sglang/srt/parser/reasoning_parser.py: Glm45Detector and Qwen3Detector reasoning_default
#: "enable_thinking", DeepSeekV4Detector "explicit_thinking"; sglang/srt/entrypoints/openai/serving_chat.py
#: _get_reasoning_toggle_param strips "explicit_"), so verify.yml fails unless it asks each model its own way
MIXED_REASONING = {"zai-org/GLM-5.3": {"chat_template_kwargs": {"enable_thinking": True}},
                   "deepseek-ai/DeepSeek-V4-Pro": {"chat_template_kwargs": {"thinking": True}},
                   "Qwen/Qwen3.8-27B-FP8": {"chat_template_kwargs": {"enable_thinking": True}}}


def mixed_hosts(name: str) -> tuple[list[str], list[str]]:
    """(server containers, router containers) of the mixed shape."""
    return ([f"metalserve-{name}-{node}" for node, _group, _v in MIXED],
            [f"metalserve-{name}-router-{group}" for _node, group, _v in MIXED])


def mixed_inventory(name: str, ips: dict[str, str], known: Path | None, extra: dict | None = None) -> dict:
    servers, routers = mixed_hosts(name)
    transport = ssh_vars(known) if known else {"ansible_connection": "community.docker.docker"}

    def host(h: str) -> dict:
        return {"ansible_host": ips[h]} if h in ips and known else {}
    children = {group: {"hosts": {server: host(server)}, "vars": variables}
                for server, (_node, group, variables) in zip(servers, MIXED)}
    return {"all": {
        "vars": {**transport, "sglang_install_method": "uv", "sglang_rack": f"lab-{name}", **(extra or {})},
        "children": {
            "servers": {"children": children, "vars": {
                "sglang_model_path": "/var/lib/sglang/models/tiny-org/Tiny",
                "model_weights_source": "copy", "model_weights_copy_source": "/mnt/shared/tiny-org/Tiny",
                "sglang_server_start": False}},
            "routers": {"hosts": {router: {**host(router), "sglang_router_workers_group": group}
                                  for router, (_node, group, _v) in zip(routers, MIXED)},
                        "vars": {"sglang_role": "router"}}}}}


def start_doubles(name: str) -> None:
    """The TEST DOUBLE (tests/doubles/openai_double.py) on every port a server of the mixed shape listens on, each a
    unit of its own (never one of the collection's names), labelled as what it is."""
    double = ROOT / "tests" / "doubles" / "openai_double.py"
    for node, answers in MIXED_DOUBLES.items():
        host = f"metalserve-{name}-{node}"
        sh(["docker", "cp", str(double), f"{host}:/usr/local/bin/openai_double.py"])
        for port, model in answers:
            unit = "\n".join([
                "# TEST DOUBLE of an SGLang server (tests/doubles/openai_double.py): it answers on the --port of the",
                "# server the lab writes and enables but cannot start (no GPU). Not part of the collection.",
                "[Unit]", f"Description=TEST DOUBLE standing in for the SGLang server on port {port} ({model})", "",
                "[Service]", f"ExecStart=/usr/bin/python3 /usr/local/bin/openai_double.py --host 0.0.0.0 --port {port} "
                f"--model {model} --tpot-ms 1 --reasoning-request '{json.dumps(MIXED_REASONING[model])}'",
                "Restart=on-failure", "", "[Install]", "WantedBy=multi-user.target", ""])
            path = f"/etc/systemd/system/metalserve-test-double-{port}.service"
            sh(["docker", "exec", "-i", host, "sh", "-c", f"cat > {path}"], input=unit)
            sh(["docker", "exec", host, "systemctl", "enable", "--now", path.rsplit("/", 1)[1]])


def ensure_venv(name: str, inv: Path, first: str) -> None:
    """Fill the shared venv volume from one node before the others look at it (else they race)."""
    if sh(["docker", "exec", first, "test", "-x", "/opt/sglang/venvs/0.5.23/bin/sglang"], check=False).returncode == 0:
        return
    print(f"[lab {name}] installing SGLang into the shared venv volume from {first} (once)")
    play = lab_dir(name) / "fill-venv.yml"
    play.write_text(yaml.safe_dump([{"name": "Fill the venv volume", "hosts": first, "gather_facts": True, "become": True,
                                     "roles": [{"role": "metalserve.sglang.sglang_install"}]}]))
    run_ansible(["ansible-playbook", "-i", str(inv), str(play)], quiet=True)


def run_ansible(args: list[str], quiet: bool = False, extra_env: dict | None = None,
                root: Path = ROOT) -> subprocess.CompletedProcess:
    """ansible-playbook from `root` (this checkout, or another one such as bench.py's --compare worktree)."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(root / "ansible.cfg"),
           "ANSIBLE_COLLECTIONS_PATH": str(root / ".build" / "collections"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", **(extra_env or {})}
    binary = Path(sys.executable).parent / args[0]
    proc = subprocess.run([str(binary)] + args[1:], cwd=root, env=env, text=True, capture_output=True, check=False)
    if not quiet or proc.returncode:
        sys.stdout.write(proc.stdout[-6000:] if quiet else proc.stdout)
        sys.stderr.write(proc.stderr[-3000:])
    if proc.returncode and quiet:
        raise SystemExit(proc.returncode)
    return proc


def up(name: str, servers: int, shape: str, extra: dict | None = None, transport: str = "ssh") -> Path:
    """Build the lab; transport ssh (default, as a real site) or docker (docker exec as root: earlier
    revisions of the collection, which bench.py's ref: profiles run, knew no other)."""
    subprocess.run(["bash", str(ROOT / "tests" / "lab" / "setup.sh")], check=True)
    if containers(name):
        raise SystemExit(f"lab {name} exists ({', '.join(containers(name))}); `lab.py destroy --name {name}` first")
    if shape == "pd" and servers != 2:
        raise SystemExit("the pd shape has exactly 2 servers (prefill and decode)")
    if shape == "mixed":
        servers = len(MIXED)
    if shape == "full":
        servers = 4
        registry = str(ROOT / "tests" / "lab" / "registry.sh")
        sh(["bash", registry, "start"])
        sh(["bash", registry, "standin", "lmsysorg/sglang:latest", "1"])
    checkpoint = CACHE / "lab" / "weights-src"
    if not (checkpoint / "model.safetensors.index.json").exists():
        sh([sys.executable, str(ROOT / "tests" / "lab" / "make_checkpoint.py"), str(checkpoint)])
    network = f"metalserve-{name}-net"
    sh(["docker", "network", "create", "--label", f"{LABEL}={name}", network])
    registry = ""
    if shape == "docker":
        # the nodes' own daemons reach the lab registry where the lab network meets the machine
        gateway = sh(["docker", "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", network]).stdout.strip()
        registry = f"{gateway}:5000"
        script = str(ROOT / "tests" / "lab" / "registry.sh")
        sh(["bash", script, "start"])
        lab_dir(name).mkdir(parents=True, exist_ok=True)
        (lab_dir(name) / "registry-listener").write_text(registry + "\n")   # first: destroy stops it whatever happens
        sh(["bash", script, "listen", registry])
        dockerd_image()
    nodes = [f"metalserve-{name}-node{i}" for i in range(1, servers + 1)]
    router = f"metalserve-{name}-router"
    every = nodes + [router] + ([f"{router}2"] if shape == "full" else [])
    if shape == "mixed":
        every = [h for hosts in mixed_hosts(name) for h in hosts]
    for host in every:
        start_container(name, host, network, checkpoint,
                        docker_socket=shape == "full" and host in (nodes[-1], f"{router}2"),
                        dockerd=shape == "docker" and host in nodes[:-1])
    for host in every:
        wait_booted(host)
    for host in nodes[:-1] if shape == "docker" else []:
        trust_registry(host, registry)
    lab_dir(name).mkdir(parents=True, exist_ok=True)
    known = lab_dir(name) / "known_hosts"
    ips = known_hosts(every, known)
    inv = lab_dir(name) / "hosts.yml"
    if shape == "mixed":
        doc = mixed_inventory(name, ips, known if transport == "ssh" else None, extra)
        start_doubles(name)
    else:
        doc = inventory(name, nodes, router, shape, extra, ips, known if transport == "ssh" else None, registry)
    inv.write_text("# Written by tests/lab/lab.py: a lab site of GPU-less systemd containers, reached over "
                   f"{transport}\n" + yaml.safe_dump(doc, sort_keys=False))
    ensure_venv(name, inv, nodes[-1] if shape == "docker" else nodes[0])   # a uv node: docker nodes have no venvs
    print(f"[lab {name}] up: {', '.join(every)}; inventory {inv}")
    return inv


def converge(name: str, check: bool, extra: list[str]) -> subprocess.CompletedProcess:
    inv = lab_dir(name) / "hosts.yml"
    if not inv.exists():
        raise SystemExit(f"no lab {name}: `lab.py up --name {name}` first")
    args = ["ansible-playbook", "-i", str(inv), "playbooks/site.yml", "--skip-tags", SKIP] + (["--check"] if check else [])
    return run_ansible(args + extra)


def destroy(name: str, roots: tuple[Path, ...] = (ROOT,)) -> None:
    listener = lab_dir(name) / "registry-listener"
    if listener.exists():  # the docker shape's registry address on the lab network's gateway
        sh(["bash", str(ROOT / "tests" / "lab" / "registry.sh"), "unlisten", listener.read_text().strip()], check=False)
    for host in containers(name):
        sh(["docker", "rm", "-f", "-v", host], check=False)
    for root in roots:  # facts cached (ansible.cfg's jsonfile cache) for hosts of this name belong to old containers
        for cached in (root / ".cache" / "facts").glob(f"metalserve-{name}-*"):
            cached.unlink()
    nets = sh(["docker", "network", "ls", "--filter", f"label={LABEL}={name}", "--format", "{{.Name}}"]).stdout.split()
    for net in nets:
        sh(["docker", "network", "rm", net], check=False)
    if lab_dir(name).exists():
        sh(["rm", "-rf", str(lab_dir(name))])
    left = containers(name) + sh(["docker", "network", "ls", "--filter", f"label={LABEL}={name}", "--format",
                                  "{{.Name}}"]).stdout.split()
    if left:
        raise SystemExit(f"lab {name}: could not remove {', '.join(left)}")
    print(f"[lab {name}] destroyed (kept the shared caches: image {IMAGE}, volume {VENV_VOLUME}, {CACHE / 'uv'})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["up", "converge", "destroy", "inventory", "status"])
    ap.add_argument("--name", default="lab")
    ap.add_argument("--servers", type=int, default=2)
    ap.add_argument("--shape", choices=["pd", "plain", "full", "mixed", "docker"], default="pd")
    ap.add_argument("--check", action="store_true")
    args, extra = ap.parse_known_args()
    if args.command == "up":
        up(args.name, args.servers, args.shape)
    elif args.command == "converge":
        return converge(args.name, args.check, extra).returncode
    elif args.command == "destroy":
        destroy(args.name)
    elif args.command == "inventory":
        print(lab_dir(args.name) / "hosts.yml")
    else:
        print(json.dumps({"containers": containers(args.name), "dir": str(lab_dir(args.name))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
