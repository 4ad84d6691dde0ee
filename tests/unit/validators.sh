#!/usr/bin/env bash
# The real validators tests/unit/test_real_validators.py runs over rendered sites, installed here once when missing
# (like promtool.sh): systemd-analyze (Debian's systemd package) and nft (nftables). nft -c needs CAP_NET_ADMIN; the
# test runs it in an unprivileged user and network namespace (unshare -rn), so nothing of this machine's firewall is
# read or touched.
set -euo pipefail
need=()
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || need+=(nftables)
command -v unshare >/dev/null 2>&1 || need+=(util-linux)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "[validators] apt-get install ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
