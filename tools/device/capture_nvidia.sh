#!/usr/bin/env bash
# Capture what gpu_facts/fabric_facts/preflight read on an NVIDIA node, as raw command outputs.
# Used on the lent H200 machines (device tool); the outputs become tests/fixtures/nvidia/<name>/.
# Usage: bash tools/device/capture_nvidia.sh OUTDIR
set -u
out=${1:?outdir}
mkdir -p "$out"
cap() { local name=$1; shift; { "$@"; } >"$out/$name" 2>"$out/$name.stderr"; echo "$?" >"$out/$name.rc"; }
Q=index,name,uuid,pci.bus_id,pci.device_id,pci.sub_device_id,memory.total,driver_version,compute_cap,persistence_mode,mig.mode.current,serial,vbios_version
cap query-gpu.csv nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits
cap query-gpu-header.csv nvidia-smi --query-gpu=$Q --format=csv
cap help-query-gpu.txt nvidia-smi --help-query-gpu
cap list.txt nvidia-smi -L
cap topo-m.txt nvidia-smi topo -m
cap q.xml nvidia-smi -q -x
cap q.txt nvidia-smi -q
cap nvlink-s.txt nvidia-smi nvlink -s
cap fabric.txt nvidia-smi -q -d FABRIC
cap proc-driver-version.txt cat /proc/driver/nvidia/version
# shellcheck disable=SC2016 # the inner sh expands these
cap proc-driver-gpus.txt sh -c 'for d in /proc/driver/nvidia/gpus/*; do echo "== $d"; cat "$d/information"; done'
# shellcheck disable=SC2016 # the inner sh expands these
cap pci-devices.txt sh -c 'for d in /sys/bus/pci/devices/*; do printf "%s %s %s %s %s\n" "$(basename $d)" "$(cat $d/vendor)" "$(cat $d/device)" "$(cat $d/class)" "$(cat $d/numa_node 2>/dev/null)"; done'
cap sys-class-infiniband.txt sh -c 'ls -la /sys/class/infiniband/ 2>&1; ls -la /dev/infiniband 2>&1'
cap limits.txt sh -c 'ulimit -l; cat /proc/self/limits'
cap secureboot.txt sh -c 'ls /sys/firmware/efi 2>&1; ls /sys/firmware/efi/efivars 2>&1 | grep -i secureboot; od -An -t u1 /sys/firmware/efi/efivars/SecureBoot-* 2>&1'
cap os.txt sh -c 'uname -a; cat /etc/os-release; nproc; free -b; df -B1 / /tmp'
cap services.txt sh -c 'command -v systemctl nv-fabricmanager nvidia-persistenced nvidia-imex nvlsm lspci 2>&1; ps -eo pid,comm,args | grep -E "fabric|persist|imex" | grep -v grep'
cap modules.txt sh -c 'cat /proc/modules 2>&1 | grep -E "^(nvidia|ib_|mlx|rdma)" ; ls /sys/module | grep -E "nvidia|ib_|mlx" '
cap python.txt sh -c 'python3 --version; python3 -m pip list 2>/dev/null | grep -i -E "^(jinja2|pyyaml|cryptography|resolvelib|packaging|markupsafe|cffi) "'
cap nvml-py.txt python3 -c 'import pynvml as n; n.nvmlInit(); print(n.nvmlSystemGetDriverVersion(), n.nvmlSystemGetCudaDriverVersion_v2())'
echo "captured: $(find "$out" -maxdepth 1 -type f | wc -l) files"
