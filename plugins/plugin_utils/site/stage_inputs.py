# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the driver, RDMA and container runtime stages are given, judged on each host. Pure.

The stages (site/stages.py) turn a host's variables into what its node gets; this module judges those variables
as the vendor's tools will read them (checks/grammars.py, drivers/layouts.py) and against each other on one node:
a mirror apt cannot use, a GPU the driver branch predates, a pin the role never applies, an upgrade that needs a
reboot the run may not do. plan.plan_site() runs it after the stages, so render.yml, site.yml and every role refuse
alike. Each message names the variable, where its value comes from (site/origin.py) and what would work; a host
gets every one of its problems.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import runtime_inputs, weights_inputs
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site.origin import Host, truthy
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import layouts
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp

Problem = tuple[str, str]


def problems(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
             errors: dict[str, list[str]]) -> list[Problem]:
    """Every host's stage-input problems, and the weights' across hosts."""
    del errors  # a host refused elsewhere is still judged: its every mistake is reported at once
    out: list[Problem] = []
    for host, plan in sorted(plans.items()):
        if plan["role"] not in ("server", "router"):
            continue
        here = Host(host, plan, hostvars, groups, plans)
        for check in HOST_CHECKS:
            out += [(host, message) for message in check(here)]
    out += weights_inputs.site_problems(plans, hostvars, groups)
    return out


# --- NVIDIA -------------------------------------------------------------------------------------------------------

def nvidia_inputs(h: Host) -> Iterator[str]:
    if h.plan["role"] != "server" or h.plan.get("vendor") != "nvidia":
        return
    s = h.settings("nvidia_driver")
    if not s:
        return
    base = str(s["nvidia_driver_repo_base_url"] or "")
    if base:
        why = grammars.repository_uri(base) or layouts.cuda_mirror(base)
        if why:
            yield f"{h.var('nvidia_driver_repo_base_url')}: {why}"
    yield from key_url(h, "nvidia_driver_repo_key_url", s)
    if h.given("nvidia_driver_imex_address"):
        why = grammars.ip_address(h.hv["nvidia_driver_imex_address"])
        if why:
            yield (f"{h.var('nvidia_driver_imex_address')}: {why}; nodes_config.cfg lists IP addresses only (NVIDIA "
                   f"IMEX guide), and the plan would fall back to another address. Give the IP of {h.name}'s IMEX "
                   "interface")
    platform = h.platform()
    if h.given("nvidia_driver_imex_group") and not platform.get("imex"):
        yield (f"{h.var('nvidia_driver_imex_group')}: {h.name} is a {platform['id']} node, which has no multi-node "
               "NVLink domain (data/gpus.yml imex: false), so nvidia-imex has nothing to join; drop "
               "nvidia_driver_imex_group there (it belongs to GB300 trays)")
    yield from nvidia_branch_predates(h, s, platform)


def nvidia_branch_predates(h: Host, s: dict[str, Any], platform: dict[str, Any]) -> Iterator[str]:
    settings = h.stage("driver").get("settings") or {}
    branch, version = settings.get("branch"), str(settings.get("version") or "")
    if not isinstance(branch, int):
        return
    found = layouts.driver_too_old(platform["id"], platform, branch, version)
    if found:
        name = f"nvidia_driver_{found[0]}"
        shown = h.var(name) if h.given(name) else f"{name} (the role's default {s.get(name)})"
        yield f"{shown}: {found[1]} (data/nvidia/support.yml)"


def key_url(h: Host, name: str, s: dict[str, Any]) -> Iterator[str]:
    url = str(s.get(name) or "")
    if url and grammars.scheme_of(url) not in ("http", "https", "ftp", "file"):
        yield f"{h.var(name)}: {url!r} is not a URL the node can download the key from; write https://... or file:///..."


# --- AMD ----------------------------------------------------------------------------------------------------------

ROCM_URLS = {"rocm": "rocm_driver_rocm_repo_url", "graphics": "rocm_driver_graphics_repo_url",
             "amdgpu": "rocm_driver_amdgpu_repo_url"}


def rocm_inputs(h: Host) -> Iterator[str]:
    if h.plan["role"] != "server" or h.plan.get("vendor") != "amd":
        return
    s = h.settings("rocm_driver")
    if not s:
        return
    settings = h.stage("driver").get("settings") or {}
    release = str(settings.get("release") or settings.get("requested") or "")
    suite = ((h.stage("driver").get("repository") or {}).get("suite")) or "noble"
    fields = (rp.data("releases")["releases"].get(release) or {})
    for kind, name in ROCM_URLS.items():
        url = str(s[name] or "")
        if not url:
            continue
        filled = url.replace("{dir}", str(fields.get("dir", "{dir}"))).replace("{version}", str(fields.get("dir", "")))
        filled = filled.replace("{driver}", str(fields.get("driver", "{driver}")))
        why = grammars.repository_uri(filled, suite) or layouts.rocm_mirror(filled, kind, release)
        if why:
            yield f"{h.var(name)}: {why}"
    yield from key_url(h, "rocm_driver_repo_key_url", s)
    yield from kernel_args(h, s)


