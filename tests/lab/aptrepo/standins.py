"""Write equivs control files for the STAND-IN vendor packages (tests only) into a build folder.

Real package names, versions, dependencies and systemd unit names of NVIDIA's CUDA repository and
AMD's ROCm repository; no vendor software inside: units run /bin/sleep, binaries are small scripts
that say they are stand-ins. build-apt-repo.sh calls this, then equivs-build on every .ctl.
"""
import json
import sys
from pathlib import Path

MAINT = "metalserve.sglang tests <tests@metalserve.invalid>"
NVIDIA_580 = ["580.95.05-1", "580.105.08-1"]
NVIDIA_570 = ["570.172.08-1"]


def ctl(name, version, depends="", files=(), description="", provides=""):
    lines = ["Section: misc", "Priority: optional", "Standards-Version: 3.9.2", f"Package: {name}",
             f"Version: {version}", f"Maintainer: {MAINT}", "Architecture: all"]
    if depends:
        lines.append(f"Depends: {depends}")
    if provides:
        lines.append(f"Provides: {provides}")
    if files:
        lines.append("Files: " + "\n ".join(files))
    lines.append(f"Description: STAND-IN for {description or name} (tests only)")
    lines.append(" Built by metalserve.sglang's tests with equivs: the real name, version and unit, no vendor software.")
    return "\n".join(lines) + "\n"


def unit(build: Path, service: str, description: str) -> str:
    path = build / "files" / service
    path.write_text(f"[Unit]\nDescription={description} (stand-in, tests only)\n\n[Service]\n"
                    "ExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n")
    return f"files/{service} /lib/systemd/system/"


def tool(build: Path, name: str, version: str) -> str:
    path = build / "files" / f"{name}-{version}"
    path.write_text(f"#!/bin/sh\n# stand-in for NVIDIA's {name} (tests only)\necho \"{name} version {version.split('-')[0]} "
                    "(stand-in)\"\n")
    path.chmod(0o755)
    return f"files/{name}-{version} /usr/bin/{name}"


def nvidia(build: Path) -> dict[str, str]:
    out = {}
    for versions, branch, renamed in ((NVIDIA_580, 580, True), (NVIDIA_570, 570, False)):
        for v in versions:
            sfx = "" if renamed else f"-{branch}"
            persist = unit(build, "nvidia-persistenced.service", "NVIDIA Persistence Daemon")
            out[f"nvidia-persistenced_{v}"] = ctl("nvidia-persistenced", v, files=[persist])
            out[f"nvidia-open-{branch}_{v}"] = ctl(f"nvidia-open-{branch}", v, f"nvidia-persistenced (= {v})",
                                                   description=f"NVIDIA's nvidia-open-{branch} (open kernel modules)")
            out[f"cuda-drivers-{branch}_{v}"] = ctl(f"cuda-drivers-{branch}", v, f"nvidia-persistenced (= {v})",
                                                    description=f"NVIDIA's cuda-drivers-{branch} (proprietary)")
            out[f"libnvidia-nscq{sfx}_{v}"] = ctl(f"libnvidia-nscq{sfx}", v)
            fm = [unit(build, "nvidia-fabricmanager.service", "NVIDIA fabric manager service"),
                  tool(build, "nv-fabricmanager", v)]
            out[f"nvidia-fabricmanager{sfx}_{v}"] = ctl(f"nvidia-fabricmanager{sfx}", v,
                                                        f"libnvidia-nscq{sfx} (= {v})", files=fm)
            imex = [unit(build, "nvidia-imex.service", "NVIDIA IMEX service")]
            out[f"nvidia-imex{sfx}_{v}"] = ctl(f"nvidia-imex{sfx}", v, files=imex)
    out["nvlsm_2025.10.2-1"] = ctl("nvlsm", "2025.10.2-1", files=[unit(build, "nvlsm.service", "NVLink Subnet Manager")])
    return out


# NVIDIA's DCGM exporter package (name, binary, field-list folder and unit of NVIDIA/dcgm-exporter's packaging:
# hack/package/stage-payload.sh, packaging/config-files/systemd/nvidia-dcgm-exporter.service). The version is the
# exporter release of the published Debian source package (dcgm-exporter 4.8.3); NVIDIA's repository is
# unreachable here. Its binary is a small HTTP server: for every field of the -f file it serves one sample GPU's
# value in dcgm-exporter's exposition format (README sample: DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-..."} 139).
DCGM_EXPORTER = "4.8.3-1"
DCGM_STANDIN = """#!/usr/bin/python3
# STAND-IN for NVIDIA's dcgm-exporter (metalserve.sglang tests only): no GPU, no DCGM. Serves, on -a/--address
# (default :9400), one sample GPU's value for every field of the -f/--collectors file, in dcgm-exporter's format.
import argparse
import http.server
import socket

SAMPLE = {"DCGM_FI_DEV_SM_CLOCK": 1980, "DCGM_FI_DEV_MEM_CLOCK": 2619, "DCGM_FI_DEV_GPU_TEMP": 34,
          "DCGM_FI_DEV_MEMORY_TEMP": 41, "DCGM_FI_DEV_POWER_USAGE": 118.2, "DCGM_FI_DEV_FB_USED": 126000,
          "DCGM_FI_DEV_FB_FREE": 17000, "DCGM_FI_DEV_GPU_UTIL": 97}
parser = argparse.ArgumentParser(description="dcgm-exporter stand-in")
parser.add_argument("-f", "--collectors", default="/etc/dcgm-exporter/default-counters.csv")
parser.add_argument("-a", "--address", default=":9400")
args = parser.parse_args()
fields = []
for line in open(args.collectors, encoding="utf-8"):
    parts = [p.strip() for p in line.split(",")]
    if line.strip() and not line.startswith("#") and len(parts) >= 3:
        fields.append((parts[0], parts[1], parts[2]))
labels = ('gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:18:00.0",'
          'device="nvidia0",modelName="NVIDIA H200 (stand-in)",Hostname="%s"' % socket.gethostname())
body = "".join("# HELP %s %s (stand-in)\\n# TYPE %s %s\\n%s{%s} %s\\n" % (n, h, n, k, n, labels, SAMPLE.get(n, 0))
               for n, k, h in fields).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path.split("?")[0] == "/metrics"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body if ok else b"")

    def log_message(self, *a):
        pass


host, _, port = args.address.rpartition(":")
http.server.ThreadingHTTPServer((host.strip("[]"), int(port)), Handler).serve_forever()
"""
# A few of NVIDIA's default fields, for the stand-in's own default file (the role installs its own list).
DCGM_DEFAULTS = """# STAND-IN default field list (tests only); NVIDIA's is etc/default-counters.csv of NVIDIA/dcgm-exporter.
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
"""


