"""What the node stages are given, judged as the vendors' tools read it (checks/grammars.py, drivers/layouts.py,
site/stage_inputs.py, runtime_inputs.py, weights_inputs.py).

Where the tool runs here, it is the oracle: apt-get reads the repository lines (apt-get update --print-uris with a
private state directory: what apt would fetch, or "Malformed entry ... (URI parse)"), and /bin/sh reads the GRUB
drop-in line the rocm_driver role writes. Elsewhere the expectation is the vendor's published text, quoted beside
each table: rsync(1), modules-load.d(5), NVIDIA's IMEX guide and driver tables, DOCA's release folders, AMD's
repository layout, moby's daemon configuration check, huggingface_hub's HF_ENDPOINT.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import urllib.request
from urllib.parse import urlsplit
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.checks import grammars
from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import layouts
from ansible_collections.metalserve.sglang.plugins.plugin_utils.recipe.catalog import load_catalog
from ansible_collections.metalserve.sglang.plugins.plugin_utils.site import plan as site_plan

FACTS = {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04",
         "distribution_release": "noble", "architecture": "x86_64", "os_family": "Debian"}
H200 = {"sglang_gpu": "h200", "sglang_quant": "fp8", "sglang_strategy": "high-throughput",
        "sglang_model_path": "/nvme/models/zai-org/GLM-5.3"}
MI355X = {"sglang_gpu": "mi355x", "sglang_quant": "fp8", "sglang_strategy": "balanced",
          "sglang_model_path": "/nvme/models/zai-org/GLM-5.3", "rocm_driver_version": "7.2.1"}


def problems(hostvars: dict[str, dict[str, Any]], groups: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    groups = {"all": sorted(hostvars), **(groups or {})}
    return site_plan.plan_site(hostvars, groups)["errors"]


# --- apt's repository lines (sources.list(5); apt-get itself where installed) --------------------------------------

APT = shutil.which("apt-get")


def apt_fetches(uri: str, suite: str, tmp: Path) -> str:
    """The InRelease URL apt-get would fetch for one deb822 stanza, or 'malformed' when apt refuses the line."""
    parts = tmp / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    (tmp / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (tmp / "cache").mkdir(exist_ok=True)
    component = "" if suite.endswith("/") else "Components: main\n"
    (parts / "t.sources").write_text(f"Types: deb\nURIs: {uri}\nSuites: {suite}\n{component}")
    out = subprocess.run([APT, "-o", "Dir::Etc::SourceList=/dev/null", "-o", f"Dir::Etc::SourceParts={parts}",
                          "-o", f"Dir::State::Lists={tmp / 'lists'}", "-o", f"Dir::Cache={tmp / 'cache'}",
                          "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64", "update", "--print-uris"],
                         capture_output=True, text=True, check=False)
    if "Malformed" in out.stdout + out.stderr:
        return "malformed"
    found = re.search(r"'([^']*InRelease)'", out.stdout)
    assert found, out.stdout + out.stderr
    return found.group(1)


# (URI, suite, the path the vendor publishes the Release file at, relative to its tree): AMD's amdgpu line for ROCm
# 7.2.1 is "https://repo.radeon.com/amdgpu/30.30.1/ubuntu noble main" (A-RIOL conf 7.2.1: amdgpu 30.30.1; the release
# file at amdgpu/30.30.1/ubuntu/dists/noble/InRelease); NVIDIA's CUDA line is flat: ".../repos/ubuntu2404/x86_64/ /"
# (CRM SIGNATURES.md example 8).
APT_CASES = [
    ("https://repo.radeon.com/amdgpu/30.30.1/ubuntu", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("file:///srv/aptrepo/amd/amdgpu/30.30.1/ubuntu", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("https://mirror.lan/amdgpu/30.30.1/ubuntu/noble", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("https://mirror.lan/amdgpu/30.30.1/ubuntu/dists/noble", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("mirror.lan/amdgpu/30.30.1/ubuntu", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("https://mirror.lan/amdgpu/30.30.1/ubuntu/ubuntu", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("https://mirror.lan/amdgpu/30.30.1", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("https://mirror.lan/amdgpu/7.2.1/ubuntu", "noble", "/amdgpu/30.30.1/ubuntu/dists/noble/InRelease"),
    ("https://mirror.lan/rocm/apt/7.2.1", "noble", "/rocm/apt/7.2.1/dists/noble/InRelease"),
    ("https://mirror.lan/rocm/apt/7.2.1/ubuntu", "noble", "/rocm/apt/7.2.1/dists/noble/InRelease"),
    ("https://mirror.lan/rocm/apt/7.2.3", "noble", "/rocm/apt/7.2.1/dists/noble/InRelease"),
    ("https://mirror.lan/cuda/repos/ubuntu2404/x86_64/", "/", "/repos/ubuntu2404/x86_64/InRelease"),
    ("mirror.lan/cuda/repos/ubuntu2404/x86_64/", "/", "/repos/ubuntu2404/x86_64/InRelease"),
]


@pytest.mark.skipif(APT is None, reason="apt-get is not installed here")
@pytest.mark.parametrize(("uri", "suite", "published"), APT_CASES)
def test_a_repository_uri_is_refused_exactly_when_apt_cannot_use_it(
        uri: str, suite: str, published: str, tmp_path: Path) -> None:
    fetched = apt_fetches(uri, suite, tmp_path)
    apt_ok = fetched != "malformed" and fetched.endswith(published) and fetched.count("/dists/") <= 1 \
        and not re.search(r"/(noble|jammy)/dists/", fetched)
    verdict = grammars.repository_uri(uri, None if suite.endswith("/") else suite)
    tree = next((kind for kind in ("amdgpu", "rocm") if f"/{kind}/" in published), None)
    if tree and verdict is None:  # AMD's layout for ROCm 7.2.1, the release of these lines
        verdict = layouts.rocm_mirror(uri, tree, "7.2.1")
    assert (verdict is None) == apt_ok, (uri, fetched, verdict)


@pytest.mark.skipif(APT is None, reason="apt-get is not installed here")
@pytest.mark.parametrize("base", ["https://mirror.lan/compute/cuda/repos", "https://mirror.lan/compute/cuda/repos/ubuntu2404",
                                  "https://mirror.lan/compute/cuda/repos/ubuntu2404/x86_64"])
def test_a_cuda_mirror_is_refused_exactly_when_apt_would_fetch_the_folder_twice(base: str, tmp_path: Path) -> None:
    """The plan appends NVIDIA's <folder>/<arch>/ (drivers/nvidia.repository); apt then fetches <that>/InRelease."""
    from ansible_collections.metalserve.sglang.plugins.plugin_utils.drivers import nvidia as nv
    url = nv.repository("Ubuntu", "24", "x86_64", base)["url"]
    fetched = apt_fetches(url, "/", tmp_path)
    twice = fetched.count("ubuntu2404") > 1 or fetched.count("x86_64") > 1
    assert (layouts.cuda_mirror(base) is not None) == twice, (base, fetched)


