"""Generate the STAND-IN vendor repositories of the tests from the tests' own vendor facts.

Input:  tests/vendor/nvidia.yml and tests/vendor/amd.yml (what NVIDIA and AMD publish, with sources; written
        independently of data/, so the roles can disagree with them) and the static .ctl files next to this
        script (the NVIDIA Container Toolkit stand-ins of the flat test repository).
Output: in the build folder given as argv[1], one folder per repository with equivs control files and the files
        they carry, and layout.json describing each repository (path, flat or suite, Release fields, key file).
        build-apt-repo.sh builds every package with equivs-build and writes the signed indices.

Every stand-in carries the real package name, the real version strings (all the published ones the facts list, so
a wrong pin finds nothing), the dependencies and unit names the facts give, and small scripts instead of vendor
software. Its description says it is a stand-in built with equivs. Stand-ins replace vendor software only.

What the scripts do (so the molecule scenarios can tell right from wrong):
  kernel-module packages ship /usr/lib/nvidia-standin/boot: the tests' simulated reboot runs it, and it "loads" the
      module on disk: /run/nvidia-standin/module-version (what /sys/module/nvidia/version says on a real node),
      lsmod (from /etc/modules-load.d) and params (CreateImexChannel0 from /etc/modprobe.d, as /proc/driver/nvidia/params).
  nvidia-persistenced, nv-fabricmanager, nvidia-imex refuse to start while the loaded module is not their version;
      Fabric Manager's precheck also wants mlx5_core and ib_umad loaded when nvlsm is installed, and its start
      script launches nvlsm itself; nvlsm refuses a second instance. nvidia-imex wants IP addresses in nodes_config.cfg.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
VENDOR = HERE.parents[1] / "vendor"
MAINT = "metalserve.sglang tests <tests@metalserve.invalid>"
STATE = "/run/nvidia-standin"


def ctl(name: str, version: str, vendor: str, depends: list[str] | None = None,
        files: list[str] | None = None) -> str:
    lines = ["Section: misc", "Priority: optional", "Standards-Version: 3.9.2", f"Package: {name}",
             f"Version: {version}", f"Maintainer: {MAINT}", "Architecture: all"]
    if depends:
        lines.append("Depends: " + ", ".join(depends))
    if files:
        lines.append("Files: " + "\n ".join(files))
    lines.append(f"Description: STAND-IN for {vendor}'s {name} {version} (tests only)")
    lines.append(f" Built with equivs by metalserve.sglang's tests from tests/vendor/{vendor.lower()}.yml: the real name,")
    lines.append(" version, dependencies and unit names; small scripts instead of the vendor's software.")
    return "\n".join(lines) + "\n"


class Repo:
    """One stand-in repository being written: its control files and carried files."""

    def __init__(self, build: Path, path: str, **layout: Any) -> None:
        self.dir = build / ("_root" if path == "." else path.replace("/", "_"))
        (self.dir / "files").mkdir(parents=True, exist_ok=True)
        self.layout = {"path": path, "ctl_dir": self.dir.name, **layout}

    def file(self, key: str, dest: str, text: str, mode: int = 0o644) -> str:
        """A carried file and its equivs "Files:" entry (equivs takes the destination as a folder)."""
        dest_path = Path(dest)
        path = self.dir / "files" / key / dest_path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        return f"files/{key}/{dest_path.name} {dest_path.parent}/"

    def add(self, name: str, version: str, text: str) -> None:
        (self.dir / f"{name}_{version.replace(':', '%')}.ctl").write_text(text)


def upstream(version: str) -> str:
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


def sh(body: str, what: str) -> str:
    return f"#!/bin/sh\n# STAND-IN for {what} (tests only; built with equivs by metalserve.sglang's tests). Not vendor software.\n{body}"


def needs_loaded(version: str, message: str) -> str:
    return (f'VERSION={version}\nloaded=$(cat {STATE}/module-version 2>/dev/null || true)\n'
            f'if [ "$loaded" != "$VERSION" ]; then echo "{message}" >&2; exit 1; fi\n')


def unit(repo: Repo, key: str, service: str, description: str, start: str, pre: str = "") -> str:
    text = (f"[Unit]\nDescription={description} (STAND-IN, tests only)\n\n[Service]\nType=simple\n"
            + (f"ExecStartPre={pre}\n" if pre else "") + f"ExecStart={start}\n\n[Install]\nWantedBy=multi-user.target\n")
    return repo.file(key, f"/lib/systemd/system/{service}", text)


BOOT = sh(f"""# What a reboot does on a real node: the module on disk is loaded, modules-load.d is applied, the
# modprobe.d options reach the module. The tests' simulated reboot runs this.
set -eu
state={STATE}
rm -rf "$state"; mkdir -p "$state"
cp /usr/lib/nvidia-standin/module-on-disk "$state/module-version"
cat /etc/modules-load.d/*.conf /usr/lib/modules-load.d/*.conf 2>/dev/null | sed 's/#.*//' | awk 'NF {{print $1}}' \\
  | sort -u > "$state/lsmod"
