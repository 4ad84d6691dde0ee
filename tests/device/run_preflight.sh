#!/usr/bin/env bash
# On a lent H200 machine (device tool): capture the raw GPU outputs, run gpu_facts / fabric_facts and the
# preflight role for real, once against the GLM-5.3 H200 FP8 TP8 recipe (must be refused) and once
# against a site recipe sized for this machine (must pass). Everything lands in $OUT/<tag>.tgz.
# Needs the ansible-core wheels in .whl (carry: [".whl"]); the machine has python3.12, jinja2, PyYAML.
set -u
tag=${1:?tag, e.g. h200-x1}
work=/tmp/metalserve-device; rm -rf "$work"; mkdir -p "$work"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
mkdir -p .build/collections/ansible_collections/metalserve
ln -sfn "$PWD" .build/collections/ansible_collections/metalserve/sglang
export ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$PWD/.build/collections ANSIBLE_NOCOLOR=1
export ANSIBLE_CACHE_PLUGIN=memory ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0
bash tools/device/capture_nvidia.sh "$work/capture" >/dev/null 2>&1
py=$(command -v python3)
count=$(nvidia-smi -L | grep -c '^GPU ')
{ ansible --version; echo "gpus: $count"; } > "$work/versions.txt" 2>&1
ansible localhost -c local -e ansible_python_interpreter="$py" -m metalserve.sglang.gpu_facts > "$work/gpu_facts.txt" 2>&1
ansible localhost -c local -e ansible_python_interpreter="$py" -m metalserve.sglang.fabric_facts \
  -a '{"resolve": ["localhost"], "interfaces": ["lo"]}' > "$work/fabric_facts.txt" 2>&1
inv() {  # inventory for this machine as one server node
  cat > "$work/$1.yml" <<INV
all:
  hosts:
    $tag:
      ansible_connection: local
      ansible_python_interpreter: $py
$(sed 's/^/      /' "$2")
INV
}
printf 'sglang_gpu: h200\nsglang_quant: fp8\nsglang_strategy: high-throughput\n' > "$work/fp8.vars"
cat > "$work/site.vars" <<VARS
sglang_model: tiny-moe
sglang_quant: bf16
sglang_strategy: balanced
sglang_recipes:
  - id: tiny-moe
    checkpoints: {bf16: {id: example-org/Tiny-MoE, size_gb: 30}}
    cells:
      - {gpu: h200, quant: bf16, strategy: balanced, nodes: 1, verified: true, flags: {--tp-size: $count}}
VARS
inv fp8 "$work/fp8.vars"; inv site "$work/site.vars"
for case in fp8 site; do
  ansible-playbook -i "$work/$case.yml" tests/integration/playbooks/preflight_localhost.yml > "$work/preflight-$case.txt" 2>&1
  echo "rc=$?" >> "$work/preflight-$case.txt"
done
tar czf "$OUT/$tag.tgz" -C "$work" .
grep -E "gpu_id|\"count\"|rc=|msg|this node has|can hold" "$work"/gpu_facts.txt "$work"/preflight-*.txt | cut -c1-300