def test_the_uri_schemes_are_the_methods_apt_ships() -> None:
    methods = Path("/usr/lib/apt/methods")
    if not methods.is_dir():
        pytest.skip("apt is not installed here")
    shipped = {p.name for p in methods.iterdir()} - {"gpgv", "rred", "store"}
    assert shipped <= set(grammars.apt_facts()["schemes"]), shipped - set(grammars.apt_facts()["schemes"])


# --- AMD's repository layout ---------------------------------------------------------------------------------------

# AMD's install lines per release (A-RIOL docs/conf.py per release, A-DOCS; vendor-facts B.1): the rocm folder, the
# graphics folder and the amdgpu driver folder.
AMD_PUBLISHED = {"7.0.2": ("7.0.2", "30.10.2"), "7.1.1": ("7.1.1", "30.20.1"), "7.2.0": ("7.2", "30.30"),
                 "7.2.1": ("7.2.1", "30.30.1"), "7.2.3": ("7.2.3", "30.30.3"), "7.2.4": ("7.2.4", "30.30.4")}


@pytest.mark.parametrize(("release", "folders"), AMD_PUBLISHED.items())
def test_amds_own_urls_of_a_release_pass_and_another_releases_do_not(release: str, folders: tuple[str, str]) -> None:
    rocm, driver = folders
    assert layouts.rocm_mirror(f"https://repo.radeon.com/rocm/apt/{rocm}", "rocm", release) is None
    assert layouts.rocm_mirror(f"https://repo.radeon.com/graphics/{rocm}/ubuntu", "graphics", release) is None
    assert layouts.rocm_mirror(f"https://repo.radeon.com/amdgpu/{driver}/ubuntu", "amdgpu", release) is None
    # "amdgpu/7.2/ubuntu does not exist" (vendor-facts B.1): the ROCm number in the driver tree
    assert layouts.rocm_mirror(f"https://mirror.lan/amdgpu/{rocm}/ubuntu", "amdgpu", release) is not None
    others = [r for r in AMD_PUBLISHED if AMD_PUBLISHED[r][0] != rocm]
    assert layouts.rocm_mirror(f"https://mirror.lan/rocm/apt/{AMD_PUBLISHED[others[0]][0]}", "rocm", release)
    # the trees mixed: the amdgpu tree given as the rocm mirror, the rocm tree as the graphics mirror
    assert layouts.rocm_mirror(f"https://mirror.lan/amdgpu/{driver}/ubuntu", "rocm", release)
    assert layouts.rocm_mirror(f"https://mirror.lan/rocm/apt/{rocm}", "graphics", release)


