# -*- coding: utf-8 -*-
# Copyright: metalserve.sglang contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node stages get: the GPU driver (NVIDIA or AMD), RDMA, the container runtime and the weights. Pure.

One function per stage turns a host's variables, its plan (the GPU and vendor resolved once by placement) and
the data in data/ into the stage's plan: its settings, packages, the very text of the files its role writes, the
services it starts, and the values only the node can tell (listed under `decided_on_node`, so the preview says
so). The roles apply what a stage holds and decide only those. plan.plan_site() attaches them to every host's
plan as plan['stages'][<stage>]; render.yml writes them to rendered/<host>/<stage>.yml and the files beside.

Every stage has the same shape:
    {stage, role, applies, why, settings, packages, files: {name: {path, content, mode, owner, group}},
     services, modules, decided_on_node: [{what, why}], inputs}
A file whose content only the node can tell has content None (and an entry in decided_on_node).
"""
from __future__ import annotations

import difflib
import functools
import re
from pathlib import Path
from typing import Any

from ansible_collections.metalserve.sglang.plugins.plugin_utils import node, systemd
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import imex as imex_data
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import rocm as rp
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import DATA_DIR, load_catalog, read_yaml
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.errors import RecipeError, messages_of
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import acceptance_stage, firewall, placement, runtime

#: the first comment of every file a stage writes
MANAGED = "Managed by metalserve.sglang"
HEADER = f"# {MANAGED}"
ROOT = Path(__file__).resolve().parents[3]
#: facts a stage reads (gathered by site.yml's first play: gather_subset min, network, virtual)
OS_FACTS = ("distribution", "distribution_major_version", "distribution_version", "distribution_release",
            "architecture", "os_family")


# --- the common shape -------------------------------------------------------------------------------------------

def new_stage(name: str, role: str, applies: bool, why: str = "") -> dict[str, Any]:
    return {"stage": name, "role": role, "applies": applies, "why": why, "settings": {}, "packages": {},
            "files": {}, "services": [], "modules": [], "decided_on_node": [], "inputs": {}}


def file_entry(path: str, content: str | None, mode: str = "0644", owner: str = "root",
               group: str = "root") -> dict[str, Any]:
    return {"path": path, "content": content, "mode": mode, "owner": owner, "group": group}


def on_node(stage: dict[str, Any], what: str, why: str) -> None:
    stage["decided_on_node"].append({"what": what, "why": why})


def node_os(hv: dict[str, Any]) -> dict[str, str] | None:
    """The node's distribution, release and CPU, from its gathered (or cached) facts; None until gathered."""
    facts = hv.get("ansible_facts") or {}
    if not facts.get("distribution") or not facts.get("architecture"):
        return None
    return {k: str(facts.get(k) or "") for k in OS_FACTS}


def no_os(stage: dict[str, Any], what: str) -> None:
    on_node(stage, what, "the node's distribution and CPU (facts not gathered yet: site.yml's first play "
                         "gathers them, and render.yml reads them from the fact cache)")


def deb822(fields: dict[str, Any]) -> str:
    """A .sources file as ansible.builtin.deb822_repository writes it: its parameters sorted by name, lists
    space-separated, `name` as X-Repolib-Name and `uris` as URIs (the module's format_field_name)."""
    lines = []
    for key in sorted(fields):
        value = fields[key]
        if value is None:
            continue
        text = " ".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
        label = "X-Repolib-Name" if key == "name" else "URIs" if key == "uris" else key.replace("_", "-").title()
        lines.append(f"{label}: {text}")
    return "\n".join(lines) + "\n"


def apt_blacklist(comment: list[str], names: list[str], extra: tuple[str, ...] = ()) -> str:
    """/etc/apt/apt.conf.d/51metalserve-*: packages unattended-upgrades must leave alone."""
    lines = [f"// {c}" for c in comment] + ["Unattended-Upgrade::Package-Blacklist {"]
    lines += [f'    "{n}";' for n in [*names, *extra]] + ["};", ""]
    return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def role_file(role: str, name: str) -> str:
    """The text of a file a role ships (roles/<role>/files/<name>) that a plan writes on a node."""
    return (ROOT / "roles" / role / "files" / name).read_text(encoding="utf-8")


def fingerprint(value: Any, variable: str) -> str:
    """A full OpenPGP V4 fingerprint (40 hex digits; spaces ignored): a short or long key id is refused, as apt-key
    era guides still print them and they do not identify a key."""
    text = re.sub(r"\s", "", str(value or "")).upper()
    if not re.fullmatch(r"[0-9A-F]{40}", text):
        hint = " (that is a key id, which many keys share)" if re.fullmatch(r"(0X)?[0-9A-F]{8}|(0X)?[0-9A-F]{16}", text) \
            else ""
        raise RecipeError(f"{variable}: {value!r} is not a full fingerprint{hint}; give all 40 hex digits, as "
                          "`gpg --show-keys --with-fingerprint <key file>` prints them")
    return text


def in_container_note(stage: dict[str, Any]) -> None:
    on_node(stage, "kernel work (modprobe, initramfs, reboot)", "skipped when the node is a container (its "
            "virtualization facts)")


# --- NVIDIA driver ----------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def nvidia_branches() -> tuple[int, ...]:
    return tuple(int(b) for b in nv.data("packages").get("branches") or [nv.data("packages")["default_branch"]])


def nvidia_branch(value: Any) -> int:
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise RecipeError(f"nvidia_driver_branch: {value!r} is not a driver branch number such as 580")
    branch = int(str(value).strip())
    known = nvidia_branches()
    if branch not in known:
        raise RecipeError(f"nvidia_driver_branch: {branch} is not a branch this collection's packaging data models "
                          f"({', '.join(map(str, known))}; data/nvidia/packages.yml `branches` says why)")
    return branch


