#!/usr/bin/env bash
# promtool for tests/unit/test_monitoring.py (`promtool check rules`, `promtool test rules`): it comes with
# Debian's prometheus package, installed here once when missing (like tests/lab/setup.sh installs its tools).
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then exit 0; fi
echo "[promtool] apt-get install prometheus (it carries promtool)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends prometheus >/dev/null
promtool --version | head -1