def test_a_mirror_url_of_another_release_is_refused_in_the_plan_naming_the_group() -> None:
    hv = {n: dict(MI355X, rocm_driver_rocm_repo_url="https://mirror.lan/rocm/apt/7.2.3") for n in ("m1", "m2")}
    found = problems({**hv, "n": H200}, {"amd": ["m1", "m2"]})
    assert any(m.startswith("rocm_driver_rocm_repo_url (set for group amd (2 hosts)): ") and "rocm/apt/7.2.3" in m
               and "rocm/apt/7.2.1" in m for m in found["m1"]), found


# --- rsync's source syntax --------------------------------------------------------------------------------------

# rsync(1) SYNOPSIS: "Access via remote shell: Pull: rsync [OPTION...] [USER@]HOST:SRC... [DEST]"; "Access via rsync
# daemon: Pull: rsync [OPTION...] [USER@]HOST::SRC... [DEST]; rsync [OPTION...] rsync://[USER@]HOST[:PORT]/SRC...";
# a path whose first colon comes after a slash is local (rsync's check_for_hostspec); rsync has no ssh:// URL.
RSYNC = [("cache01:/models/zai-org/GLM-5.3", ("shell", "cache01", "/models/zai-org/GLM-5.3")),
         ("ops@cache01:models/GLM-5.3", ("shell", "cache01", "models/GLM-5.3")),
         ("cache01::models/zai-org/GLM-5.3", ("daemon", "cache01", "models/zai-org/GLM-5.3")),
         ("rsync://cache01:873/models/GLM-5.3", ("daemon", "cache01", "models/GLM-5.3")),
         ("rsync://ops@10.0.0.5/models/GLM-5.3", ("daemon", "10.0.0.5", "models/GLM-5.3")),
         ("[fd00::5]:/models/GLM-5.3", ("shell", "fd00::5", "/models/GLM-5.3")),
         ("10.0.0.5/models/zai-org/GLM-5.3", None), ("/mnt/models/GLM-5.3", None), ("./a:b", None),
         ("ssh://cache01/models/GLM-5.3", None), ("http://cache01/models/GLM-5.3", None)]


@pytest.mark.parametrize(("source", "expected"), RSYNC)
def test_rsync_sources_read_as_rsync_reads_them(source: str, expected: tuple[str, str, str] | None) -> None:
    found = grammars.rsync_source(source)
    assert (None if found is None else (found["kind"], found["host"], found["path"])) == expected
    assert (grammars.rsync_problem(source) is None) == (expected is not None)


# --- the kernel command line (kernel-parameters.rst; /bin/sh reads the GRUB drop-in) --------------------------------

@pytest.mark.parametrize("item", ["iommu=pt", "pci=realloc=off", "amdgpu.noretry=0", "modprobe.blacklist=amdgpu",
                                  "iommu=pt pci=realloc=off", 'GRUB_CMDLINE_LINUX_DEFAULT="quiet splash iommu=pt"',
                                  'acpi="a b"', "a$(printf x)", "a`printf x`", "$HOME", "", "nokaslr"])
def test_a_kernel_argument_is_accepted_exactly_when_the_booted_line_holds_it_as_one_word(
        item: str, tmp_path: Path) -> None:
    """The role writes GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT} <items>" (grub-mkconfig sources it
    with sh) and later looks for each item among /proc/cmdline's words (kernel-parameters.rst: parameters are
    separated by spaces)."""
    drop_in = tmp_path / "60-metalserve-rocm.cfg"
    drop_in.write_text(f'GRUB_CMDLINE_LINUX_DEFAULT="${{GRUB_CMDLINE_LINUX_DEFAULT}} {item}"\n')
    out = subprocess.run(["/bin/sh", "-c", f'GRUB_CMDLINE_LINUX_DEFAULT=quiet; . "{drop_in}" && '
                          'printf %s "$GRUB_CMDLINE_LINUX_DEFAULT"'], capture_output=True, text=True, check=False)
    words = out.stdout.split() if out.returncode == 0 else []
    one_word = bool(item) and words[1:] == [item]
    assert (grammars.kernel_parameter(item) is None) == one_word, (item, out.stdout, out.stderr)


