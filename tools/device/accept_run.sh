#!/usr/bin/env bash
# Run the node_acceptance probes on a lent H200 machine (device tool), healthy and degraded, and pack the
# unedited outputs into $OUT/<tag>.tgz (they become tests/fixtures/acceptance/<tag>/).
# Usage: bash tools/device/accept_run.sh TAG [PROBE_DIR]   (PROBE_DIR holds accept_node.py, accept_bench.py)
# Runs with the machine's own python3 (its torch and NCCL), as the role runs them with SGLang's Python.
# The machine's NCCL_NVLS_ENABLE=0 (and the other multicast switches) stay as they are.
set -u
tag=${1:?tag, e.g. h200-x2}
probes=${2:-roles/node_acceptance/files}
work=/tmp/metalserve-accept/$tag
rm -rf "$work"; mkdir -p "$work"
py=$(command -v python3)
gpus=$(nvidia-smi -L | grep -c '^GPU ')
{
  echo "tag: $tag"; date -u +%FT%TZ; uname -r; nvidia-smi -L
  "$py" -c 'import torch,sys; print(sys.executable, torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'
  env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM)_' | sort
} > "$work/versions.txt" 2>&1
bench() {  # NAME ENV... -- ARGS...: one accept_bench.py run, its env given as VAR=value words
  local name=$1; shift
  local envs=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "== $name: ${envs[*]} accept_bench.py $*" >> "$work/commands.txt"
  env "${envs[@]}" "$py" "$probes/accept_bench.py" --out "$work/bench-$name.json" "$@" > "$work/bench-$name.log" 2>&1
}
"$py" "$probes/accept_node.py" --out "$work/node.json" > "$work/node.log" 2>&1
bench healthy -- --mem-gib 4
if [ "$gpus" -ge 2 ]; then
  # degraded intra-node links, as NCCL sees them
  bench p2p-off NCCL_P2P_DISABLE=1 -- --skip-memory
  bench nchannels-1 NCCL_MIN_NCHANNELS=1 NCCL_MAX_NCHANNELS=1 -- --skip-memory
  bench proto-ll NCCL_PROTO=LL -- --skip-memory
  # two "nodes" of one GPU each on this host, over sockets on lo: the fabric code path end to end
  fab=(NCCL_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
  # shellcheck disable=SC2054  # --sizes-mib takes one comma-separated value
  common=(--skip-memory --nnodes 2 --gpus-per-node 1 --master 127.0.0.1 --sizes-mib 64,256,1024 --timeout 60)
  bench fabric-lo-node1 "${fab[@]}" CUDA_VISIBLE_DEVICES=1 -- "${common[@]}" --node-rank 1 --port 29650 &
  bench fabric-lo-node0 "${fab[@]}" CUDA_VISIBLE_DEVICES=0 -- "${common[@]}" --node-rank 0 --port 29650
  wait
  # the same with a socket interface that does not exist (a wrong NCCL_SOCKET_IFNAME / rail)
  bad=(NCCL_SOCKET_IFNAME=ib9 GLOO_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=WARN)
  bench fabric-badif-node1 "${bad[@]}" CUDA_VISIBLE_DEVICES=1 -- "${common[@]}" --node-rank 1 --port 29651 --deadline 120 &
  bench fabric-badif-node0 "${bad[@]}" CUDA_VISIBLE_DEVICES=0 -- "${common[@]}" --node-rank 0 --port 29651 --deadline 120
  wait
  # a member whose head never answers (down, or a firewall gap): rendezvous times out
  bench fabric-nohead-node1 "${fab[@]}" CUDA_VISIBLE_DEVICES=1 -- "${common[@]}" --node-rank 1 --port 29652 --timeout 20 --deadline 90
fi
tar czf "$OUT/$tag.tgz" -C "$work" .
"$py" - "$work" <<'PY'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("bench-*.json")):
    d = json.loads(p.read_text())
    rows = " ".join(f"{r['size_mib']}MiB={r.get('busbw_gb_s')}" for r in d.get("allreduce") or [])
    mem = " ".join(f"gpu{m['rank']}:{m['copy_gb_s']}GB/s,{m['mismatches']}bad" for m in d.get("memory") or [])
    err = (d["errors"][0].strip().splitlines() or [""])[-1][:220] if d["errors"] else ""
    print(f"{p.stem}: ok={d['ok']} world={d.get('world_size')} nccl={d.get('nccl')} busbw[{rows}] mem[{mem}] {err}")
n = json.loads((pathlib.Path(sys.argv[1]) / "node.json").read_text())
print("node:", {k: v["rc"] for k, v in n["commands"].items()}, "pci:", n["pci"], "klog:", n["kernel_log"]["source"],
      len(n["kernel_log"]["lines"]), n["kernel_log"]["error"])
PY
