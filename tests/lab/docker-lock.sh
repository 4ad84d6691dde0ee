#!/usr/bin/env bash
# docker-lock.sh COMMAND...: run COMMAND holding the lab's lock (METALSERVE_DOCKER_LOCK, /tmp/metalserve-docker.lock).
# Every make target that starts lab containers takes it (integration, upgrade-lab, lab, lab-destroy, molecule, bench,
# ee), so two of them never share the machine's Docker daemon, its lab network or its 2 cores at once; a second caller
# waits. Re-entrant: a command already under the lock (METALSERVE_DOCKER_LOCK_HELD=1, set here) runs straight away,
# so `make molecule-all` calling `make molecule` does not wait for itself. Daemons the locked command starts go
# through tests/lab/detach.sh, which closes the lock's descriptor in them.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 COMMAND..." >&2; exit 2; }
if [ "${METALSERVE_DOCKER_LOCK_HELD:-}" = 1 ]; then exec "$@"; fi
export METALSERVE_DOCKER_LOCK_HELD=1
lock=${METALSERVE_DOCKER_LOCK:-/tmp/metalserve-docker.lock}
if ! flock -n "$lock" true; then echo "docker-lock: waiting for $lock (another lab run holds it)" >&2; fi
exec flock "$lock" "$@"