def test_kernel_args_given_as_one_string_are_refused_with_the_list_that_works() -> None:
    hv = {"m": dict(MI355X, rocm_driver_kernel_args="iommu=pt pci=realloc=off")}
    assert any("rocm_driver_kernel_args (set on host m): 'iommu=pt pci=realloc=off' is one string" in p
               and "[iommu=pt, pci=realloc=off]" in p for p in problems(hv)["m"])


# --- modules-load.d(5), DOCA's release numbers, IMEX's nodes_config.cfg --------------------------------------------

# modules-load.d(5): "a list of kernel module names to load, separated by newlines"; parameters are modprobe.d(5)'s
# "options module parameter=value" lines, and a module is named without its .ko file.
@pytest.mark.parametrize(("line", "ok"), [("ib_umad", True), ("mlx5_core", True), ("nvidia-peermem", True),
                                          ("mlx5_core debug_mask=0", False), ("ib_umad.ko", False),
                                          ("options ib_umad", False), ("/lib/modules/x/ib_umad.ko", False)])
def test_module_names_as_modules_load_d_reads_them(line: str, ok: bool) -> None:
    assert (grammars.module_name(line) is None) is ok


# DOCA's repository folders are DOCA release numbers (linux.mellanox.com/public/repo/doca/3.1.0/..., 2.10.0,
# latest, latest-2.9-LTS); DOCA 3.1.0 carries MLNX_OFED 25.07-0.9.7.0 (MLNX_OFED_SRC-25.07-0.9.7.0.tgz), a number
# no folder has, like MLNX_OFED's 24.10-1.1.4.0 and 5.8-3.0.7.0.
@pytest.mark.parametrize(("value", "ok"), [("3.1.0", True), ("2.10.0", True), ("latest", True), ("latest-2.9-LTS", True),
                                           ("25.07-0.9.7.0", False), ("24.10-1.1.4.0", False), ("5.8-3.0.7.0", False),
                                           ("3.1", False)])
def test_doca_versions_name_a_repository_folder(value: str, ok: bool) -> None:
    why = grammars.doca_version(value)
    assert (why is None) is ok
    if "-" in value and not value.startswith("latest"):
        assert "MLNX_OFED" in str(why)


def test_an_imex_address_that_is_a_name_is_refused() -> None:
    """NVIDIA IMEX guide (config.html): nodes_config.cfg lists the IP address of every node, one per line."""
    hv = {g: {"sglang_gpu": "gb300", "sglang_quant": "fp8", "sglang_strategy": "high-throughput",
              "sglang_model_path": "/nvme/GLM-5.3", "nvidia_driver_imex_group": "nvl", "ansible_host": ip,
              **({"nvidia_driver_imex_address": name} if name else {})}
          for g, ip, name in (("g1", "10.0.0.1", "g1-ib.cluster.local"), ("g2", "10.0.0.2", ""))}
    found = problems(hv, {"nvl": ["g1", "g2"]})
    assert any("nvidia_driver_imex_address (set on host g1): 'g1-ib.cluster.local' is a host name" in p
               for p in found.get("g1", [])), found
    assert not any("nvidia_driver_imex_address" in p for p in found.get("g2", []))


# --- the driver a GPU needs ----------------------------------------------------------------------------------------

def test_the_oldest_driver_of_each_gpu_is_nvidias_published_one() -> None:
    """NVIDIA: B300 and GB300 are compute capability 10.3 (developer.nvidia.com/cuda-gpus); CUDA 12.9 added SM 10.3
    (CUDA 12.9 features archive) and needs "CUDA 12.9 GA >=575.51.03" (CUDA toolkit release notes); H200 is 9.0,
    first in CUDA 11.8 (>=520.61.05); "HGX B200 requires a driver container version of 570.133.20 or later"
    (GPU Operator platform support)."""
    gpus = load_catalog().gpus
    published = {"b300": "575.51.03", "gb300": "575.51.03", "h200": "520.61.05", "b200": "570.133.20"}
    assert {g: (layouts.minimum_driver(g, gpus[g]) or ("",))[0] for g in published} == published


@pytest.mark.parametrize(("gpu", "branch", "version", "refused"), [
    ("b300", 570, "", True), ("b300", 575, "575.51.02", True), ("b300", 575, "575.57.08", False),
    ("b300", 580, "", False), ("h200", 570, "", False), ("b200", 570, "570.124.06", True), ("b200", 570, "570.133.20", False)])
