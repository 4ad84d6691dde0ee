Section: utils
Priority: optional
Standards-Version: 3.9.2
Package: datacenter-gpu-manager-exporter
Version: 4.8.3-1
Maintainer: metalserve.sglang tests <tests@metalserve.invalid>
Architecture: all
Depends: python3
Files: files/dcgm-exporter /usr/bin/
 files/default-counters.csv /etc/dcgm-exporter/
 files/nvidia-dcgm-exporter.service /lib/systemd/system/
Description: STAND-IN for NVIDIA's datacenter-gpu-manager-exporter (tests only)
 Built by metalserve.sglang's tests with equivs. Name, binary, field-list folder and unit as
 NVIDIA/dcgm-exporter packages them (hack/package/stage-payload.sh,
 packaging/config-files/systemd/nvidia-dcgm-exporter.service); version 4.8.3-1, the exporter
 release of the published Debian source package. The binary is a small HTTP server that serves one
 sample GPU's value for every field of its -f file. Not NVIDIA software.
