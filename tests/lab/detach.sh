#!/usr/bin/env bash
# detach.sh LOG COMMAND...: start COMMAND in the background, in its own session, with stdin from /dev/null, stdout
# and stderr to LOG, and every other descriptor it would have inherited closed; prints its PID. A daemon started this
# way (dockerd, the lab's registry) does not keep a caller's lock: a locked descriptor is inherited by the command it
# runs (flock(1), tests/lab/docker-lock.sh), and a daemon that inherits it holds the lock until it exits, so every
# later caller would wait forever.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 LOG COMMAND..." >&2; exit 2; }
log=$(realpath -m "$1"); shift
(
  for fd in "/proc/$BASHPID/fd/"*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
  exec setsid nohup "$@" </dev/null >"$log" 2>&1
) &
echo "$!"