def nvidia_version(value: Any, branch: int) -> str:
    text = str(value or "").strip()
    if not text:
        return ""
    if not nv.DRIVER_VERSION.match(text):
        raise RecipeError(f"nvidia_driver_version: {text!r} is not a driver version; give the version without a "
                          "package revision, e.g. 580.95.05 (every package is pinned as <version>*)")
    major = text.split(".", maxsplit=1)[0]
    if major != str(branch):
        raise RecipeError(f"nvidia_driver_version: {text} is in branch {major}, not in nvidia_driver_branch "
                          f"{branch}; set both to the same branch")
    return text


def imex_members(host: str, group: str, groups: dict[str, list[str]]) -> list[str]:
    if not group:
        return []
    if group not in groups:
        raise RecipeError(f"nvidia_driver_imex_group: {group!r} (on {host}) is not an inventory group; "
                          f"{placement.not_a_group(group, groups)}")
    members = sorted(groups[group])
    if host not in members:
        raise RecipeError(f"nvidia_driver_imex_group: {host} is not a member of {group} ({', '.join(members)}); name "
                          "the group of this host's NVLink domain")
    return members


def nvidia_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
                 groups: dict[str, list[str]]) -> dict[str, Any]:
    hv = hostvars[host]
    stage = new_stage("driver", "nvidia_driver", True)
    s = runtime.settings(hv, "nvidia_driver")
    stage["inputs"] = runtime.plan_inputs(s)
    gpu = plan_gpu(plan, hv)
    platform = dict(load_catalog(None, hv.get("sglang_gpu_platforms")).gpus[gpu], id=gpu)
    branch = nvidia_branch(s["nvidia_driver_branch"])
    version = nvidia_version(s["nvidia_driver_version"], branch)
    flavor = nv.flavor(str(s["nvidia_driver_flavor"]), platform, gpu)
    group = str(s["nvidia_driver_imex_group"] or "")
    imex = bool(group) or bool(platform.get("imex"))
    if platform.get("imex") and not group:
        raise RecipeError(f"nvidia_driver_imex_group: {host} is a {gpu} tray, whose GPUs share an NVLink domain through "
                          "nvidia-imex; set nvidia_driver_imex_group to the inventory group of its domain (its trays)")
    members = imex_members(host, group, groups) if imex else []
    key_fpr = fingerprint(s["nvidia_driver_repo_key_fingerprint"], "nvidia_driver_repo_key_fingerprint") \
        if s["nvidia_driver_repo_key_fingerprint"] else ""
    stage["settings"] = {
        "gpu": gpu, "platform": platform, "branch": branch, "version": version, "flavor": flavor,
        "repo_manage": bool(s["nvidia_driver_repo_manage"]),
        "blacklist_nouveau": bool(s["nvidia_driver_blacklist_nouveau"]),
        "loaded_version_file": data_services()["loaded_version_file"],
        "imex": imex, "imex_group": group, "imex_members": members, "imex_firewall": bool(s["nvidia_driver_imex_firewall"]),
    }
    files = stage["files"]
    if s["nvidia_driver_blacklist_nouveau"]:
        files["blacklist_nouveau"] = file_entry(node.path("nouveau_blacklist"),
                                                f"{HEADER}\nblacklist nouveau\noptions nouveau modeset=0\n")
    osf = node_os(hv)
    if osf is None:
        no_os(stage, "repository, package names and pins")
        stage["repository"] = None
        stage["packages"] = {}
    else:
        nvidia_packages(stage, s, osf, key_fpr)
    if not version:
        on_node(stage, "the driver version", f"nvidia_driver_version is empty: a node keeps the {branch}.x it has, a "
                "new node takes the newest version every needed package publishes in the repository")
    on_node(stage, "the repository's signing key", f"downloaded from the key URL and refused unless its only key has "
            f"fingerprint {key_fpr or 'NVIDIA publishes (data/nvidia/repository.yml)'}")
    on_node(stage, "a reboot", "whenever the loaded module is not the installed driver; a run reboots only with "
            "nvidia_driver_allow_reboot, else it stops before anything starts")
    if imex:
        imex_files(stage, host, members, hostvars, flavor, s)
    return stage


def nvidia_packages(stage: dict[str, Any], s: dict[str, Any], osf: dict[str, str], key_fpr: str) -> None:
    """The driver stage on a node whose OS is known: NVIDIA's repository, the packages and their pins, the units and
    modules, and the apt files (sources, pin, version lock, unattended-upgrades, NVLink5's modules)."""
    set_, files = stage["settings"], stage["files"]
    repo = nv.repository(osf["distribution"], osf["distribution_major_version"], osf["architecture"],
                         str(s["nvidia_driver_repo_base_url"] or "") or None)
    vendor_url = nv.repository(osf["distribution"], osf["distribution_major_version"], osf["architecture"])["url"]
    repo.update(vendor_url=vendor_url, key_url=str(s["nvidia_driver_repo_key_url"] or repo["key_url"]),
                key_fingerprint=key_fpr or repo["key_fingerprint"])
    names = nv.node_packages(set_["platform"], set_["branch"], set_["flavor"], osf["distribution"], osf["architecture"],
                             set_["imex"])
    version = set_["version"]
    stage["repository"] = repo
    stage["packages"] = {**names, "install": nv.pins(names["pinned"], version, names["format"]) + names["unpinned"]
                         if version else None, "hold": names["pinned"]}
    stage["services"] = list(names["units"])
    stage["modules"] = list(names["modules_load"])
    if repo["format"] == "apt":
        if s["nvidia_driver_repo_manage"]:
            files["sources"] = file_entry(node.path("cuda_sources"), deb822(
                {"name": "cuda", "uris": repo["url"], "suites": [repo["suite"]], "signed_by": repo["keyring"],
                 "types": ["deb"]}))
            files["pin"] = file_entry(repo["pin_file"], repo["pin"])
        lock = nv.version_lock(version) if version else None
        files["version_lock"] = file_entry(nv.data("packages")["apt_version_lock"]["file"],
                                           lock["text"] if lock else None)
        files["unattended"] = file_entry(node.path("nvidia_unattended"), None)
        on_node(stage, "the unattended-upgrades blacklist", "every installed package of the driver at its version "
                "(the pinned ones and what apt pulled with them)")
    if names["modules_load"]:
        files["modules_load"] = file_entry(node.path("nvlink5_modules"), "\n".join(
            [f"{HEADER}: Fabric Manager's precheck refuses to start nvlsm without them", *names["modules_load"]]) + "\n")


