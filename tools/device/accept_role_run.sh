#!/usr/bin/env bash
# Run playbooks' node_acceptance role for real on a lent H200 x2 machine (device tool), end to end through Ansible:
# the role's probes, filters, plan-driven environment, async cross-node run and the acceptance action.
# Usage: bash tools/device/accept_role_run.sh DIR   (DIR: collection.tar from `git archive`, whl/ with ansible-core)
# The machine's python3 (torch 2.11, NCCL 2.28.9) stands in for the SGLang venv's Python (node_acceptance_python);
# "nodes" are inventory hosts with a local connection. Everything lands in $OUT/role-run.tgz.
set -u
dir=$(cd "${1:?dir}" && pwd)
py=$(command -v python3)
work=/tmp/metalserve-role-run; rm -rf "$work"; mkdir -p "$work/coll/ansible_collections/metalserve/sglang" "$work/out"
[ -n "${SKIP_PIP:-}" ] || "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$dir"/whl/*.whl || exit 1
[ -n "${SKIP_PIP:-}" ] || export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
tar xf "$dir/collection.tar" -C "$work/coll/ansible_collections/metalserve/sglang"
col=$work/coll/ansible_collections/metalserve/sglang
export ANSIBLE_CONFIG=$col/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$work/coll ANSIBLE_NOCOLOR=1 ANSIBLE_CACHE_PLUGIN=memory
export ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0
pair_env() {  # CUDA device of the member, then the NCCL socket interface
  printf '{CUDA_VISIBLE_DEVICES: "%s", NCCL_SOCKET_IFNAME: %s, GLOO_SOCKET_IFNAME: lo, NCCL_IB_DISABLE: "1", ' "$1" "$2"
  printf 'NCCL_P2P_DISABLE: "1", NCCL_SHM_DISABLE: "1"}'
}
cat > "$work/inventory.yml" <<INV
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: $py
    node_acceptance_method: uv
    node_acceptance_python: $py
    node_acceptance_timeout: 60
  children:
    node:
      hosts:
        h200-x2: {sglang_role: none}
    instances:
      vars:
        sglang_model: tiny-moe
        sglang_quant: bf16
        sglang_strategy: balanced
        sglang_gpu: h200
        sglang_nodes: 2
        sglang_install_method: uv
        sglang_dist_address: 127.0.0.1
        sglang_recipes:
          - id: tiny-moe
            checkpoints: {bf16: {id: example-org/Tiny-MoE, size_gb: 30}}
            cells:
              - {gpu: h200, quant: bf16, strategy: balanced, nodes: 2, verified: true, flags: {--tp-size: 2}}
      children:
        pair:
          vars: {sglang_instance_group: pair}
          hosts:
            pair0: {sglang_env: $(pair_env 0 lo)}
            pair1: {sglang_env: $(pair_env 1 lo)}
        badpair:
          vars: {sglang_instance_group: badpair}
          hosts:
            bad0: {sglang_env: $(pair_env 0 ib9)}
            bad1: {sglang_env: $(pair_env 1 ib9)}
INV
cat > "$work/accept.yml" <<'PLAY'
- name: Node acceptance on the lent machine
  hosts: all
  gather_facts: false
  environment: "{{ {'NCCL_NVLS_ENABLE': '0', 'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1', 'NVSHMEM_DISABLE_NVLS': '1'}
                   | combine(accept_env | default({})) }}"
  vars:
    node_acceptance_report_dir: "{{ report }}"
  roles:
    - role: metalserve.sglang.node_acceptance
PLAY
run() {  # NAME ARGS...: one ansible-playbook run, its output and rc kept
  local name=$1; shift
  echo "== $name: ansible-playbook -i inventory.yml accept.yml $*" >> "$work/out/commands.txt"
  ansible-playbook -i "$work/inventory.yml" "$work/accept.yml" -e "report=$work/out/$name" "$@" > "$work/out/$name.log" 2>&1
  echo "rc=$?" >> "$work/out/$name.log"
}
ansible --version > "$work/out/versions.txt" 2>&1
run healthy --limit node
run healthy-again --limit node
run healthy-check --limit node --check
run p2p-off --limit node -e '{"accept_env": {"NCCL_P2P_DISABLE": "1"}}'
run pair --limit pair
run badpair --limit badpair
find /tmp -maxdepth 1 -name 'metalserve-accept-*' | wc -l > "$work/out/left-on-node.txt"
tar czf "$OUT/role-run.tgz" -C "$work/out" .
for f in "$work"/out/*.log; do
  echo "### $(basename "$f")"
  grep -E "^rc=|: ok=|^ *node acceptance:|^ *- |^ *(h200|pair|bad)[a-z0-9-]* \(|WARNING\]: (h200|pair|bad)" "$f" | cut -c1-600 | head -30
done
for d in "$work"/out/*/; do echo "### $d"; tail -n +6 "$d/ACCEPTANCE.md" 2>/dev/null; done
echo "left on node: $(cat "$work/out/left-on-node.txt")"