def kernel_args(h: Host, s: dict[str, Any]) -> Iterator[str]:
    raw = h.hv.get("rocm_driver_kernel_args")
    if isinstance(raw, str) and len(raw.split()) > 1:
        yield (f"{h.var('rocm_driver_kernel_args')}: {raw!r} is one string; the role takes a list, one kernel "
               f"parameter per item: [{', '.join(raw.split())}]")
        return
    for item in s.get("rocm_driver_kernel_args") or []:
        why = grammars.kernel_parameter(item)
        if why:
            yield f"{h.var('rocm_driver_kernel_args')}: {why}"


# --- the driver of either vendor: a node's settings against each other ----------------------------------------

DRIVER = {"nvidia": ("nvidia_driver", ("nvidia_driver_version", "nvidia_driver_branch")),
          "amd": ("rocm_driver", ("rocm_driver_version",))}


def driver_relations(h: Host) -> Iterator[str]:
    vendor = h.plan.get("vendor")
    if h.plan["role"] != "server" or vendor not in DRIVER:
        return
    role, pins = DRIVER[vendor]
    s = h.settings(role)
    if not s:
        return
    if not truthy(s[f"{role}_manage"]):
        for name in pins:
            if h.given(name) and not shared_with_managed(h, name, role):
                yield (f"{h.var(name)}: {h.hv[name]} is pinned for {h.name}, but {role}_manage is false there: the "
                       f"role leaves the node's driver as it is and the pin is never applied. Drop the pin, or set "
                       f"{role}_manage: true")
        return
    yield from upgrade_needs_reboot(h, role, s)
    yield from own_fingerprint(h, role, s)


def shared_with_managed(h: Host, name: str, role: str) -> bool:
    """A pinned value that hosts managing the driver share is the site's default, not this host's mistake."""
    value = h.hv.get(name)
    return any(hv.get(name) == value and truthy(hv.get(f"{role}_manage", True))
               for other, hv in h.hostvars.items() if other != h.name)


def upgrade_needs_reboot(h: Host, role: str, s: dict[str, Any]) -> Iterator[str]:
    if not (h.given(f"{role}_upgrade") and truthy(h.hv[f"{role}_upgrade"])):
        return
    if truthy(h.hv.get(f"{role}_allow_reboot", False)):
        return
    if role == "rocm_driver" and not truthy(s.get("rocm_driver_dkms", True)):
        return  # ROCm userspace alone moves without a new kernel module
    module = "the new nvidia module" if role == "nvidia_driver" else "the new amdgpu module"
    play = " (playbooks/nvidia_driver_upgrade.yml sets both, one node at a time)" if role == "nvidia_driver" else ""
    yield (f"{h.var(f'{role}_upgrade')}: true moves a held driver, and {module} loads only after a reboot; with "
           f"{role}_allow_reboot false the run stops once the packages moved, the node half-upgraded. Set "
           f"{role}_allow_reboot: true beside it{play}, or drop {role}_upgrade from the inventory")


VENDOR_KEYS = {"nvidia_driver": ("NVIDIA", lambda: {nv.data("repository")["apt"]["key_fingerprint"],
                                                    nv.data("repository")["dnf"]["key_fingerprint"]}),
               "rocm_driver": ("AMD", lambda: {rp.data("repository")["key_fingerprint"]})}


def own_fingerprint(h: Host, role: str, s: dict[str, Any]) -> Iterator[str]:
    """A site's own signing key can only verify a mirror it re-signed: never the vendor's repository or key file."""
    name = f"{role}_repo_key_fingerprint"
    value = "".join(str(s.get(name) or "").split()).upper()
    vendor, keys = VENDOR_KEYS[role]
    if len(value) != 40 or value in keys():
        return
    if role == "nvidia_driver":
        vendors = [] if s["nvidia_driver_repo_base_url"] else ["CUDA repository (nvidia_driver_repo_base_url is empty)"]
    else:
        settings = h.stage("driver").get("settings") or {}
        release = str(settings.get("release") or settings.get("requested") or "")
        graphics = (rp.data("releases")["releases"].get(release) or {}).get("graphics", True)
        vendors = [f"{kind} repository ({var} is empty)" for kind, var in ROCM_URLS.items()
                   if not s[var] and (kind != "graphics" or graphics)]  # ROCm 6.4 writes no graphics repository
    if vendors and truthy(s[f"{role}_repo_manage"]):  # a site that provides the repositories checks no key here
        yield (f"{h.var(name)}: {value} is not {vendor}'s key, but {h.name} installs from {vendor}'s own "
               f"{'; '.join(vendors)}, which {vendor} signs with its own key: the key check or apt refuses it. Point "
               f"the repository at the mirror your key signs (and its key URL), or drop {name} to trust {vendor}'s")


HOST_CHECKS: tuple[Callable[[Host], Iterator[str]], ...] = (
    nvidia_inputs, rocm_inputs, driver_relations, *runtime_inputs.CHECKS, *weights_inputs.CHECKS)