def test_a_driver_that_predates_the_gpu_is_refused(gpu: str, branch: int, version: str, refused: bool) -> None:
    quant = "nvfp4" if gpu == "b300" else "fp8"
    strategy = "low-latency" if gpu == "b300" else "high-throughput"
    hv = {"n": {"sglang_gpu": gpu, "sglang_quant": quant, "sglang_strategy": strategy, "nvidia_driver_branch": branch,
                "sglang_model_path": "/nvme/w", **({"nvidia_driver_version": version} if version else {})}}
    found = [p for p in problems(hv).get("n", []) if "predates" in p]
    assert bool(found) is refused, found


# --- one node's settings against each other ------------------------------------------------------------------------

def test_cdi_without_the_toolkit_is_refused_and_a_site_wide_default_is_not() -> None:
    alone = {"n": dict(H200, sglang_install_method="docker", container_runtime_nvidia_toolkit=False,
                       container_runtime_cdi=True)}
    assert any(p.startswith("container_runtime_cdi (set on host n): true on n, but container_runtime_nvidia_toolkit is "
                            "false there") for p in problems(alone)["n"])
    site = {"n": dict(H200, sglang_install_method="docker", container_runtime_cdi=True),
            "a": dict(MI355X, sglang_install_method="docker", container_runtime_cdi=True)}
    assert not problems(site)


def test_dockerd_runtimes_must_exist_on_the_node() -> None:
    """moby daemon/config: "specified default runtime '%s' does not exist" unless it is runc, a containerd shim name
    or a daemon.json `runtimes` entry; nvidia-ctk adds the nvidia entry only with the toolkit."""
    amd = {"a": dict(MI355X, sglang_install_method="docker",
                     container_runtime_daemon_json={"default-runtime": "nvidia"})}
    assert any("default-runtime 'nvidia' is no runtime dockerd has on a (an AMD node" in p for p in problems(amd)["a"])
    fine = {"a": dict(MI355X, sglang_install_method="docker",
                      container_runtime_daemon_json={"default-runtime": "io.containerd.runc.v2"}),
            "n": dict(H200, sglang_install_method="docker", container_runtime_daemon_json={"default-runtime": "nvidia"})}
    assert not problems(fine)


def test_memlock_off_on_a_networked_server_is_refused() -> None:
    pair = {n: {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
                "sglang_instance_group": "pair", "rdma_memlock_unlimited": False} for n in ("b1", "b2")}
    found = problems({**pair, "n": H200}, {"pair": ["b1", "b2"]})
    assert all(any("rdma_memlock_unlimited (set for group pair (2 hosts)): false on" in p for p in found[h])
               for h in ("b1", "b2")), found
    assert not problems({"n": dict(H200, rdma_memlock_unlimited=False)})


def test_an_upgrade_without_the_reboot_it_needs_is_refused() -> None:
    assert any("nvidia_driver_upgrade (set on host n): true moves a held driver" in p
               for p in problems({"n": dict(H200, nvidia_driver_upgrade=True)})["n"])
    assert not problems({"n": dict(H200, nvidia_driver_upgrade=True, nvidia_driver_allow_reboot=True)})
    assert any(p.startswith("rocm_driver_upgrade") for p in problems({"m": dict(MI355X, rocm_driver_upgrade=True)})["m"])


def test_a_pin_the_role_never_applies_is_refused() -> None:
    assert any(p.startswith("rocm_driver_version (set on host m): 7.2.1 is pinned for m, but rocm_driver_manage is false")
               for p in problems({"m": dict(MI355X, rocm_driver_manage=False)})["m"])


def test_a_sites_own_key_needs_the_mirror_it_signs() -> None:
    own = "0123456789ABCDEF0123456789ABCDEF01234567"
    assert any(p.startswith("nvidia_driver_repo_key_fingerprint (set on host n): 0123") and "NVIDIA's own" in p
               for p in problems({"n": dict(H200, nvidia_driver_repo_key_fingerprint=own)})["n"])
    mirror = dict(H200, nvidia_driver_repo_key_fingerprint=own, nvidia_driver_repo_base_url="https://mirror.lan/cuda/repos",
                  nvidia_driver_repo_key_url="https://mirror.lan/cuda/key.pub")
    assert not problems({"n": mirror})


def test_an_imex_group_on_a_platform_without_imex_is_refused() -> None:
    """NVIDIA IMEX guide: IMEX serves multi-node NVLink domains (GB200/GB300 NVL); an HGX board has none."""
    found = problems({"n": dict(H200, nvidia_driver_imex_group="solo")}, {"solo": ["n"]})
    assert any(p.startswith("nvidia_driver_imex_group (set on host n or its one-host group solo): n is a h200 node") for p in found["n"])


