#!/usr/bin/env bash
# docker-lock.sh COMMAND...: run COMMAND holding the lab's lock (METALSERVE_DOCKER_LOCK, /tmp/metalserve-docker.lock).
# Every make target that starts lab containers runs its commands through it (integration, upgrade-lab, lab,
# lab-destroy, each molecule scenario, bench, ee, lab-infra), so two of them never share the machine's Docker daemon,
# its lab network or its 2 cores at once; a second caller says so and waits. The lock is taken once, on descriptor 9,
# which COMMAND inherits and holds for as long as it runs. Re-entrant: a command already under the lock
# (METALSERVE_DOCKER_LOCK_HELD names the lock it holds, set here) runs straight away. Daemons a locked command starts
# go through tests/lab/detach.sh, which closes descriptor 9 in them.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND..." >&2; exit 2; }
lock=${METALSERVE_DOCKER_LOCK:-/tmp/metalserve-docker.lock}
if [ "${METALSERVE_DOCKER_LOCK_HELD:-}" = "$lock" ] && [ -e /proc/self/fd/9 ]; then exec "$@"; fi
exec 9>>"$lock"
if ! flock -n 9; then
  echo "docker-lock: waiting for $lock (held by another lab run: $(fuser "$lock" 2>/dev/null | xargs || true))" >&2
  flock 9
fi
export METALSERVE_DOCKER_LOCK_HELD=$lock
exec "$@"
