"""A local lab site: systemd containers (the molecule image) shaped like a small site, and site.yml
run against it with the hardware-bound stages off.

  lab.py up [--name lab] [--servers 2] [--shape pd|plain]   containers, network, inventory
  lab.py converge [--name lab] [--check] [ARGS...]          site.yml against it (prints the recap)
  lab.py destroy [--name lab]                               removes everything `up` made
  lab.py inventory [--name lab]                             prints the inventory path

Shapes: pd (default) - node1 a PD prefill worker, node2 a PD decode worker, a router in PD mode in front;
plain - N plain servers behind one router. The servers are GPU-less: SGLang is installed (uv, from the
venv volume the molecule scenarios share), weights are staged (a tiny checkpoint-shaped folder copied
from /mnt/shared), units are written, checked by SGLang's own parser and enabled, but not started
(without a GPU SGLang stops at device detection). The router is real sglang-router and serves.
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
IMAGE = os.environ.get("LAB_IMAGE", "metalserve-lab/debian-systemd:12")
VENV_VOLUME = "metalserve-sglang-venv"
SKIP = "preflight,drivers,rdma,container_runtime"
LABEL = "metalserve.lab"


def sh(args: list[str], check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=check, text=True, capture_output=True, **kw)


def lab_dir(name: str) -> Path:
    return CACHE / "lab" / "sites" / name


def containers(name: str) -> list[str]:
    out = sh(["docker", "ps", "-a", "--filter", f"label={LABEL}={name}", "--format", "{{.Names}}"]).stdout
    return sorted(out.split())


def start_container(name: str, host: str, network: str, checkpoint: Path) -> None:
    sh(["docker", "run", "-d", "--name", host, "--hostname", host, "--network", network, "--label", f"{LABEL}={name}",
        "--cap-add", "SYS_ADMIN", "--cap-add", "NET_ADMIN", "--security-opt", "seccomp=unconfined",
        "--security-opt", "apparmor=unconfined", "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
        "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "-v", f"{CACHE / 'uv'}:/var/cache/sglang-uv",
        "-v", f"{VENV_VOLUME}:/opt/sglang", "-v", f"{checkpoint}:/mnt/shared/tiny-org/Tiny:ro",
        "--stop-signal", "SIGRTMIN+3", IMAGE, "/lib/systemd/systemd"])


def wait_booted(host: str, timeout: float = 120) -> None:
    end = time.time() + timeout
    while time.time() < end:
        state = sh(["docker", "exec", host, "systemctl", "is-system-running"], check=False).stdout.strip()
        if state in ("running", "degraded"):
            return
        time.sleep(0.5)
    raise SystemExit(f"{host} did not finish booting in {timeout:.0f}s")


def inventory(name: str, servers: list[str], router: str, shape: str, extra: dict | None = None) -> dict:
    hosts = {h: {} for h in servers}
    if shape == "pd":
        hosts[servers[0]] = {"sglang_pd": {"role": "prefill", "transfer_backend": "mooncake"}}
        hosts[servers[1]] = {"sglang_pd": {"role": "decode", "transfer_backend": "mooncake"}}
    return {"all": {
        "vars": {"ansible_connection": "community.docker.docker", "sglang_install_method": "uv",
                 "sglang_rack": f"lab-{name}", **(extra or {})},
        "children": {
            "servers": {"hosts": hosts, "vars": {
                "sglang_gpu": "h200", "sglang_quant": "fp8",
                "sglang_strategy": "balanced" if shape == "pd" else "low-latency",
                "sglang_model_path": "/var/lib/sglang/models/tiny-org/Tiny",
                "model_weights_source": "copy", "model_weights_copy_source": "/mnt/shared/tiny-org/Tiny",
                "sglang_server_start": False}},
            "routers": {"hosts": {router: {}}, "vars": {
                "sglang_role": "router", "sglang_router_workers_group": "servers"}}}}}


def ensure_venv(name: str, inv: Path, first: str) -> None:
    """Fill the shared venv volume from one node before the others look at it (else they race)."""
    if sh(["docker", "exec", first, "test", "-x", "/opt/sglang/venvs/0.5.23/bin/sglang"], check=False).returncode == 0:
        return
    print(f"[lab {name}] installing SGLang into the shared venv volume from {first} (once)")
    play = lab_dir(name) / "fill-venv.yml"
    play.write_text(yaml.safe_dump([{"name": "Fill the venv volume", "hosts": first, "gather_facts": True,
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


def up(name: str, servers: int, shape: str, extra: dict | None = None) -> Path:
    subprocess.run(["bash", str(ROOT / "tests" / "lab" / "setup.sh")], check=True)
    if containers(name):
        raise SystemExit(f"lab {name} exists ({', '.join(containers(name))}); `lab.py destroy --name {name}` first")
    if shape == "pd" and servers != 2:
        raise SystemExit("the pd shape has exactly 2 servers (prefill and decode)")
    checkpoint = CACHE / "lab" / "weights-src"
    if not (checkpoint / "model.safetensors.index.json").exists():
        sh([sys.executable, str(ROOT / "tests" / "lab" / "make_checkpoint.py"), str(checkpoint)])
    network = f"metalserve-{name}-net"
    sh(["docker", "network", "create", "--label", f"{LABEL}={name}", network])
    nodes = [f"metalserve-{name}-node{i}" for i in range(1, servers + 1)]
    router = f"metalserve-{name}-router"
    for host in nodes + [router]:
        start_container(name, host, network, checkpoint)
    for host in nodes + [router]:
        wait_booted(host)
    lab_dir(name).mkdir(parents=True, exist_ok=True)
    inv = lab_dir(name) / "hosts.yml"
    inv.write_text("# Written by tests/lab/lab.py: a lab site of GPU-less systemd containers\n"
                   + yaml.safe_dump(inventory(name, nodes, router, shape, extra), sort_keys=False))
    ensure_venv(name, inv, nodes[0])
    print(f"[lab {name}] up: {', '.join(nodes + [router])}; inventory {inv}")
    return inv


def converge(name: str, check: bool, extra: list[str]) -> subprocess.CompletedProcess:
    inv = lab_dir(name) / "hosts.yml"
    if not inv.exists():
        raise SystemExit(f"no lab {name}: `lab.py up --name {name}` first")
    args = ["ansible-playbook", "-i", str(inv), "playbooks/site.yml", "--skip-tags", SKIP] + (["--check"] if check else [])
    return run_ansible(args + extra)


def destroy(name: str, roots: tuple[Path, ...] = (ROOT,)) -> None:
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
    ap.add_argument("--shape", choices=["pd", "plain"], default="pd")
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