# --- the GPUs a node must show --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value", "refused"), [("node_acceptance_expected_gpus", 4, True),
                                                        ("node_acceptance_expected_gpus", 8, False),
                                                        ("node_acceptance_expected_gpus", 16, True),
                                                        ("node_acceptance_expected_gpus", 0, False)])
def test_the_gpus_a_node_must_show_lie_between_its_servers_and_its_board(name: str, value: int, refused: bool) -> None:
    """An HGX H200 board has 8 GPUs (NVIDIA H200 datasheet); GLM-5.3 FP8 runs --tp-size 8 on it (the cookbook)."""
    found = problems({"n": dict(H200, **{name: value})})
    assert bool(found) is refused, found
    if not refused:
        plan = site_plan.plan_site({"n": dict(H200, **{name: value})}, {"all": ["n"]})["plans"]["n"]
        assert plan["stages"]["acceptance"]["settings"]["expected_gpus"] == (value or 8)


def test_rocm_expected_gpus_is_held_by_the_plan_and_judged() -> None:
    site = site_plan.plan_site({"m": MI355X}, {"all": ["m"]})
    assert site["plans"]["m"]["stages"]["driver"]["settings"]["expected_gpus"] == 8
    assert any(p.startswith("rocm_driver_expected_gpus (set on host m): 4, but m's servers use 8 GPUs")
               for p in problems({"m": dict(MI355X, rocm_driver_expected_gpus=4)})["m"])


# --- the weights across hosts -----------------------------------------------------------------------------------------

def test_a_hub_endpoint_without_a_scheme_is_no_url() -> None:
    """huggingface_hub: ENDPOINT = os.getenv("HF_ENDPOINT", ...).rstrip("/"), and a file's URL is
    f"{ENDPOINT}/{repo_id}/resolve/{revision}/{filename}": without a scheme it is no URL (urllib says so too)."""
    for endpoint, ok in (("hf-mirror.internal:8080", False), ("https://hf-mirror.internal:8080", True)):
        urllib_ok = urllib.request.Request(f"{endpoint}/zai-org/GLM-5.3/resolve/main/config.json").type in ("http", "https")
        assert urllib_ok is ok and (grammars.http_url(endpoint) is None) is ok


def test_a_weights_source_that_is_its_own_target_is_refused() -> None:
    copy = dict(H200, model_weights_source="copy", model_weights_copy_source="/nvme/models/zai-org/GLM-5.3/")
    assert any("the folder the weights are staged into (/nvme/models/zai-org/GLM-5.3)" in p for p in problems({"n": copy})["n"])
    own = dict(H200, ansible_host="10.0.0.7", model_weights_source="rsync",
               model_weights_rsync_source="10.0.0.7:/nvme/models/zai-org/GLM-5.3/")
    assert any("rsync would copy the folder onto itself" in p for p in problems({"n": own})["n"])


def test_another_precisions_source_is_refused() -> None:
    bf16 = dict(H200, model_weights_source="copy", model_weights_copy_source="/mnt/nfs/zai-org/GLM-5.3-BF16")
    assert any("holds zai-org/GLM-5.3-BF16 (bf16), but n serves zai-org/GLM-5.3 (fp8)" in p
               for p in problems({"n": bf16})["n"])


def test_a_fanout_spanning_two_checkpoints_and_a_fanout_port_taken_are_refused() -> None:
    fp8 = dict(H200, model_weights_fanout_group="racks")
    bf16 = {"sglang_gpu": "h200", "sglang_quant": "bf16", "sglang_strategy": "balanced", "sglang_nodes": 2,
            "sglang_instance_group": "pair", "sglang_model_path": "/nvme/models/zai-org/GLM-5.3-BF16",
            "model_weights_fanout_group": "racks"}
    found = problems({"a": fp8, "b1": bf16, "b2": bf16}, {"racks": ["a", "b1", "b2"], "pair": ["b1", "b2"]})
    assert all(any("racks spans 2 checkpoints" in p for p in found[h]) for h in ("a", "b1", "b2")), found
    taken = problems({"a": dict(fp8, model_weights_fanout_port=30000), "c": dict(fp8, model_weights_fanout_port=30000)},
                     {"racks": ["a", "c"]})
    assert any("30000 is taken on a, the fan-out's leader, by --port" in p for p in taken["a"]), taken