def imex_files(stage: dict[str, Any], host: str, members: list[str], hostvars: dict[str, dict[str, Any]],
               flavor: str, s: dict[str, Any]) -> None:
    files = stage["files"]
    services = data_services()
    # channel 0 by hand is made one way, by this script: on a running module when a converge finds it missing, and at
    # every boot (its unit) for the proprietary module; the open module makes it itself at every load (its option)
    script = node.path("imex_channel_script")
    files["imex_channel_script"] = file_entry(script, role_file("nvidia_driver", "metalserve-imex-channel0"), "0755")
    if flavor == "open":
        files["imex_channel"] = file_entry(node.path("imex_channel_option"), "\n".join([
            f"{HEADER}: IMEX channel 0 for the serving containers and processes",
            f"options nvidia {services['imex']['channel_module_option']}", ""]))
    else:
        files["imex_channel_unit"] = file_entry(node.unit_path(node.unit("imex_channel")), systemd.service_unit(
            [MANAGED], "IMEX channel 0 (metalserve.sglang)",
            [f"After={services['units']['persistenced']}", f"Before={services['units']['imex']}"],
            ["Type=oneshot", "RemainAfterExit=yes", f"ExecStart={script}"]))
    ports = imex_data.ports("")
    stage["settings"].update(imex_ports=ports, imex_unit=services["units"]["imex"], imex_config=services["imex"]["config"],
                             imex_channel0=services["imex"]["channel0"])
    try:
        text = imex_data.nodes_config(members, {m: hostvars.get(m, {}) for m in members})
    except RecipeError as exc:
        if any(not imex_known(hostvars.get(m, {})) for m in members):
            text = None
            unknown = [m for m in members if not imex_known(hostvars.get(m, {}))]
            on_node(stage, "nodes_config.cfg and the IMEX firewall", f"the IPv4 of {', '.join(unknown)} (set "
                    "nvidia_driver_imex_address, or gather their facts)")
            stage["settings"]["imex_unknown"] = str(exc)
        else:
            raise exc
    files["imex_nodes"] = file_entry(services["imex"]["nodes_config"], text)
    on_node(stage, "the IMEX ports", f"SERVER_PORT/IMEX_CMD_PORT of {services['imex']['config']} (NVIDIA's defaults "
            f"{', '.join(map(str, ports))}); the role refuses a node whose file sets others")
    if s["nvidia_driver_imex_firewall"]:
        domain = s["nvidia_driver_imex_group"] or host
        ruleset = firewall.imex_ruleset(text.split(), ports, domain) if text else None
        files["imex_firewall"] = file_entry(firewall.IMEX.file, ruleset)
        files["imex_firewall_unit"] = file_entry(node.unit_path(firewall.IMEX.unit), firewall.table_unit(firewall.IMEX))


def imex_known(hv: dict[str, Any]) -> bool:
    try:
        imex_data.member_address("?", hv)
        return True
    except RecipeError:
        return False


@functools.lru_cache(maxsize=None)
def data_services() -> dict[str, Any]:
    return read_yaml(DATA_DIR / "nvidia" / "services.yml")


# --- AMD ROCm ---------------------------------------------------------------------------------------------------

def rocm_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
               groups: dict[str, list[str]]) -> dict[str, Any]:
    del groups
    hv = hostvars[host]
    stage = new_stage("driver", "rocm_driver", True)
    s = runtime.settings(hv, "rocm_driver")
    stage["inputs"] = runtime.plan_inputs(s)
    gpu = plan_gpu(plan, hv)
    platform = dict(load_catalog(None, hv.get("sglang_gpu_platforms")).gpus[gpu], id=gpu)
    server_user = runtime.settings(hv, "sglang_server")["sglang_server_user"]
    key_fpr = fingerprint(s["rocm_driver_repo_key_fingerprint"], "rocm_driver_repo_key_fingerprint") \
        if s["rocm_driver_repo_key_fingerprint"] else ""
    kernel_args = [str(a) for a in s["rocm_driver_kernel_args"]]
    stage["settings"] = {
        "gpu": gpu, "platform": platform, "requested": str(s["rocm_driver_version"] or ""),
        "repo_manage": bool(s["rocm_driver_repo_manage"]), "dkms": bool(s["rocm_driver_dkms"]),
        "service_user": server_user, "kernel_args": kernel_args, "expected_gpus": int(s["rocm_driver_expected_gpus"]),
    }
    requested = stage["settings"]["requested"]
    if requested and requested not in rp.data("releases")["releases"]:
        raise RecipeError(f"rocm_driver_version: ROCm {requested} is not in the compatibility table "
                          f"({', '.join(rp.data('releases')['releases'])})")
    osf = node_os(hv)
    if osf is None:
        no_os(stage, "the ROCm release check against AMD's GPU x OS table, repositories and pins")
        stage["repository"] = None
        if requested and not any(rp.supported(requested, gpu, system) for system in _all_systems()):
            raise RecipeError(f"rocm_driver_version: ROCm {requested} supports {gpu} on no OS "
                              f"({_support_offer(gpu)})")
        stage["settings"]["release"] = requested or rp.data("releases")["default_by_gpu"].get(gpu)
        return stage
    release = rp.choose(gpu, platform, osf["distribution"], osf["distribution_version"], requested)
    stage["settings"]["release"] = release
    repo = rp.repositories(release, osf["distribution"], osf["distribution_version"], str(s["rocm_driver_rocm_repo_url"]),
                           str(s["rocm_driver_amdgpu_repo_url"]), str(s["rocm_driver_graphics_repo_url"]))
    repo.update(key_url=str(s["rocm_driver_repo_key_url"] or repo["key_url"]),
                key_fingerprint=key_fpr or repo["key_fingerprint"])
    stage["repository"] = repo
    pkgs = rp.packages()
    stage["packages"] = {"kernel": pkgs["kernel"] if s["rocm_driver_dkms"] else None,
                         "install": rp.userspace_pins(release, repo["format"]), "hold": list(pkgs["held"])}
    rocm_files(stage, s, osf, repo, list(pkgs["held"]))
    on_node(stage, "the repository's signing key", f"downloaded from the key URL and refused unless its only key has "
            f"fingerprint {key_fpr or 'AMD publishes (data/amd/repository.yml)'}")
    on_node(stage, "a reboot", "when amdgpu changed and the loaded module is not the one on disk, or the kernel runs "
            f"without {' '.join(kernel_args) or 'the kernel arguments'}; a run reboots only with rocm_driver_allow_reboot")
    return stage


