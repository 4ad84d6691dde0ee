#!/usr/bin/env bash
# Node acceptance with GPU memory held by a process on a lent H200 (device tool): the role's node probe and the role
# itself through Ansible, (1) with the GPU idle, (2) with a foreign process holding ~100 GiB (tools/device/gpu_hog.py,
# started from this shell: not a serving unit), (3) with the same process inside the cgroup systemd gives the plan's
# unit, /system.slice/sglang-acc.service (systemd-run where systemd runs, else a cgroup made by hand).
# Usage: bash tools/device/accept_foreign_run.sh DIR   (DIR: collection.tar from `git archive`, whl/ with ansible-core)
# Independent records beside the probe's JSON: `nvidia-smi --query-compute-apps` CSV, the hog's own pid file,
# `cat /proc/<pid>/cgroup`. Everything lands in $OUT/foreign-run.tgz (tests/fixtures/acceptance/h200-x1-foreign/).
set -u
dir=$(cd "${1:?dir}" && pwd)
py=$(command -v python3)
gib=${HOG_GIB:-100}
work=/tmp/metalserve-foreign; rm -rf "$work"; mkdir -p "$work/coll/ansible_collections/metalserve/sglang" "$work/out"
out=$work/out
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$dir"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
tar xf "$dir/collection.tar" -C "$work/coll/ansible_collections/metalserve/sglang"
col=$work/coll/ansible_collections/metalserve/sglang
probes=$col/roles/node_acceptance/files
export ANSIBLE_CONFIG=$col/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$work/coll ANSIBLE_NOCOLOR=1 ANSIBLE_CACHE_PLUGIN=memory
export ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{
  date -u +%FT%TZ; uname -r; nvidia-smi -L
  "$py" -c 'import torch,sys; print(sys.executable, torch.__version__, torch.version.cuda)'
  ansible --version | head -1
  echo "pid 1: $(cat /proc/1/comm)"; echo "this shell's cgroup: $(cat /proc/self/cgroup)"
  echo "cgroup fs: $(stat -fc %T /sys/fs/cgroup 2>&1)"; systemctl is-system-running 2>&1 | head -1
} > "$out/versions.txt" 2>&1
cat > "$work/inventory.yml" <<INV
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: $py
    node_acceptance_method: uv
    node_acceptance_python: $py
  hosts:
    h200-x1:
      sglang_instance: acc
      sglang_model: tiny
      sglang_quant: bf16
      sglang_strategy: balanced
      sglang_gpu: h200
      sglang_install_method: uv
      sglang_recipes:
        - id: tiny
          checkpoints: {bf16: {id: example-org/Tiny, size_gb: 2}}
          cells:
            - {gpu: h200, quant: bf16, strategy: balanced, nodes: 1, verified: true, flags: {--tp-size: 1}}
INV
cat > "$work/accept.yml" <<'PLAY'
- name: Node acceptance on the lent machine
  hosts: all
  gather_facts: false
  vars:
    node_acceptance_report_dir: "{{ report }}"
  roles:
    - role: metalserve.sglang.node_acceptance
PLAY
apps() {  # NAME: what nvidia-smi itself lists, the independent record of who holds the GPU
  nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id,used_memory --format=csv > "$out/apps-$1.csv" 2>&1
}
probe() {  # NAME: the role's node probe, unedited output
  "$py" "$probes/accept_node.py" --out "$out/node-$1.json" > "$out/node-$1.log" 2>&1
}
role() {  # NAME ARGS...: one ansible-playbook run, its output and rc kept
  local name=$1; shift
  echo "== $name: ansible-playbook -i inventory.yml accept.yml $*" >> "$out/commands.txt"
  ansible-playbook -i "$work/inventory.yml" "$work/accept.yml" -e "report=$out/$name" "$@" > "$out/$name.log" 2>&1
  echo "rc=$?" >> "$out/$name.log"
}
hog() {  # NAME LAUNCHER...: start the hog through LAUNCHER, wait until it holds the memory, record who it is
  local name=$1; shift
  rm -f "$work/ready"
  echo "== $name: $* $py gpu_hog.py $gib" >> "$out/commands.txt"
  "$@" "$py" "$col/tools/device/gpu_hog.py" "$gib" "$work/ready" > "$out/hog-$name.log" 2>&1 &
  for _ in $(seq 120); do [ -s "$work/ready" ] && break; sleep 1; done
  cp "$work/ready" "$out/hog-$name.pid" 2>/dev/null || { echo "hog $name never got ready"; return 1; }
  local pid; pid=$(cut -d' ' -f1 "$work/ready")
  cat "/proc/$pid/cgroup" > "$out/hog-$name.cgroup"
}
unhog() {  # NAME: stop that hog by its pid and wait until nvidia-smi lists nothing
  kill "$(cut -d' ' -f1 "$out/hog-$1.pid")"
  for _ in $(seq 60); do [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && break; sleep 1; done
}
# (1) idle
apps idle; probe idle
role idle
# (2) a foreign process: this shell's session, no unit of ours
hog foreign env
apps foreign; probe foreign
role foreign
role foreign-check --check
unhog foreign
# (3) the same process as the plan's serving unit sglang-acc.service
if [ "$(cat /proc/1/comm)" = systemd ] && systemctl is-system-running >/dev/null 2>&1; then
  hog own systemd-run --quiet --collect --unit=sglang-acc.service --
else
  # the unified hierarchy: /sys/fs/cgroup (v2), /sys/fs/cgroup/unified (hybrid), else mounted beside (v1 untouched)
  cg=/sys/fs/cgroup
  [ "$(stat -fc %T $cg)" = cgroup2fs ] || cg=/sys/fs/cgroup/unified
  if [ "$(stat -fc %T $cg 2>/dev/null)" != cgroup2fs ]; then
    cg=/tmp/metalserve-cgroup2; mkdir -p $cg; mount -t cgroup2 none $cg >> "$out/versions.txt" 2>&1
  fi
  mkdir -p $cg/system.slice/sglang-acc.service
  echo "own unit: cgroup $cg/system.slice/sglang-acc.service made by hand (no systemd)" >> "$out/versions.txt"
  hog own sh -c "echo \$\$ > $cg/system.slice/sglang-acc.service/cgroup.procs && exec \"\$0\" \"\$@\""
fi
apps own; probe own
role own
role own-again
unhog own
find /tmp -maxdepth 1 -name 'metalserve-accept-*' | wc -l > "$out/left-on-node.txt"
tar czf "$OUT/foreign-run.tgz" -C "$out" .
for f in "$out"/*.log; do
  echo "### $(basename "$f")"
  grep -E "^rc=|: ok=|^ *node acceptance:|^ *- |^ *h200-x1 \(|WARNING\]: h200" "$f" | cut -c1-700 | head -12
done
for f in "$out"/apps-*.csv "$out"/hog-*.pid "$out"/hog-*.cgroup "$out"/versions.txt; do echo "### $f"; cat "$f"; done