def test_an_offline_rack_that_downloads_from_the_hub_is_refused() -> None:
    """huggingface_hub: HF_HUB_OFFLINE=1 means no HTTP call reaches the Hub; a mirror inside the site is fine."""
    offline = dict(H200, sglang_env={"HF_HUB_OFFLINE": "1"})
    assert any("is offline (HF_HUB_OFFLINE=1" in p for p in problems({"n": offline})["n"])
    assert not problems({"n": dict(offline, model_weights_hf_endpoint="https://hf-mirror.site.internal")})


# AMD's user/kernel-space compatibility matrix (A-RIOL; vendor-facts B.3): "30.10.x supports ROCm 6.2-7.2.x; 30.20.x /
# 30.30.x support 6.3-7.2.x; the 6.4.x driver supports 6.1-7.2.x". A mirror of another release's driver that runs the
# node's ROCm is a working node, not a mistake.
@pytest.mark.parametrize(("driver", "release"), [("30.30.3", "7.2.4"), ("30.10.2", "7.2.4"), ("30.20.1", "7.0.2"),
                                                 ("30.30.4", "7.1.1"), ("6.4.3", "7.2.1")])
def test_a_driver_folder_amd_says_runs_the_release_passes(driver: str, release: str) -> None:
    assert layouts.rocm_mirror(f"https://mirror.lan/amdgpu/{driver}/ubuntu", "amdgpu", release) is None


def test_a_driver_folder_amd_does_not_publish_is_refused() -> None:
    said = layouts.rocm_mirror("https://mirror.lan/amdgpu/30.40.1/ubuntu", "amdgpu", "7.2.4")
    assert said and "amdgpu/30.30.4" in said


def test_a_sites_own_key_with_the_repositories_rocm_64_writes_mirrored_passes() -> None:
    """ROCm 6.4 has no graphics repository (A-RIOL rocm.list of 6.4: rocm and amdgpu only; data/amd/releases.yml
    graphics: false), so mirrors of the two it writes are every repository the node reads."""
    own = "0123456789ABCDEF0123456789ABCDEF01234567"
    node = dict(MI355X, sglang_gpu="mi300x", rocm_driver_version="6.4.3", rocm_driver_repo_key_fingerprint=own,
                rocm_driver_rocm_repo_url="https://mirror.lan/rocm/apt/{dir}",
                rocm_driver_amdgpu_repo_url="https://mirror.lan/amdgpu/{driver}/ubuntu",
                rocm_driver_repo_key_url="https://mirror.lan/rocm.gpg.key")
    assert not [p for p in problems({"m": node}).get("m", []) if p.startswith("rocm_driver_repo_key_fingerprint")]
    node["rocm_driver_version"] = "7.2.1"  # 7.x writes graphics/<dir> too, left at AMD's
    assert [p for p in problems({"m": node})["m"] if p.startswith("rocm_driver_repo_key_fingerprint")]


def test_a_router_whose_servers_are_refused_for_their_stages_waits_for_them() -> None:
    """The servers' own mistake is theirs; their router names them once, not each URL it would send to (a refused
    server renders no files, so every URL would read as a server the site does not have)."""
    bad = dict(H200, nvidia_driver_repo_base_url="mirror.lan/cuda/repos")
    hosts = {"s1": dict(bad, ansible_host="10.0.0.1"), "s2": dict(bad, ansible_host="10.0.0.2"),
             "lb": {"sglang_role": "router", "sglang_router_workers_group": "rack", "ansible_host": "10.0.0.9"}}
    found = problems(hosts, {"rack": ["s1", "s2"]})
    assert all(any(p.startswith("nvidia_driver_repo_base_url") for p in found[h]) for h in ("s1", "s2")), found
    assert found["lb"] == ["sglang_router_workers_group: rack (on router lb) holds servers that cannot be planned: "
                           "s1, s2 (their problems are listed under their names); the router is planned once they are"]