def rocm_files(stage: dict[str, Any], s: dict[str, Any], osf: dict[str, str], repo: dict[str, Any],
               held: list[str]) -> None:
    """The driver stage's files on an AMD node: AMD's repositories, its pin and the unattended-upgrades blacklist
    (apt), the device nodes for the serving user, and the kernel arguments (GRUB on Debian, else grubby on the node)."""
    files, kernel_args = stage["files"], stage["settings"]["kernel_args"]
    if repo["format"] == "apt":
        if s["rocm_driver_repo_manage"]:
            common = {"suites": [repo["suite"]], "components": repo["components"],
                      "architectures": repo["architectures"], "signed_by": repo["keyring"], "types": ["deb"]}
            files["sources_rocm"] = file_entry(node.path("rocm_sources"), deb822(
                {**common, "name": "rocm", "uris": [repo["rocm"]] + ([repo["graphics"]] if repo["graphics"] else [])}))
            files["sources_amdgpu"] = file_entry(node.path("amdgpu_sources"), deb822(
                {**common, "name": "amdgpu", "uris": [repo["amdgpu"]]}))
            files["pin"] = file_entry(repo["pin_file"], repo["pin"])
        files["unattended"] = file_entry(node.path("rocm_unattended"), apt_blacklist(
            ["Managed by metalserve.sglang: ROCm upgraded under a running server breaks it mid-flight.",
             "Move releases with rocm_driver_version and rocm_driver_upgrade: true (serial)."],
            held, ("rocm-", "hip")))
    files["udev"] = file_entry(node.path("amdgpu_udev"), "\n".join([
        f"{HEADER}: ROCm needs /dev/kfd and /dev/dri/renderD* for the serving user,",
        "# who is in video and render; nobody else gets them.",
        'SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP="render", MODE="0660"',
        'SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"',
        'SUBSYSTEM=="drm", KERNEL=="card*", GROUP="video", MODE="0660"', ""]))
    if kernel_args and osf["os_family"] == "Debian":
        files["grub"] = file_entry(node.path("rocm_grub"), "\n".join([
            f"{HEADER} (rocm_driver_kernel_args); takes effect after a reboot.",
            f'GRUB_CMDLINE_LINUX_DEFAULT="${{GRUB_CMDLINE_LINUX_DEFAULT}} {" ".join(kernel_args)}"', ""]))
    elif kernel_args:
        on_node(stage, "the kernel arguments", f"added with grubby to every kernel where missing ({' '.join(kernel_args)})")


def _all_systems() -> list[str]:
    return sorted({s for rows in rp.data("releases")["support"].values() for oses in rows.values() for s in oses})


def _support_offer(gpu: str) -> str:
    table = rp.data("releases")
    return "; ".join(f"{r}: {', '.join(table['support'][spec['support']].get(gpu) or []) or 'none'}"
                     for r, spec in table["releases"].items())


def plan_gpu(plan: dict[str, Any], hv: dict[str, Any]) -> str:
    """The GPU the plan resolved for the host (the server's recipe; for a host without a recipe, its sglang_gpu or
    the detected one)."""
    gpu = (plan.get("recipe") or {}).get("gpu") or plan.get("gpu") or hv.get("sglang_gpu")
    if not gpu:
        raise RecipeError("sglang_gpu: the driver stage needs the node's GPU; set sglang_gpu or let site.yml detect it")
    return str(gpu)


def driver_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
                 groups: dict[str, list[str]]) -> dict[str, Any]:
    vendor = plan.get("vendor")
    if plan["role"] != "server":
        return new_stage("driver", "", False, f"{host} serves no model (sglang_role {plan['role']}): no GPU driver")
    if vendor == "nvidia":
        return nvidia_stage(host, plan, hostvars, groups)
    if vendor == "amd":
        return rocm_stage(host, plan, hostvars, groups)
    return new_stage("driver", "", False, f"no driver stage for vendor {vendor!r}")


# --- RDMA -------------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def doca() -> dict[str, Any]:
    return node.expand(read_yaml(DATA_DIR / "nvidia" / "doca.yml"))


