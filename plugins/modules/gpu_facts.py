#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module metalserve.sglang.gpu_facts: what GPUs a node has, read-only."""
from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
version_added: 0.1.0
author: metalserve.sglang contributors (@metalserve)
short_description: Detect the GPUs of a node (NVIDIA or AMD) and name them with the collection's GPU ids
description:
  - NVIDIA through C(nvidia-smi) (CSV query, C(topo -m), C(-q -x)) and C(/proc/driver/nvidia/version); AMD through
    C(amd-smi static --json), then C(rocm-smi --json); with no vendor tool, the PCI devices in sysfs.
  - Reports model, count, memory per GPU, driver and CUDA/ROCm versions, compute capability or gfx target,
    persistence and MIG mode, NVLink topology, NVSwitch presence, Fabric Manager and GPU fabric state, loaded
    kernel modules and Secure Boot, under the fact C(metalserve_gpu).
  - Changes nothing; check mode is the same as a normal run.
  - The action plugin of the same name passes the GPU platform table (data/gpus.yml plus C(sglang_gpu_platforms)),
    so GPUs are named with that table's ids, or C(unknown).
options:
  platforms:
    description: GPU platform table used to name GPUs. Filled in by the action plugin.
    type: dict
  secure_boot_var:
    description:
      - UEFI's Secure Boot variable (under O(root)). Filled in by the action plugin from the collection's
        C(data/node.yml) (C(kernel.secure_boot)), where the nvidia_driver role reads it too; unset, Secure Boot is
        reported as unknown.
    type: str
  root:
    description: Filesystem root under which C(/sys) and C(/proc) are read (for tests on a fixture tree).
    type: path
    default: /
extends_documentation_fragment:
  - metalserve.sglang.attributes.node_action
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode: {support: full}
  diff_mode: {support: none}
  facts: {support: full}
"""

EXAMPLES = r"""
- name: Detect GPUs
  metalserve.sglang.gpu_facts:

- name: Show them
  ansible.builtin.debug:
    msg: "{{ ansible_facts.metalserve_gpu.count }} x {{ ansible_facts.metalserve_gpu.gpu_id }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(metalserve_gpu).
  returned: always
  type: dict
  contains:
    metalserve_gpu:
      description: >-
        vendor (nvidia, amd or none), source (nvidia-smi, amd-smi, rocm-smi, sysfs or none), count, gpu_id, models,
        uniform, memory_mib_per_gpu, driver_version, driver_flavor (open or proprietary), cuda_version, rocm_version,
        gpus (list with index, name, gpu_id, bus_id, pci_device_id, memory_mib, compute_capability or gfx,
        persistence_mode, mig_mode, fabric_state, fabric_status), nvlink, nvswitch, fabric_manager, kernel_modules,
        secure_boot, module_signer, notes.
      type: dict
"""

import glob
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.metalserve.sglang.plugins.module_utils import gpu_probe

# one-owner: this module runs on the node, before any plan, and cannot read data/: where ROCm's packages put amd-smi
# and rocm-smi (outside PATH on a login without ROCm's profile); nothing else in the collection names it
ROCM_BIN = "/opt/rocm/bin"


def read(root, path):
    try:
        with open(os.path.join(root, path), "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def pci_entries(root):
    entries = []
    for device in sorted(glob.glob(os.path.join(root, "sys/bus/pci/devices/*"))):
        rel = os.path.relpath(device, root)
        entries.append({"bdf": os.path.basename(device),
                        "vendor": (read(root, rel + "/vendor") or "").strip(),
                        "device": (read(root, rel + "/device") or "").strip(),
                        "class": (read(root, rel + "/class") or "").strip(),
                        "numa_node": (read(root, rel + "/numa_node") or "").strip()})
    return entries


def processes(root):
    names = set()
    for comm in glob.glob(os.path.join(root, "proc/[0-9]*/comm")):
        try:
            with open(comm, encoding="utf-8") as handle:
                names.add(handle.read().strip())
        except OSError:
            continue
    return names


def secure_boot(root, variable):
    if not variable:
        return None
    try:
        with open(os.path.join(root, variable.lstrip("/")), "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return bool(data[4]) if len(data) >= 5 else None


class Collector:
    """Runs the vendor tools and records their outputs (or why they failed) for gpu_probe.compose."""

    def __init__(self, module):
        self.module = module
        self.notes = []

    def output(self, args, label):
        rc, out, err = self.module.run_command(args)
        if rc != 0:
            self.notes.append(f"{label} failed (rc {rc}): {(err or out or '').strip()[:300]}")
            return None
        return out

    def nvidia(self, raw):
        smi = self.module.get_bin_path("nvidia-smi")
        if not smi:
            return
        raw["nvidia_query"] = self.output(
            [smi, "--query-gpu=" + ",".join(gpu_probe.NVIDIA_QUERY_FIELDS), "--format=csv,noheader,nounits"],
            "nvidia-smi --query-gpu")
        if raw["nvidia_query"]:
            raw["nvidia_xml"] = self.output([smi, "-q", "-x"], "nvidia-smi -q -x")
            raw["nvidia_topo"] = self.output([smi, "topo", "-m"], "nvidia-smi topo -m")

    def amd(self, raw):
        amd_smi = self.module.get_bin_path("amd-smi", opt_dirs=[ROCM_BIN])
        if amd_smi:
            raw["amd_smi_static"] = self.output([amd_smi, "static", "--asic", "--vram", "--driver", "--bus", "--json"],
                                                "amd-smi static")
            if raw["amd_smi_static"]:
                raw["amd_smi_version"] = self.output([amd_smi, "version", "--json"], "amd-smi version")
                return
        rocm_smi = self.module.get_bin_path("rocm-smi", opt_dirs=[ROCM_BIN])
        if rocm_smi:
            raw["rocm_smi"] = self.output(
                [rocm_smi, "--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json"], "rocm-smi")

    def fabric_manager(self, raw):
        fm = self.module.get_bin_path("nv-fabricmanager")
        raw["fm_installed"] = bool(fm)
        if fm:
            match = re.search(r"(\d+\.\d+\.\d+)", self.output([fm, "--version"], "nv-fabricmanager --version") or "")
            raw["fm_version"] = match.group(1) if match else None

    def signer(self, raw, root):
        modinfo = self.module.get_bin_path("modinfo")
        if modinfo and root == "/" and raw.get("nvidia_query"):
            rc, out, _err = self.module.run_command([modinfo, "-F", "signer", "nvidia"])
            raw["module_signer"] = (out.strip() or None) if rc == 0 else None


# The module's arguments; its action plugin checks the task's against this spec before it adds the platforms
ARGUMENT_SPEC = {"platforms": {"type": "dict"}, "secure_boot_var": {"type": "str"}, "root": {"type": "path", "default": "/"}}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    root = module.params["root"]
    collector = Collector(module)
    raw = {"pci": pci_entries(root), "proc_version": read(root, "proc/driver/nvidia/version"),
           "proc_modules": read(root, "proc/modules"), "processes": processes(root),
           "secure_boot": secure_boot(root, module.params["secure_boot_var"])}
    collector.nvidia(raw)
    if not raw.get("nvidia_query"):
        collector.amd(raw)
    collector.fabric_manager(raw)
    collector.signer(raw, root)
    raw["notes"] = collector.notes
    facts = gpu_probe.compose(raw, module.params["platforms"] or {})
    module.exit_json(changed=False, ansible_facts={"metalserve_gpu": facts})


if __name__ == "__main__":
    main()
