# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node acceptance, measurement half: all-reduce bus bandwidth and a GPU memory pattern test.

Runs with the Python of the SGLang the node will serve with (its torch and NCCL/RCCL: the uv venv's
bin/python, or python3 inside the image) and prints one JSON object. One worker process per GPU
(started with this same interpreter, so nothing is forked after CUDA is initialised).

- memory: per GPU, fill a buffer with 0x00, 0xFF, 0x55, 0xAA and an address pattern (and its inverse),
  write it all, then read it all back and count mismatches; then time device-to-device copies
  (bytes read + bytes written per second).
- all-reduce: bf16 sum over every GPU of the node (or of every member of a multi-node instance with
  --nnodes/--node-rank/--master/--port), per size: a correctness round (all ones -> world size),
  warm-up, then timed rounds. algbw = bytes / time; busbw = algbw * 2 (n - 1) / n, the figure
  nccl-tests reports and that is comparable with the links' bandwidth whatever n is.

The environment is used as given: the role passes exactly the NCCL_* / GLOO_* variables the serving
unit will have. Nothing is written outside the temporary folder of the run.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from typing import Any

PROBE = "metalserve-acceptance-bench/1"
ENV_PREFIXES = ("NCCL_", "GLOO_", "TORCH_NCCL", "TORCH_SYMM", "NVSHMEM_", "RCCL_", "HSA_")
ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
MIB = 2**20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", default="64,256,1024,4096", help="all-reduce message sizes (MiB)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed all-reduces per size")
    ap.add_argument("--iters", type=int, default=20, help="most timed all-reduces per size")
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds aimed at per size (fewer iters if slow)")
    ap.add_argument("--mem-gib", type=float, default=4.0, help="GPU memory the pattern test covers, per GPU")
    ap.add_argument("--skip-memory", action="store_true", help="all-reduce only (the fabric run)")
    ap.add_argument("--skip-allreduce", action="store_true")
    ap.add_argument("--nnodes", type=int, default=1)
    ap.add_argument("--node-rank", type=int, default=0)
    ap.add_argument("--master", default="127.0.0.1", help="rendezvous address (the instance head)")
    ap.add_argument("--port", type=int, default=0, help="rendezvous port (0: a free one; single node only)")
    ap.add_argument("--gpus-per-node", type=int, default=0, help="GPUs per node taking part (0: all visible)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds the rendezvous and one collective may take")
    ap.add_argument("--deadline", type=int, default=1200, help="seconds the whole run may take")
    ap.add_argument("--backend", default="", help="nccl (GPUs, the default) or gloo (CPU self-test)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--cpu-workers", type=int, default=2, help="with --device cpu: workers per node")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--local-rank", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def sizes(args: argparse.Namespace) -> list[int]:
    return [int(s) for s in str(args.sizes_mib).split(",") if s.strip()]


def interesting_env() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


def init_url(master: str, port: int) -> str:
    host = f"[{master}]" if ":" in master and not master.startswith("[") else master
    return f"tcp://{host}:{port}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------------------------------- worker