def rdma_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
               groups: dict[str, list[str]]) -> dict[str, Any]:
    del groups
    hv = hostvars[host]
    if plan["role"] != "server":
        return new_stage("rdma", "rdma", False, f"{host} serves no model (sglang_role {plan['role']})")
    stage = new_stage("rdma", "rdma", True)
    s = runtime.settings(hv, "rdma")
    stage["inputs"] = runtime.plan_inputs(s)
    stack = str(s["rdma_stack"])
    if stack not in ("inbox", "doca"):
        raise RecipeError(f"rdma_stack: {stack!r} is not one of inbox, doca")
    peermem = rdma_peermem(host, plan, s["rdma_peermem"], stack)
    modules = [str(m) for m in s["rdma_modules"]] + (["nvidia_peermem"] if peermem else [])
    networked = placement.is_networked(plan["members"], plan["recipe"].get("pd_role"))
    stage["settings"] = {"stack": stack, "peermem": bool(peermem), "memlock_unlimited": bool(s["rdma_memlock_unlimited"]),
                         "docker_dropin": bool(s["rdma_docker_dropin"]), "udev_group": str(s["rdma_udev_group"]),
                         "verify": bool(s["rdma_verify"]) and networked, "networked": networked}
    stage["modules"] = modules
    chosen = s["rdma_inbox_packages"] if stack == "inbox" else s["rdma_doca_packages"]
    stage["packages"] = {"install": [str(p) for p in chosen]}
    files = stage["files"]
    if stack == "doca":
        doca_repository(stage, s, node_os(hv))
    files["modules_load"] = file_entry(node.path("rdma_modules"),
                                       f"{HEADER}\n" + "\n".join(modules) + "\n")
    if s["rdma_memlock_unlimited"]:
        files["memlock"] = file_entry(node.path("memlock_limits"), "\n".join([
            f"{HEADER}: RDMA registers memory; an 8 MB memlock breaks NCCL and Mooncake.",
            "*    soft    memlock    unlimited", "*    hard    memlock    unlimited", ""]))
    if s["rdma_docker_dropin"]:
        files["docker_memlock"] = file_entry(node.dropin_path(runtime.docker_unit(), node.path("memlock_dropin")),
                                             systemd.unit_file([MANAGED], {"Service": ["LimitMEMLOCK=infinity"]}))
    group = stage["settings"]["udev_group"]
    files["udev"] = file_entry(node.path("infiniband_udev"), "\n".join([
        HEADER,
        f'KERNEL=="uverbs*", SUBSYSTEM=="infiniband_verbs", GROUP="{group}", MODE="0660"',
        f'KERNEL=="rdma_cm", SUBSYSTEM=="infiniband", GROUP="{group}", MODE="0660"',
        f'KERNEL=="umad*", SUBSYSTEM=="infiniband_mad", GROUP="{group}", MODE="0660"', ""]))
    in_container_note(stage)
    if networked:
        on_node(stage, "the rail check", "every port the instance uses must be ACTIVE (fabric_facts on the node)")
    return stage


# --- container runtime ------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def docker_data() -> dict[str, Any]:
    return node.expand(read_yaml(DATA_DIR / "docker" / "daemon.yml"))


JSON_TYPES = {"str": str, "bool": bool, "int": int, "list": list, "dict": dict}


def daemon_json_problems(keys: Any, variable: str = "container_runtime_daemon_json") -> list[str]:
    """What dockerd would refuse in the keys we merge into daemon.json (data/docker/daemon.yml): unknown keys,
    values of the wrong JSON type, log-opts values that are not strings."""
    if not isinstance(keys, dict):
        return [f"{variable}: expected a mapping of daemon.json keys, got {type(keys).__name__} {keys!r}"]
    table = docker_data()
    out = []
    for key, value in keys.items():
        kind = table["keys"].get(str(key))
        if kind is None:
            close = difflib.get_close_matches(str(key), list(table["keys"]), n=1, cutoff=0.7)
            out.append(f"{variable}: {key!r} is not a daemon.json key dockerd knows (it refuses to start: \"the following "
                       f"directives don't match any configuration option\"){'; did you mean ' + close[0] + '?' if close else ''}")
            continue
        want = JSON_TYPES.get(kind)
        if want is not None and (not isinstance(value, want) or (want is int and isinstance(value, bool))):
            out.append(f"{variable}.{key}: {value!r} is a {type(value).__name__}; dockerd reads {key} as a JSON {kind} "
                       "and refuses to start otherwise")
            continue
        if key in table["string_maps"] and isinstance(value, dict):
            bad = {k: v for k, v in value.items() if not isinstance(v, str)}
            for k, v in bad.items():
                out.append(f"{variable}.{key}.{k}: {v!r} must be a string (\"{v}\"): dockerd reads {key} as strings "
                           "only and refuses to start")
    return out


def rdma_peermem(host: str, plan: dict[str, Any], given: Any, stack: str) -> bool:
    """Whether nvidia_peermem loads: auto is DOCA on NVIDIA, else the boolean given; never on another vendor's node."""
    if given == "auto":
        peermem = stack == "doca" and plan.get("vendor") == "nvidia"
    elif str(given).lower() in ("true", "false", "yes", "no", "1", "0", "on", "off"):
        peermem = str(given).lower() in ("true", "yes", "1", "on")
    else:
        raise RecipeError(f"rdma_peermem: {given!r} is not auto, true or false")
    if peermem and plan.get("vendor") != "nvidia":
        raise RecipeError(f"rdma_peermem: nvidia_peermem is NVIDIA's GPUDirect module; {host} is an "
                          f"{plan.get('vendor')} node. Leave rdma_peermem at auto")
    return bool(peermem)


def doca_repository(stage: dict[str, Any], s: dict[str, Any], osf: dict[str, str] | None) -> None:
    """DOCA's repository (its URL from the release and the node's OS unless given) and its .sources file."""
    data = doca()
    url = str(s["rdma_doca_repo_url"] or "")
    if not url and osf is None:
        no_os(stage, "DOCA's repository URL")
    url = url or (data["repo_url"].format(version=s["rdma_doca_version"], distribution=osf["distribution"].lower(),
                                          distribution_version=osf["distribution_version"]) if osf else "")
    stage["repository"] = {"url": url or None, "key_url": str(s["rdma_doca_key_url"] or data["key_url"]),
                           "keyring": data["keyring"]}
    stage["files"]["sources"] = file_entry(node.path("doca_sources"), deb822(
        {"name": "doca", "uris": url, "suites": ["./"], "signed_by": data["keyring"], "types": ["deb"]})
        if url else None)


