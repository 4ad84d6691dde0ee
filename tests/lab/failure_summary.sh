#!/usr/bin/env bash
# What failed in a molecule or ansible-playbook log, printed last so that the end of a CI log (which is all a
# CI summary keeps) names the failing task and its message, not the destroy step that ran after it.
# Each failure comes with the task (or handler) it belongs to and its message, up to the next task; molecule's
# own ERROR/CRITICAL lines come alone. Failures a scenario expects (rescued, ignored) are printed too: the last
# ones shown are the ones that ended the run.
# Usage: failure_summary.sh LOG
set -uo pipefail
log=${1:?usage: failure_summary.sh LOG}
echo
echo "==================== what failed (from $log) ===================="
awk '
  /^TASK \[|^PLAY \[|^RUNNING HANDLER \[|^PLAY RECAP/ { header = $0; lines = 0 }
  /^FAILED - RETRYING/ { next }
  /^(fatal|failed): \[/ {
    if (header != shown) { print header; shown = header }
    print; lines = 25; next
  }
  /^(ERROR|CRITICAL) |^ERROR!|^\[ERROR\]:/ { print; next }
  lines > 0 { print; lines-- }
' "$log" | tail -80
echo "==================== end of what failed ===================="