class Clock:
    """Elapsed seconds of GPU work: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch, self.cuda = torch, device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def time(self, fn: Any, reps: int) -> float:
        self.sync()
        if self.cuda:
            start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _round in range(reps):
                fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1e3
        t0 = time.perf_counter()
        for _round in range(reps):
            fn()
        return time.perf_counter() - t0


def memory_test(torch: Any, device: Any, gib: float) -> dict[str, Any]:
    """Write patterns over a buffer, read them back, count mismatches; then time copies."""
    clock = Clock(torch, device)
    want = int(gib * 2**30)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        want = min(want, int(free * 0.4))
    numel = max(2, (want // 4) // (2 * MIB) * (2 * MIB))  # int32 elements, an even number of MiB halves
    buf = torch.empty(numel, dtype=torch.int32, device=device)
    errors: dict[str, int] = {}
    started = time.perf_counter()
    for name, value in (("0x00", 0), ("0xFF", -1), ("0x55", 0x55555555), ("0xAA", -0x55555556)):
        buf.fill_(value)
        errors[name] = int((buf != value).sum().item())
    chunk = 1 << 26
    for name, invert in (("address", False), ("~address", True)):
        for s in range(0, numel, chunk):  # write everything first ...
            ref = torch.arange(s, min(numel, s + chunk), dtype=torch.int32, device=device)
            buf[s:s + ref.numel()] = torch.bitwise_not(ref) if invert else ref
        bad = 0
        for s in range(0, numel, chunk):  # ... then read it all back
            ref = torch.arange(s, min(numel, s + chunk), dtype=torch.int32, device=device)
            bad += int((buf[s:s + ref.numel()] != (torch.bitwise_not(ref) if invert else ref)).sum().item())
        errors[name] = bad
    patterns_s = time.perf_counter() - started
    half = numel // 2
    src, dst = buf[:half], buf[half:2 * half]
    clock.time(lambda: dst.copy_(src), 3)
    one = max(clock.time(lambda: dst.copy_(src), 1), 1e-6)
    reps = max(3, min(200, int(0.5 / one)))
    seconds = clock.time(lambda: dst.copy_(src), reps)
    moved = 2 * half * 4 * reps  # each copy reads and writes half the buffer
    del buf, src, dst
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"bytes": numel * 4, "errors": errors, "mismatches": sum(errors.values()), "patterns_s": round(patterns_s, 3),
            "copy_reps": reps, "copy_gb_s": round(moved / seconds / 1e9, 1)}


def reduce_max(torch: Any, dist: Any, device: Any, value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64 if device.type == "cpu" else torch.float32, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def allreduce_sweep(torch: Any, dist: Any, device: Any, args: argparse.Namespace, world: int) -> list[dict[str, Any]]:
    clock = Clock(torch, device)
    dtype = getattr(torch, args.dtype)
    width = torch.tensor([], dtype=dtype).element_size()
    rows: list[dict[str, Any]] = []
    for mib in sizes(args):
        nbytes = mib * MIB
        fits = 1.0
        if device.type == "cuda":
            fits = 1.0 if torch.cuda.mem_get_info(device)[0] > 1.5 * nbytes else 0.0
        if -reduce_max(torch, dist, device, -fits) < 1.0:  # every rank must have room, else all skip
            rows.append({"size_mib": mib, "size_bytes": nbytes, "skipped": "not enough free GPU memory on a rank"})
            continue
        x = torch.ones(nbytes // width, dtype=dtype, device=device)
        dist.all_reduce(x)
        clock.sync()
        correct = bool((x == world).all().item()) if world <= 256 else True
        correct = -reduce_max(torch, dist, device, -float(correct)) >= 1.0
        x.zero_()
        for _round in range(args.warmup):
            dist.all_reduce(x)
        clock.sync()
        t0 = time.perf_counter()
        dist.all_reduce(x)
        clock.sync()
        one = reduce_max(torch, dist, device, time.perf_counter() - t0)
        iters = max(3, min(args.iters, int(args.seconds / max(one, 1e-6))))
        dist.barrier()
        clock.sync()
        t0 = time.perf_counter()
        for _round in range(iters):
            dist.all_reduce(x)
        clock.sync()
        elapsed = reduce_max(torch, dist, device, time.perf_counter() - t0)
        per = elapsed / iters
        algbw = nbytes / per / 1e9
        rows.append({"size_mib": mib, "size_bytes": nbytes, "iters": iters, "time_us": round(per * 1e6, 1),
                     "algbw_gb_s": round(algbw, 2), "busbw_gb_s": round(algbw * 2 * (world - 1) / world, 2),
                     "correct": correct})
        del x
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def pci_bdf(torch: Any, index: int) -> str | None:
    props = torch.cuda.get_device_properties(index)
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    return f"{int(getattr(props, 'pci_domain_id', 0)):04x}:{int(bus):02x}:{int(getattr(props, 'pci_device_id', 0)):02x}.0"


def pcie_under_load(torch: Any, device: Any, bdf: str | None) -> dict[str, Any] | None:
    """The GPU's PCIe link from sysfs read while the GPU copies (idle GPUs may train their link down)."""
    if device.type != "cuda" or not bdf:
        return None
    base = f"/sys/bus/pci/devices/{bdf}"
    if not os.path.isdir(base):
        return {"bdf": bdf, "error": "not in sysfs"}
    buf = torch.empty(2**28, dtype=torch.int32, device=device)
    half = buf.numel() // 2
    for _round in range(200):  # queued: the GPU stays busy while the files are read
        buf[half:].copy_(buf[:half])
    out: dict[str, Any] = {"bdf": bdf}
    for name in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
        try:
            with open(os.path.join(base, name), encoding="utf-8") as handle:
                out[name] = handle.read().strip()
        except OSError:
            out[name] = None
    torch.cuda.synchronize()
    del buf
    return out