def nvidia_toolkit(host: str, vendor: Any, given: Any) -> bool:
    """Whether the NVIDIA Container Toolkit goes in: auto is an NVIDIA node, else the boolean given (not on AMD)."""
    if str(given) == "auto":
        return vendor == "nvidia"
    if str(given).lower() in ("true", "yes", "1", "on", "false", "no", "0", "off"):
        toolkit = str(given).lower() in ("true", "yes", "1", "on")
        if toolkit and vendor == "amd":
            raise RecipeError(f"container_runtime_nvidia_toolkit: true on {host}, an AMD node (its GPUs are not NVIDIA's);"
                              " leave it at auto")
        return toolkit
    raise RecipeError(f"container_runtime_nvidia_toolkit: {given!r} is not auto, true or false")


def docker_repository(stage: dict[str, Any], s: dict[str, Any], osf: dict[str, str] | None,
                      data: dict[str, Any]) -> dict[str, Any]:
    """Docker's own repository (docker-ce; its URL and suite from the node's OS unless given) and its .sources file."""
    url = str(s["container_runtime_docker_repo_url"] or "")
    key = str(s["container_runtime_docker_key_url"] or "")
    if osf is None and not (url and key):
        no_os(stage, "Docker's repository URL and suite")
    dist = osf["distribution"].lower() if osf else ""
    repo = {"url": url or (data["repository"]["url"].format(distribution=dist) if osf else None),
            "key_url": key or (data["repository"]["key_url"].format(distribution=dist) if osf else None),
            "keyring": data["repository"]["keyring"], "suite": osf["distribution_release"] if osf else None,
            "components": list(data["repository"]["components"])}
    stage["files"]["docker_sources"] = file_entry(node.path("docker_sources"), deb822(
        {"name": "docker", "uris": repo["url"], "suites": repo["suite"], "components": repo["components"],
         "signed_by": repo["keyring"], "types": ["deb"]}) if repo["url"] and repo["suite"] else None)
    return repo


def runtime_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
                  groups: dict[str, list[str]]) -> dict[str, Any]:
    del groups
    hv = hostvars[host]
    method = (plan.get("install") or {}).get("method")
    if plan["role"] not in ("server", "router") or method != "docker":
        return new_stage("runtime", "container_runtime", False,
                         f"{host} runs no container (sglang_role {plan['role']}, install {method or 'none'})")
    stage = new_stage("runtime", "container_runtime", True)
    s = runtime.settings(hv, "container_runtime")
    stage["inputs"] = runtime.plan_inputs(s)
    problems = daemon_json_problems(s["container_runtime_daemon_json"])
    if problems:
        raise RecipeError("; ".join(problems))
    source = str(s["container_runtime_docker_source"])
    data = docker_data()
    if source not in data["packages"]:
        raise RecipeError(f"container_runtime_docker_source: {source!r} is not one of {', '.join(data['packages'])}")
    toolkit = nvidia_toolkit(host, plan.get("vendor"), s["container_runtime_nvidia_toolkit"])
    stage["repository"] = docker_repository(stage, s, node_os(hv), data) if source == "docker" else None
    stage["settings"] = {"docker_source": source, "daemon_json": dict(s["container_runtime_daemon_json"]),
                         "nvidia_toolkit": bool(toolkit), "start": bool(s["container_runtime_start"]),
                         "toolkit_version": str(s["container_runtime_nvidia_toolkit_version"] or ""),
                         "nvidia_repo_manage": bool(s["container_runtime_nvidia_repo_manage"]),
                         "nvidia_repo_url": str(s["container_runtime_nvidia_repo_url"]),
                         "nvidia_key_url": str(s["container_runtime_nvidia_key_url"]),
                         "nvidia_keyring": node.path("toolkit_keyring"),
                         "cdi": bool(s["container_runtime_cdi"]) and bool(toolkit),
                         "cdi_spec": str(s["container_runtime_cdi_spec"])}
    version = stage["settings"]["toolkit_version"]
    names = ["nvidia-container-toolkit", "nvidia-container-toolkit-base"]
    stage["packages"] = {"install": list(data["packages"][source])
                         + ([f"{n}={version}" if version else n for n in names] if toolkit else [])}
    if toolkit and s["container_runtime_nvidia_repo_manage"]:
        stage["files"]["toolkit_sources"] = file_entry(
            node.path("toolkit_sources"), deb822(
                {"name": "nvidia-container-toolkit", "uris": stage["settings"]["nvidia_repo_url"], "suites": ["/"],
                 "signed_by": stage["settings"]["nvidia_keyring"], "types": ["deb"]}))
    stage["files"]["daemon_json"] = file_entry(data["daemon_json"], None)
    on_node(stage, data["daemon_json"], "the node's own file with these keys merged in (every other key stays)"
            + (", then the NVIDIA runtime added by nvidia-ctk" if toolkit else ""))
    if stage["settings"]["cdi"]:
        on_node(stage, "the CDI spec", f"{stage['settings']['cdi_spec']} regenerated whenever the loaded driver's "
                "version changes (container_runtime_driver_version, read on the node)")
    stage["settings"]["unit"] = data["unit"]
    stage["services"] = [data["unit"]] if s["container_runtime_start"] else []
    return stage


# --- weights ----------------------------------------------------------------------------------------------------

WEIGHTS_ROOT = node.folder("weights")
WEIGHT_SOURCES = ("auto", "hf", "rsync", "copy", "none")


def served_path(plan: dict[str, Any]) -> str | None:
    """The local directory the server loads (--model-path), None when it loads a hub id."""
    argv = plan["argv"]
    path = argv[argv.index("--model-path") + 1]
    return path if path.startswith("/") else None


def weights_dir(plan: dict[str, Any], hv: dict[str, Any]) -> str:
    """Where model_weights stages a server's weights: the folder the server loads (sglang_model_path), else
    /var/lib/sglang/models/<checkpoint> (where a site that stages for a hub-id server would put them; such a site
    is refused, since the server never reads there). The one owner of that path (model_weights, preflight)."""
    repo = str(hv.get("model_weights_repo") or plan["recipe"]["checkpoint"])
    return served_path(plan) or f"{WEIGHTS_ROOT}/{repo}"