def test_a_router_key_its_servers_do_not_have_is_refused() -> None:
    """sglang_api_key reaches SGLang's --api-key on the servers only (roles/sglang_server: a --config file); a key on
    the router's group alone protects nothing, and a second key makes the servers answer the router's clients 401."""
    servers = {"s1": dict(H200, ansible_host="10.0.0.1"), "s2": dict(H200, ansible_host="10.0.0.2")}
    router = {"sglang_role": "router", "sglang_router_workers_group": "rack", "ansible_host": "10.0.0.9",
              "sglang_api_key": "sk-router-only-0001"}
    found = problems({**servers, "lb": router}, {"rack": ["s1", "s2"]})
    assert any("router lb has an API key, but its servers s1, s2 (group rack) have none" in p for p in found["lb"]), found
    assert all("sk-router-only-0001" not in p for ps in found.values() for p in ps)
    keyed = {h: dict(v, sglang_api_key="sk-servers-0002") for h, v in servers.items()}
    found = problems({**keyed, "lb": router}, {"rack": ["s1", "s2"]})
    assert any("API key differs from the one of its servers s1, s2" in p for p in found["lb"]), found
    assert not problems({**keyed, "lb": dict(router, sglang_api_key="sk-servers-0002")}, {"rack": ["s1", "s2"]})
    # roles/sglang_server: sglang_server_api_key (default sglang_api_key) is the key a server takes
    own = {h: dict(v, sglang_server_api_key="sk-router-only-0001") for h, v in servers.items()}
    assert not problems({**own, "lb": router}, {"rack": ["s1", "s2"]})
    assert all(p["api_key"] for h, p in site_plan.plan_site({**own, "lb": router},
                                                            {"all": ["s1", "s2", "lb"], "rack": ["s1", "s2"]})
               ["plans"].items() if h != "lb")


# huggingface_hub/constants.py: HUGGINGFACE_CO_URL_TEMPLATE = ENDPOINT + "/{repo_id}/resolve/{revision}/{filename}":
# the URL a node fetches is the endpoint joined with the repo's own path
HF_TEMPLATE = "{endpoint}/{repo_id}/resolve/{revision}/{filename}"


def repo_runs(url: str, repo: str) -> int:
    """How often the repo id stands as whole path segments in a URL (the request huggingface_hub makes)."""
    path, want = [s for s in urlsplit(url).path.split("/") if s], repo.split("/")
    return sum(path[i:i + len(want)] == want for i in range(len(path) - len(want) + 1))


@pytest.mark.parametrize("endpoint", [
    "https://hf-mirror.lan", "https://hf-mirror.lan/hf", "http://10.0.0.5:8080/hub/", "https://hf-mirror.com",
    # JFrog Artifactory's documented HF_ENDPOINT: https://<jpd>/artifactory/api/huggingfaceml/<repo-key>
    "https://jpd.example/artifactory/api/huggingfaceml/hf-remote",
    "https://mirror.lan/zai-org/GLM-5.3-snapshots",
    "https://hf-mirror.lan/zai-org/GLM-5.3", "https://hf-mirror.lan/hf/zai-org/GLM-5.3/resolve/main",
    "https://hf-mirror.lan/api/models/zai-org/GLM-5.3"])
def test_a_hub_endpoint_is_refused_when_the_url_huggingface_hub_builds_doubles_the_repo(endpoint: str) -> None:
    repo = "zai-org/GLM-5.3"
    fetched = HF_TEMPLATE.format(endpoint=endpoint.rstrip("/"), repo_id=repo, revision="main", filename="config.json")
    said = grammars.hub_endpoint(endpoint, repo)
    assert (said is not None) == (repo_runs(fetched, repo) > 1), (endpoint, fetched, said)
    if said:
        root = said.rsplit("give the Hub's root, ", 1)[1]
        again = HF_TEMPLATE.format(endpoint=root, repo_id=repo, revision="main", filename="config.json")
        assert repo_runs(again, repo) == 1 and grammars.hub_endpoint(root, repo) is None


def test_a_hub_endpoints_credentials_stay_out_of_the_message() -> None:
    said = grammars.hub_endpoint("https://svc:Pa55word@mirror.lan/hf/zai-org/GLM-5.3?token=abc", "zai-org/GLM-5.3")
    assert said and "Pa55word" not in said and "abc" not in said and said.endswith("https://mirror.lan/hf")


def test_a_secret_in_sglang_env_is_named_once() -> None:
    """Found in an operator's trial: HF_TOKEN=hf_... in sglang_env was refused twice, by its name and by its value."""
    found = problems({"n": dict(H200, sglang_env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345"})})["n"]
    assert [p for p in found if "HF_TOKEN" in p] == [
        "sglang_env: HF_TOKEN looks like a secret; sglang_env is rendered into the plan and shown in diffs. Put it in "
        "sglang_hf_token (vault it), which reaches only the 0600 environment file"], found
    assert all("hf_abcdefghijklmnop" not in p for p in found)


def test_every_secret_named_entry_of_sglang_env_is_named() -> None:
    found = problems({"n": dict(H200, sglang_env={"HF_TOKEN": "x1", "WANDB_API_KEY": "x2"})})["n"]
    assert any(p.startswith("sglang_env: HF_TOKEN looks like a secret") for p in found), found
    assert any(p.startswith("sglang_env: WANDB_API_KEY looks like a secret") for p in found), found