def dcgm_exporter(build: Path) -> dict[str, str]:
    files = build / "files"
    (files / "dcgm-exporter").write_text(DCGM_STANDIN)
    (files / "dcgm-exporter").chmod(0o755)
    (files / "default-counters.csv").write_text(DCGM_DEFAULTS)
    (files / "nvidia-dcgm-exporter.service").write_text(
        "[Unit]\nDescription=NVIDIA DCGM-exporter service (stand-in, tests only)\nWants=nvidia-dcgm.service\n"
        "After=nvidia-dcgm.service\n\n[Service]\nUser=root\n"
        "ExecStart=/usr/bin/dcgm-exporter -f /etc/dcgm-exporter/default-counters.csv\nRestart=on-abort\n\n"
        "[Install]\nWantedBy=multi-user.target\n")
    return {f"datacenter-gpu-manager-exporter_{DCGM_EXPORTER}": ctl(
        "datacenter-gpu-manager-exporter", DCGM_EXPORTER, "python3",
        files=["files/dcgm-exporter /usr/bin/", "files/default-counters.csv /etc/dcgm-exporter/",
               "files/nvidia-dcgm-exporter.service /lib/systemd/system/"],
        description="NVIDIA's DCGM exporter (a small server of sample values)")}


# ROCm releases in AMD's version format (<release>.<NNNNN>-<build>~22.04, the jammy suite Debian 12 uses);
# the build numbers are this test's, not AMD's. One amdgpu-dkms, as one release's amdgpu repository has.
ROCM = {"6.4.3": "6.4.3.60403-128~22.04", "7.0.2": "7.0.2.70002-56~22.04"}
AMD_SMI = {"6.4.3": "25.5.1.60403-128~22.04", "7.0.2": "26.0.2.70002-56~22.04"}
AMDGPU_DKMS = {"6.4.3": "1:6.12.12.60403-2194681.22.04", "7.0.2": "1:6.14.14.30100200-2212064.22.04"}


def amd_layout() -> dict[str, list[str]]:
    """AMD serves one repository per release (rocm/apt/<release>, amdgpu/<release>/ubuntu), suite jammy,
    component main; build-apt-repo.sh lays the AMD stand-ins out the same way under amd/."""
    layout = {}
    for release, v in ROCM.items():
        layout[f"amd/rocm/apt/{release}"] = [f"rocm-core_{v}", f"amd-smi-lib_{AMD_SMI[release]}", f"rocm_{v}"]
        dkms = AMDGPU_DKMS[release]
        layout[f"amd/amdgpu/{release}/ubuntu"] = [f"amdgpu-dkms_{dkms}", f"amdgpu-dkms-firmware_{dkms}"]
    return layout


def amd(build: Path) -> dict[str, str]:
    out = {}
    for release, v in ROCM.items():
        out[f"rocm-core_{v}"] = ctl("rocm-core", v, description=f"AMD's rocm-core {release}")
        smi = build / "files" / f"amd-smi-{release}"
        smi.write_text(f"#!/bin/sh\n# stand-in for AMD's amd-smi (tests only)\necho 'AMDSMI Tool: stand-in | ROCm version: {release}'\n")
        smi.chmod(0o755)
        smi_v = AMD_SMI[release]
        out[f"amd-smi-lib_{smi_v}"] = ctl("amd-smi-lib", smi_v, f"rocm-core (= {v})",
                                          files=[f"files/amd-smi-{release} /usr/bin/amd-smi"])
        out[f"rocm_{v}"] = ctl("rocm", v, f"rocm-core (= {v}), amd-smi-lib (= {smi_v})",
                               description=f"AMD's rocm {release} meta package")
        dkms = AMDGPU_DKMS[release]
        out[f"amdgpu-dkms-firmware_{dkms}"] = ctl("amdgpu-dkms-firmware", dkms)
        out[f"amdgpu-dkms_{dkms}"] = ctl("amdgpu-dkms", dkms, f"amdgpu-dkms-firmware (= {dkms})",
                                         description=f"AMD's amdgpu-dkms of ROCm {release} (the kernel driver as DKMS source)")
    return out


def main() -> int:
    build = Path(sys.argv[1])
    (build / "files").mkdir(parents=True, exist_ok=True)
    for name, text in {**nvidia(build), **dcgm_exporter(build), **amd(build)}.items():
        (build / f"{name.replace(':', '%')}.ctl").write_text(text)
    (build / "amd-layout.json").write_text(json.dumps(amd_layout(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