def other_checkpoint(plan: dict[str, Any], path: str) -> str | None:
    """The checkpoint id of another precision of the same model that a path ends with, if any (a BF16 folder on an
    FP8 rack)."""
    model = load_catalog().models.get(plan["recipe"]["model"])
    if model is None:
        return None
    mine = plan["recipe"]["checkpoint"].rstrip("/")
    for quant, ckpt in model.checkpoints.items():
        other = str(ckpt["id"]).rstrip("/")
        if other != mine and quant != plan["recipe"]["quant"] and path.rstrip("/").endswith("/" + other) \
                and not path.rstrip("/").endswith("/" + mine):
            return f"{other} ({quant})"
    return None


def weights_stage(host: str, plan: dict[str, Any], hostvars: dict[str, dict[str, Any]],
                  groups: dict[str, list[str]]) -> dict[str, Any]:
    hv = hostvars[host]
    if plan["role"] != "server":
        return new_stage("weights", "model_weights", False, f"{host} serves no model (sglang_role {plan['role']})")
    stage = new_stage("weights", "model_weights", True)
    stage["settings"]["server_reads"] = served_path(plan) or plan["settings"]["hf_home"]
    s = runtime.settings(hv, "model_weights")
    stage["inputs"] = runtime.plan_inputs(s)
    source = str(s["model_weights_source"])
    if source not in WEIGHT_SOURCES:
        raise RecipeError(f"model_weights_source: {source!r} is not one of {', '.join(WEIGHT_SOURCES)}")
    served = served_path(plan)
    if source == "auto":  # stage from the Hub what the server loads from a folder; a hub id SGLang fetches itself
        source = "hf" if served else "none"
    repo = str(s["model_weights_repo"] or plan["recipe"]["checkpoint"])
    directory = weights_dir(plan, hv)
    problems = weights_problems(host, plan, s, source, directory,
                                bool(runtime.settings(hv, "sglang_install")["sglang_install_offline"]))
    members, leader = fanout(host, str(s["model_weights_fanout_group"] or ""), hostvars, groups, plan, problems)
    if problems:
        raise RecipeError("; ".join(problems))
    stage["settings"] = {
        "server_reads": stage["settings"]["server_reads"], "source": source, "dir": directory, "repo": repo, "revision": str(s["model_weights_revision"]),
        "hf_endpoint": str(s["model_weights_hf_endpoint"] or node.get("endpoints.hub")),
        # derived from the folders their roles own unless set: the server's config folder, the install's root
        "token_file": str(s["model_weights_token_file"] or f"{plan['settings']['config_dir']}/hf_token"),
        "tools_venv": str(s["model_weights_tools_venv"] or f"{install_root(hv)}/tools"),
        "hf_hub_version": str(s["model_weights_hf_hub_version"]),
        "rsync_source": str(s["model_weights_rsync_source"] or ""), "copy_source": str(s["model_weights_copy_source"] or ""),
        "fanout_group": str(s["model_weights_fanout_group"] or ""), "fanout_members": members,
        "fanout_leader": leader, "fanout_port": int(s["model_weights_fanout_port"]),
        "fanout_leader_address": leader_address(leader, hostvars) if leader else "",
        "fanout_keep_serving": bool(s["model_weights_fanout_keep_serving"]),
        "verify_checksums": bool(s["model_weights_verify_checksums"]), "owner": str(s["model_weights_owner"]),
        "group": str(s["model_weights_group"]), "poll": int(s["model_weights_poll"]),
        "timeout": int(s["model_weights_timeout"]),
    }
    if source == "none":
        stage["why"] = "model_weights_source is none: nothing is staged"
    on_node(stage, "what is already staged", f"the shards present in {directory} against the checkpoint's manifest")
    if leader == host and len(members) > 1:
        fanout_files(stage, members, hostvars, plan["settings"]["config_dir"])
    return stage


def install_root(hv: dict[str, Any]) -> str:
    """sglang_install_root as the install stage reads it (runtime.install_spec)."""
    return str(runtime.settings(hv, "sglang_install")["sglang_install_root"]).rstrip("/")


def weights_problems(host: str, plan: dict[str, Any], s: dict[str, Any], source: str, directory: str,
                     offline: bool) -> list[str]:
    """What a weights stage cannot do: a folder of another precision, staging where the server never reads, another
    precision's repo, a source without its settings, an offline server with nothing staged."""
    served, ckpt, quant = served_path(plan), plan["recipe"]["checkpoint"], plan["recipe"]["quant"]
    repo = str(s["model_weights_repo"] or ckpt)
    problems = []
    wrong = other_checkpoint(plan, served) if served else None
    if wrong:
        problems.append(f"sglang_model_path: {served} holds {wrong}, but {host} serves {ckpt} ({quant}); point it at "
                        f"the {quant} checkpoint's folder")
    if source != "none":
        if served is None:
            problems.append(f"model_weights_source: {host} stages {repo} into {directory}, but its server loads "
                            f"--model-path {ckpt} from the Hub and never reads that folder; set "
                            f"sglang_model_path: {directory} (for the rack), or model_weights_source: auto or none to "
                            "let SGLang download it")
        if s["model_weights_repo"] and str(s["model_weights_repo"]) != ckpt:
            model = load_catalog().models.get(plan["recipe"]["model"])
            ids = {str(c["id"]) for c in (model.checkpoints.values() if model else [])}
            if str(s["model_weights_repo"]) in ids:
                problems.append(f"model_weights_repo: {s['model_weights_repo']} is another precision's checkpoint; "
                                f"{host} serves {ckpt} ({quant}). Drop model_weights_repo (it defaults to the recipe's "
                                "checkpoint)")
    if source == "rsync" and not s["model_weights_rsync_source"] and not s["model_weights_fanout_group"]:
        problems.append("model_weights_rsync_source: model_weights_source is rsync but no rsync source is set "
                        "(rsync://host/module/path or host:/path)")
    if source == "copy" and not s["model_weights_copy_source"]:
        problems.append("model_weights_copy_source: model_weights_source is copy but no source folder is set "
                        "(a mounted path such as /mnt/nfs/models/zai-org/GLM-5.3)")
    if served is None and offline and source == "none":
        problems.append(f"sglang_install_offline: {host} is offline but its server loads --model-path "
                        f"{ckpt} (a hub id) and nothing stages it; stage the weights "
                        "(model_weights_source: copy or rsync) and set sglang_model_path")
    return problems


