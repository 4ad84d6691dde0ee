#!/usr/bin/env bash
# A local registry on 127.0.0.1:5000 (Debian's docker-registry) and stand-in images for the tests.
#   registry.sh start                 start it (idempotent; no systemd here, so it runs in the background)
#   registry.sh standin NAME:TAG [N]  push a tiny stand-in image as 127.0.0.1:5000/NAME:TAG; N changes its
#                                     content, so a new N is a new image under the same tag
#   registry.sh stop
# The stand-ins replace vendor images that cannot be pulled here (lmsysorg/sglang): busybox inside, a
# label saying so, nothing of SGLang.
set -euo pipefail
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}/lab
REG=127.0.0.1:5000
DIR=$CACHE/registry
mkdir -p "$DIR/data"

start() {
  if curl -fsS "http://$REG/v2/" >/dev/null 2>&1; then return; fi
  cat >"$DIR/config.yml" <<CFG
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $DIR/data}
  delete: {enabled: true}
http: {addr: $REG}
CFG
  setsid nohup /usr/bin/docker-registry serve "$DIR/config.yml" >"$DIR/registry.log" 2>&1 </dev/null &
  echo $! >"$DIR/pid"
  for _ in $(seq 1 50); do curl -fsS "http://$REG/v2/" >/dev/null 2>&1 && return; sleep 0.2; done
  echo "registry did not start; see $DIR/registry.log" >&2; exit 1
}

standin() {
  local ref=$1 n=${2:-1} root
  root=$(mktemp -d)
  if [ ! -s "$CACHE/busybox-static.deb" ]; then
    (cd "$CACHE" && apt-get download -q busybox-static >/dev/null && mv busybox-static_*.deb busybox-static.deb)
  fi
  dpkg-deb -x "$CACHE/busybox-static.deb" "$root"
  mkdir -p "$root/bin" "$root/etc"
  ln -sf ../usr/bin/busybox "$root/bin/sh"
  echo "stand-in image $ref build $n" >"$root/etc/metalserve-standin"
  tar -C "$root" -c . | docker import \
    -c 'LABEL org.opencontainers.image.description="stand-in for an SGLang image; tests only, holds no SGLang"' \
    -c 'CMD ["/bin/sh"]' - "$REG/$ref" >/dev/null
  rm -rf "$root"
  docker push -q "$REG/$ref" >/dev/null
  docker rmi -f "$REG/$ref" >/dev/null 2>&1 || true
  curl -fsS -o /dev/null -w '%{http_code}' -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REG/v2/${ref%%:*}/manifests/${ref##*:}" | grep -q 200
}

stop() { [ -s "$DIR/pid" ] && kill "$(cat "$DIR/pid")" 2>/dev/null; rm -f "$DIR/pid"; }

"$@"