def worker(args: argparse.Namespace) -> int:
    import torch  # noqa: PLC0415 - the SGLang interpreter's torch
    import torch.distributed as dist  # noqa: PLC0415

    gpn = args.gpus_per_node
    rank, world = args.node_rank * gpn + args.local_rank, args.nnodes * gpn
    if args.device == "cuda":
        torch.cuda.set_device(args.local_rank)
        device = torch.device("cuda", args.local_rank)
        props = torch.cuda.get_device_properties(args.local_rank)
        name, memory, bdf = props.name, int(props.total_memory), pci_bdf(torch, args.local_rank)
    else:
        device, name, memory, bdf = torch.device("cpu"), "cpu", 0, None
    out: dict[str, Any] = {"rank": rank, "local_rank": args.local_rank, "device": name, "memory_bytes": memory,
                           "bdf": bdf, "memory": None, "allreduce": None, "pcie_under_load": None}
    if not args.skip_memory:
        out["memory"] = memory_test(torch, device, args.mem_gib)
    if world > 1 and not args.skip_allreduce:
        backend = args.backend or ("nccl" if args.device == "cuda" else "gloo")
        kwargs: dict[str, Any] = {}
        if args.device == "cuda":
            kwargs["device_id"] = device
        try:
            dist.init_process_group(backend, init_method=init_url(args.master, args.port), rank=rank, world_size=world,
                                    timeout=timedelta(seconds=args.timeout), **kwargs)
        except TypeError:  # torch older than 2.3 has no device_id
            dist.init_process_group(backend, init_method=init_url(args.master, args.port), rank=rank, world_size=world,
                                    timeout=timedelta(seconds=args.timeout))
        out["allreduce"] = allreduce_sweep(torch, dist, device, args, world)
        dist.destroy_process_group()
    out["pcie_under_load"] = pcie_under_load(torch, device, bdf)
    with open(args.result, "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    return 0


# ---------------------------------------------------------------------------------------------- parent


def tail(path: str, lines: int = 80) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "\n".join(handle.read().splitlines()[-lines:])
    except OSError:
        return ""


def versions(torch: Any) -> dict[str, Any]:
    nccl = None
    try:
        raw = torch.cuda.nccl.version()
        nccl = ".".join(str(p) for p in raw) if isinstance(raw, tuple) else str(raw)
    except Exception:  # noqa: BLE001 - a torch without NCCL/RCCL
        nccl = None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "hip": getattr(torch.version, "hip", None),
            "nccl": nccl}