def leader_address(leader: str, hostvars: dict[str, dict[str, Any]]) -> str:
    address, _unresolved = placement.address_of(leader, hostvars.get(leader, {}))
    return address


def fanout(host: str, group: str, hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
           plan: dict[str, Any], problems: list[str]) -> tuple[list[str], str]:
    """The fan-out group's members (servers of the same weights) and its leader (the first)."""
    if not group:
        return [], ""
    if group not in groups:
        problems.append(f"model_weights_fanout_group: {group!r} (on {host}) is not an inventory group; "
                        f"{placement.not_a_group(group, groups)}")
        return [], ""
    members = sorted(groups[group])
    if host not in members:
        problems.append(f"model_weights_fanout_group: {host} is not in {group} ({', '.join(members)}); name the group "
                        "of the rack whose nodes share one copy")
        return [], ""
    not_serving = [m for m in members if str(hostvars.get(m, {}).get("sglang_role") or "server") != "server"]
    if not_serving:
        problems.append(f"model_weights_fanout_group: {group} holds {', '.join(not_serving)}, which serve no model "
                        "(sglang_role); the fan-out copies weights between servers only. Name a group of servers")
        return [], ""
    return members, members[0]


def fanout_files(stage: dict[str, Any], members: list[str], hostvars: dict[str, dict[str, Any]],
                 config_dir: str) -> None:
    """The leader's read-only rsync daemon for its rack's peers: its config (in sglang_server_config_dir) and unit."""
    s = stage["settings"]
    config = f"{config_dir}/{node.path('fanout_config')}"
    peers = members[1:]
    # a peer connects to fanout_leader_address (placement.address_of) from its own side of that network: the same
    # addresses an instance's firewall admits (placement.source_addresses)
    sources = {p: [a for a in placement.source_addresses(p, hostvars.get(p, {})) if firewall.is_ip(a)] for p in peers}
    addresses = [a for p in peers for a in sources[p]]
    known = all(sources.values())
    text = "\n".join([
        HEADER, f"# Read-only rsync module serving {s['dir']} to this rack's peers during the weight fan-out.",
        f"pid file = {node.path('fanout_pid')}", "use chroot = yes", "read only = yes", "list = no", "uid = root",
        "gid = root", "", "[sglang-weights]", f"    path = {s['dir']}", f"    comment = {s['repo']} for {', '.join(peers)}",
        "    exclude = .cache/", f"    hosts allow = {' '.join([*addresses, '127.0.0.1'])}",
        "    hosts deny = *", ""]) if known else None
    if not known:
        on_node(stage, "the fan-out's rsync allow-list", f"the IPv4 of {', '.join(p for p in peers if not sources[p])} "
                "(default_ipv4 facts, gathered by site.yml's first play, or an IP in ansible_host / sglang_dist_address)")
    stage["files"]["fanout_config"] = file_entry(config, text)
    online = node.systemd("network_online")
    stage["files"]["fanout_unit"] = file_entry(node.unit_path(node.unit("weights_fanout")), systemd.service_unit(
        [MANAGED], f"Read-only rsync daemon serving {s['repo']} to rack peers", [f"After={online}", f"Wants={online}"],
        [f"ExecStart={node.program('rsync')} --daemon --no-detach --port={s['fanout_port']} --config={config}",
         "Restart=on-failure"]))


# --- the site ---------------------------------------------------------------------------------------------------

STAGE_MAKERS = (("driver", driver_stage), ("rdma", rdma_stage), ("runtime", runtime_stage), ("weights", weights_stage),
                ("acceptance", acceptance_stage.acceptance_stage))
#: a role's switch that leaves its stage alone
MANAGE = {"nvidia_driver": "nvidia_driver_manage", "rocm_driver": "rocm_driver_manage", "rdma": "rdma_manage",
          "container_runtime": "container_runtime_manage"}


def attach(plans: dict[str, dict[str, Any]], hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]],
           errors: dict[str, list[str]]) -> None:
    """plan['stages'] on every planned host; each stage's problems are the host's (all of them, not the first)."""
    supported = [str(f) for f in read_yaml(DATA_DIR / "os.yml")["node_os_families"]]
    for host, plan in plans.items():
        if plan["role"] == "none":
            continue
        osf = node_os(hostvars[host])
        if osf and osf["os_family"] not in supported:
            errors.setdefault(host, []).append(
                f"{host} runs {osf['distribution']} {osf['distribution_version']} (OS family {osf['os_family']}); "
                f"metalserve.sglang converges {', '.join(supported)}-family nodes only (Debian, Ubuntu: the install, "
                "RDMA, container runtime, weights and monitoring stages install with apt). Serve from a "
                "Debian or Ubuntu node, or give this host sglang_role: none")
            continue
        out = {}
        for name, make in STAGE_MAKERS:
            try:
                stage = make(host, plan, hostvars, groups)
            except RecipeError as exc:
                errors.setdefault(host, []).extend(messages_of(exc))
                continue
            switch = MANAGE.get(stage["role"])
            if stage["applies"] and switch and not runtime.checked_settings(hostvars[host], stage["role"])[0][switch]:
                stage.update(applies=False, why=f"{switch} is false: the role leaves this stage as the node has it")
            out[name] = stage
        plan["stages"] = out
