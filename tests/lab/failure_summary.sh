#!/usr/bin/env bash
# What failed in a molecule or ansible-playbook log, printed last so that the end of a CI log (which is all a
# CI summary keeps) names the failing task and its message, not the destroy step that ran after it.
# Usage: failure_summary.sh LOG
set -uo pipefail
log=${1:?usage: failure_summary.sh LOG}
echo
echo "==================== what failed (from $log) ===================="
# the task header before each failure, the failure with its message, and molecule's own error lines
awk '
  /^TASK \[|^PLAY \[|^RUNNING HANDLER \[/ { header = $0 }
  /^FAILED - RETRYING/ { next }
  /^(fatal|failed): \[|^(ERROR|CRITICAL) / {
    if (header != shown) { print header; shown = header }
    print; lines = 25; next
  }
  lines > 0 { print; lines-- }
' "$log" | tail -120
echo "==================== end of what failed ===================="