def supervise(args: argparse.Namespace, gpn: int, port: int, result: dict[str, Any]) -> None:
    """Start one worker per local GPU, wait for all (a dead one ends the others after a grace period)."""
    work = tempfile.mkdtemp(prefix="metalserve-accept-")
    procs = []
    for local in range(gpn):
        argv = [sys.executable, os.path.abspath(__file__), "--worker", "--local-rank", str(local),
                "--gpus-per-node", str(gpn), "--port", str(port), "--result", os.path.join(work, f"r{local}.json")]
        for flag in ("sizes_mib", "warmup", "iters", "seconds", "mem_gib", "nnodes", "node_rank", "master", "timeout",
                     "backend", "device", "dtype"):
            argv += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
        argv += ["--skip-memory"] if args.skip_memory else []
        argv += ["--skip-allreduce"] if args.skip_allreduce else []
        log = open(os.path.join(work, f"r{local}.log"), "w", encoding="utf-8")  # noqa: SIM115 - closed below
        procs.append((local, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT), log))
    deadline = time.monotonic() + args.deadline
    failed_at = None
    while any(p.poll() is None for _rank, p, _log in procs):
        now = time.monotonic()
        if failed_at is None and any(p.poll() not in (None, 0) for _rank, p, _log in procs):
            failed_at = now
        if now > deadline or (failed_at is not None and now > failed_at + 15):
            for _rank, p, _log in procs:
                if p.poll() is None:
                    p.kill()
            result["errors"].append(f"stopped after {int(now - result['_t0'])}s: "
                                    + ("the run outlasted --deadline" if now > deadline else "a worker failed"))
            break
        time.sleep(0.2)
    for local, p, log in procs:
        p.wait()
        log.close()
        path = os.path.join(work, f"r{local}.json")
        if p.returncode == 0 and os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                result["workers"].append(json.load(handle))
        else:
            result["errors"].append(f"worker {local} (rank {args.node_rank * gpn + local}) exited {p.returncode}:\n"
                                    + tail(os.path.join(work, f"r{local}.log")))
    for name in os.listdir(work):
        os.unlink(os.path.join(work, name))
    os.rmdir(work)


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"probe": PROBE, "mode": "fabric" if args.nnodes > 1 else "local",
                              "nnodes": args.nnodes, "node_rank": args.node_rank, "python": sys.executable,
                              "env": interesting_env(), "sizes_mib": sizes(args), "dtype": args.dtype,
                              "workers": [], "errors": [], "_t0": time.monotonic()}
    try:
        import torch  # noqa: PLC0415
    except ImportError as exc:
        result["errors"].append(f"torch is not importable with {sys.executable}: {exc}")
        return result
    result.update(versions(torch))
    if args.device == "cuda":
        visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    else:
        visible = args.cpu_workers
    result["visible_gpus"] = visible
    gpn = args.gpus_per_node or visible
    result["gpus_per_node"] = gpn
    result["world_size"] = gpn * args.nnodes
    if visible == 0:
        result["errors"].append(f"no GPU visible to torch {torch.__version__} ({sys.executable})")
        return result
    if gpn > visible:
        result["errors"].append(f"{gpn} GPUs per node asked for, {visible} visible")
        return result
    if args.nnodes > 1 and not args.port:
        result["errors"].append("a multi-node run needs --port (the rendezvous port on the head)")
        return result
    supervise(args, gpn, args.port or free_port(), result)
    return result


def summarize(result: dict[str, Any]) -> None:
    """Lift the figures the controller judges to the top: all-reduce rows (every rank measured the same
    max-reduced times; the lowest rank's copy is kept) and per-GPU memory results."""
    workers = sorted(result.get("workers", []), key=lambda w: w["rank"])
    rows = next((w["allreduce"] for w in workers if w.get("allreduce") is not None), None)
    result["allreduce"] = rows
    best = [r for r in rows or [] if "busbw_gb_s" in r]
    result["busbw_peak_gb_s"] = max((r["busbw_gb_s"] for r in best), default=None)
    result["memory"] = [dict(w["memory"], rank=w["rank"], device=w["device"], bdf=w["bdf"]) for w in workers
                        if w.get("memory")]
    result["pcie_under_load"] = [w["pcie_under_load"] for w in workers if w.get("pcie_under_load")]
    result["ok"] = not result["errors"]
    result["elapsed_s"] = round(time.monotonic() - result.pop("_t0"), 1)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    result = run(args)
    if "_t0" in result:
        summarize(result)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