if grep -hsE '^[[:space:]]*options[[:space:]]+nvidia[[:space:]].*NVreg_CreateImexChannel0=1' /etc/modprobe.d/*.conf \\
  >/dev/null; then v=1; else v=0; fi
echo "CreateImexChannel0: $v" > "$state/params"
""", "a reboot of an NVIDIA node")


def nvidia_files(repo: Repo, name: str, version: str, spec: dict[str, Any]) -> list[str]:
    v = upstream(version)
    key = f"{name}-{version.replace(':', '%')}"
    files: list[str] = []
    if spec.get("kernel_module"):
        files.append(repo.file(key, "/usr/lib/nvidia-standin/module-on-disk", v + "\n"))
        files.append(repo.file(key, "/usr/lib/nvidia-standin/boot", BOOT, 0o755))
    if spec.get("tool") == "nvidia-smi":
        body = (f'loaded=$(cat {STATE}/module-version 2>/dev/null || true)\n'
                'if [ -z "$loaded" ]; then echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA '
                'driver. Make sure that the latest NVIDIA driver is installed and running."; exit 9; fi\n'
                'case "$*" in *driver_version*) echo "$loaded" ;; '
                f'*) echo "NVIDIA-SMI {v}  Driver Version: $loaded  (STAND-IN)" ;; esac\n')
        files.append(repo.file(key, "/usr/bin/nvidia-smi", sh(body, "nvidia-smi"), 0o755))
    if spec.get("unit") == "persistenced":
        body = needs_loaded(v, f"nvidia-persistenced failed to initialize: the loaded driver is ${{loaded:-not loaded}}, "
                               f"this is {v}") + "exec sleep infinity\n"
        files.append(repo.file(key, "/usr/bin/nvidia-persistenced", sh(body, "nvidia-persistenced"), 0o755))
        files.append(unit(repo, key, "nvidia-persistenced.service", "NVIDIA Persistence Daemon",
                          "/usr/bin/nvidia-persistenced --verbose"))
    if spec.get("unit") == "fabricmanager":
        start = sh(needs_loaded(v, f"fabric manager NVIDIA GPU driver interface version {v} don't match with driver "
                                   "version ${loaded:-(none loaded)}. Please update with matching NVIDIA driver package.")
                   + f"""nvl5=0; [ -x /opt/nvidia/nvlsm/sbin/nvlsm ] && nvl5=1
case "$2" in
  precheck)
    if [ $nvl5 = 1 ]; then
      for m in mlx5_core ib_umad; do
        grep -qx "$m" {STATE}/lsmod 2>/dev/null || {{ echo "Kernel module \\"$m\\" has not been loaded, fabric manager cannot be started" >&2; exit 1; }}
      done
      echo "Detected NVL5 system"
    else
      echo "Detected Pre-NVL5 system"
    fi ;;
  start)
    if [ $nvl5 = 1 ]; then
      mkdir -p /var/run/nvidia-fabricmanager
      /opt/nvidia/nvlsm/sbin/nvlsm -F /usr/share/nvidia/nvlsm/nvlsm.conf -B --pid_file /var/run/nvidia-fabricmanager/nvlsm.pid &
    fi
    exec /usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg ;;
  *) echo "usage: $0 --mode precheck|start" >&2; exit 2 ;;
esac
""", "nvidia-fabricmanager-start.sh")
        files.append(repo.file(key, "/usr/bin/nvidia-fabricmanager-start.sh", start, 0o755))
        files.append(repo.file(key, "/usr/bin/nv-fabricmanager", sh("exec sleep infinity\n", "nv-fabricmanager"), 0o755))
        files.append(repo.file(key, "/usr/share/nvidia/nvswitch/fabricmanager.cfg",
                               "# STAND-IN fabricmanager.cfg (tests only)\n"))
        files.append(unit(repo, key, "nvidia-fabricmanager.service", "FabricManager service",
                          "/usr/bin/nvidia-fabricmanager-start.sh --mode start",
                          pre="/usr/bin/nvidia-fabricmanager-start.sh --mode precheck"))
    if spec.get("unit") == "imex":
        body = (needs_loaded(v, f"IMEX {v} cannot run on the loaded NVIDIA driver ${{loaded:-(none loaded)}}")
                + """cfg=""
while [ $# -gt 0 ]; do [ "$1" = "-c" ] && cfg="$2"; shift; done
[ -r "$cfg" ] || { echo "cannot read the IMEX config '$cfg'" >&2; exit 1; }
nodes=$(sed -n 's/^IMEX_NODE_CONFIG_FILE=//p' "$cfg"); nodes=${nodes:-/etc/nvidia-imex/nodes_config.cfg}
[ -s "$nodes" ] || { echo "IMEX node config $nodes is missing or empty" >&2; exit 1; }
python3 -c 'import ipaddress, sys; [ipaddress.ip_address(l.strip()) for l in open(sys.argv[1]) if l.strip()]' "$nodes" \\
  || { echo "$nodes must list one IP address per line" >&2; exit 1; }
exec sleep infinity
""")
        files.append(repo.file(key, "/usr/bin/nvidia-imex", sh(body, "nvidia-imex"), 0o755))
        files.append(repo.file(key, "/usr/bin/nvidia-imex-ctl", sh("echo STAND-IN\n", "nvidia-imex-ctl"), 0o755))
        cfg = "# STAND-IN of NVIDIA's /etc/nvidia-imex/config.cfg defaults (tests only)\n" + "".join(
            f"{k}={v2}\n" for k, v2 in FACTS_NV["imex"]["config_defaults"].items())
        files.append(repo.file(key, "/etc/nvidia-imex/config.cfg", cfg))
        files.append(unit(repo, key, "nvidia-imex.service", "NVIDIA IMEX service",
                          "/usr/bin/nvidia-imex -c /etc/nvidia-imex/config.cfg"))
    if spec.get("nvlsm"):
        body = """pid=""
while [ $# -gt 0 ]; do [ "$1" = "--pid_file" ] && pid="$2"; shift; done
if [ -n "$pid" ] && [ -s "$pid" ] && kill -0 "$(cat "$pid")" 2>/dev/null; then
  echo "Perhaps another instance of OpenSM is already running" >&2; exit 1
fi
[ -n "$pid" ] && echo $$ > "$pid"
# no exec: the process keeps nvlsm's command line, as the real daemon's does (pgrep finds it by path)
while :; do sleep 3600; done
"""
        files.append(repo.file(key, "/opt/nvidia/nvlsm/sbin/nvlsm", sh(body, "nvlsm"), 0o755))
        files.append(repo.file(key, "/usr/share/nvidia/nvlsm/nvlsm.conf", "# STAND-IN nvlsm.conf\n"))
    return files


def nvidia(build: Path) -> list[dict[str, Any]]:
    layouts = []
    repo_facts = FACTS_NV["repository"]["apt"]
    for folder, published in FACTS_NV["published"].items():
        if "packages" not in published or folder.startswith("rhel") or published.get("same_as"):
            continue
        repo = Repo(build, f"nvidia/cuda/repos/{folder}/x86_64", flat=True, key_file=repo_facts["key_file"],
                    release={"Origin": repo_facts["origin"], "Label": repo_facts["label"], "Architecture": "x86_64",
                             "Acquire-By-Hash": "no"})
        for name, spec in published["packages"].items():
            for version in spec["versions"]:
                deps = [d.format(v=version) for d in spec.get("depends", [])]
                repo.add(name, version, ctl(name, version, "NVIDIA", deps, nvidia_files(repo, name, version, spec)))
        layouts.append(repo.layout)
    for folder, archive in FACTS_NV.get("distribution_archive", {}).items():
        repo = Repo(build, f"distribution/{folder}", flat=True, key_file=None,
                    release={"Origin": archive["origin"], "Label": archive["label"], "Suite": archive["suite"]})
        for name, spec in archive["packages"].items():
            for version in spec["versions"]:
                repo.add(name, version, ctl(name, version, archive["origin"]))
        layouts.append(repo.layout)
    return layouts


def amd(build: Path) -> list[dict[str, Any]]:
    layouts = []
    apt = FACTS_AMD["repository"]["apt"]
    release_fields = {"Origin": "repo.radeon.com", "Label": "repo.radeon.com"}
    for release, pkgs in FACTS_AMD["published"].items():
        spec = FACTS_AMD["releases"][release]
        suite = apt["suites"]["Debian-12"]
        fields = {"dir": spec["dir"], "driver": spec["driver"]}
        rocm = Repo(build, "amd/" + apt["rocm"].split("repo.radeon.com/", 1)[1].format(**fields), flat=False,
                    suite=suite, release=release_fields, key_file=None)
        driver = Repo(build, "amd/" + apt["amdgpu"].split("repo.radeon.com/", 1)[1].format(**fields), flat=False,
                      suite=suite, release=release_fields, key_file=None)
        core, smi, fw, dkms = pkgs["rocm-core"], pkgs["amd-smi-lib"], pkgs["amdgpu-dkms-firmware"], pkgs["amdgpu-dkms"]
        rocm.add("rocm-core", core, ctl("rocm-core", core, "AMD"))
        body = f"echo 'AMDSMI Tool: STAND-IN | ROCm version: {release}'\n"
        tool = rocm.file(f"amd-smi-{release}", "/usr/bin/amd-smi", sh(body, "amd-smi"), 0o755)
        rocm.add("amd-smi-lib", smi, ctl("amd-smi-lib", smi, "AMD", [f"rocm-core (= {core})"], [tool]))
        rocm.add("rocm", pkgs["rocm"], ctl("rocm", pkgs["rocm"], "AMD", [f"rocm-core (= {core})", f"amd-smi-lib (= {smi})"]))
        driver.add("amdgpu-dkms-firmware", fw, ctl("amdgpu-dkms-firmware", fw, "AMD"))
        driver.add("amdgpu-dkms", dkms, ctl("amdgpu-dkms", dkms, "AMD", [f"amdgpu-dkms-firmware (= {fw})"]))
        layouts += [rocm.layout, driver.layout]
        if spec["graphics"]:   # AMD's 7.x graphics repository; the stand-in carries no package of it
            layouts.append(Repo(build, "amd/" + apt["graphics"].split("repo.radeon.com/", 1)[1].format(**fields),
                                flat=False, suite=suite, release=release_fields, key_file=None).layout)
    return layouts


def main() -> int:
    build = Path(sys.argv[1])
    build.mkdir(parents=True, exist_ok=True)
    flat = Repo(build, ".", flat=True, key_file=None, release={}, trusted=True)   # the toolkit stand-ins (static .ctl)
    for path in sorted(HERE.glob("*.ctl")):
        (flat.dir / path.name).write_text(path.read_text())
    for path in sorted((HERE / "files").iterdir()):
        (flat.dir / "files" / path.name).write_bytes(path.read_bytes())
        (flat.dir / "files" / path.name).chmod(path.stat().st_mode)
    layouts = [flat.layout, *nvidia(build), *amd(build)]
    (build / "layout.json").write_text(json.dumps(layouts, indent=1))
    return 0


FACTS_NV = yaml.safe_load((VENDOR / "nvidia.yml").read_text())
FACTS_AMD = yaml.safe_load((VENDOR / "amd.yml").read_text())

if __name__ == "__main__":
    sys.exit(main())
