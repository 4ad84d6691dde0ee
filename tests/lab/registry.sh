#!/usr/bin/env bash
# A local registry on 127.0.0.1:5000 (Debian's docker-registry) and stand-in images for the tests.
#   registry.sh start                 start it (idempotent; no systemd here, so it runs in the background)
#   registry.sh standin NAME:TAG [N]  push a tiny stand-in image as 127.0.0.1:5000/NAME:TAG; N changes its
#                                     content, so a new N is a new image under the same tag
#   registry.sh router NAME:TAG       push an image holding the REAL sglang-router (pinned in
#                                     data/sglang/versions.yml) on the lab's Debian base, as 127.0.0.1:5000/NAME:TAG:
#                                     the stand-in for the lmsysorg/sglang image a docker-mode router runs
#   registry.sh server NAME:TAG RELEASE [ARG...]
#                                     push a stand-in SGLang server image as 127.0.0.1:5000/NAME:TAG: the lab's
#                                     Debian base with the TEST DOUBLES (tests/doubles/image_entry.py answers
#                                     `sglang serve`, `python3 -m sglang.launch_server` and `-m sglang.bench_serving`),
#                                     reporting RELEASE and behaving as ARG... says (openai_double.py arguments, e.g.
#                                     --tpot-ms 25 for a slower build, --mode unhealthy); rebuilt when they change
#   registry.sh listen ADDR:PORT      serve the same store on another address too (a lab network's gateway, where
#                                     the lab nodes' own Docker daemons pull from); `unlisten ADDR:PORT` stops it,
#                                     `stop` stops every listener
#   registry.sh stop
# The stand-ins replace vendor images that cannot be pulled here (lmsysorg/sglang), each with a label saying so:
# `standin` busybox inside; `server` test doubles of SGLang's server and bench client; `router` the real
# sglang-router; none holds SGLang.
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
  bash "$(dirname "$0")/detach.sh" "$DIR/registry.log" /usr/bin/docker-registry serve "$DIR/config.yml" >"$DIR/pid"
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

router() {
  local ref=$1 version key ctx
  version=$(sed -n 's/^router_pinned: "\(.*\)"/\1/p' "$(dirname "$0")/../../data/sglang/versions.yml")
  key="router-$version-$(docker image inspect -f '{{.Id}}' metalserve-lab/debian-sshd:12 | cut -c8-19)"
  if curl -fsS "http://$REG/v2/${ref%%:*}/manifests/${ref##*:}" -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
       -o /dev/null 2>/dev/null && [ "$(cat "$DIR/$key" 2>/dev/null)" = "$ref" ]; then return; fi
  ctx=$(mktemp -d)
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM metalserve-lab/debian-sshd:12
LABEL org.opencontainers.image.description="stand-in for the lmsysorg/sglang image of a docker-mode router: the lab's Debian base with the real sglang-router $version from PyPI; tests only"
RUN apt-get update -q && apt-get install -y -q --no-install-recommends python3-venv >/dev/null \\
 && python3 -m venv /opt/router && /opt/router/bin/pip install -q "sglang-router==$version" \\
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/router/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["/usr/local/bin/python3", "-m", "sglang_router.launch_router", "--help"]
DOCKERFILE
  docker build -q -t "$REG/$ref" "$ctx" >/dev/null
  rm -rf "$ctx"
  docker push -q "$REG/$ref" >/dev/null
  echo "$ref" >"$DIR/$key"
}

server() {
  local ref=$1 release=$2 ctx key doubles pkg
  shift 2
  doubles="$(dirname "$0")/../doubles"
  ctx=$(mktemp -d)
  pkg="$ctx/root/usr/local/lib/python3.11/dist-packages/sglang"
  mkdir -p "$ctx/root/usr/local/lib/metalserve-standin" "$ctx/root/usr/local/bin" "$ctx/root/etc/metalserve-standin" "$pkg"
  cp "$doubles/image_entry.py" "$doubles/openai_double.py" "$doubles/bench_serving_double.py" \
     "$ctx/root/usr/local/lib/metalserve-standin/"
  cat >"$ctx/root/usr/local/bin/sglang" <<'SH'
#!/bin/sh
# TEST DOUBLE: the stand-in image's `sglang` command (tests/doubles/image_entry.py)
exec /usr/bin/python3 /usr/local/lib/metalserve-standin/image_entry.py "$@"
SH
  chmod 755 "$ctx/root/usr/local/bin/sglang"
  : >"$pkg/__init__.py"
  for module in launch_server bench_serving; do
    printf '# TEST DOUBLE (stand-in image): python3 -m sglang.%s\nimport sys\nsys.path.insert(0, "/usr/local/lib/metalserve-standin")\nimport image_entry  # noqa: E402\nimage_entry.main("%s", sys.argv[1:])\n' \
      "$module" "$module" >"$pkg/$module.py"
  done
  echo "$release" >"$ctx/root/etc/metalserve-standin/release"
  python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >"$ctx/root/etc/metalserve-standin/behaviour.json"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM metalserve-lab/debian-sshd:12
LABEL org.opencontainers.image.description="stand-in for an lmsysorg/sglang image ($release): TEST DOUBLES of sglang serve and bench_serving on the lab's Debian base; tests only, holds no SGLang"
COPY root/ /
DOCKERFILE
  key=$( { docker image inspect -f '{{.Id}}' metalserve-lab/debian-sshd:12; cat "$ctx/Dockerfile";
           (cd "$ctx/root" && find . -type f | sort | xargs sha256sum); } | sha256sum | cut -c1-16)
  if [ "$(cat "$DIR/server-${ref//[\/:]/_}" 2>/dev/null)" = "$key" ] && curl -fsS -o /dev/null \
       -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' "http://$REG/v2/${ref%%:*}/manifests/${ref##*:}"; then
    rm -rf "$ctx"; return
  fi
  docker build -q -t "$REG/$ref" "$ctx" >/dev/null
  rm -rf "$ctx"
  docker push -q "$REG/$ref" >/dev/null
  echo "$key" >"$DIR/server-${ref//[\/:]/_}"
}
listen() {
  local addr=$1
  if curl -fsS "http://$addr/v2/" >/dev/null 2>&1; then return; fi
  sed "s|addr: $REG|addr: $addr|" "$DIR/config.yml" >"$DIR/config-$addr.yml"
  bash "$(dirname "$0")/detach.sh" "$DIR/registry-$addr.log" /usr/bin/docker-registry serve "$DIR/config-$addr.yml" \
    >"$DIR/pid-$addr"
  for _ in $(seq 1 50); do curl -fsS "http://$addr/v2/" >/dev/null 2>&1 && return; sleep 0.2; done
  unlisten "$addr"
  echo "registry did not start on $addr; see $DIR/registry-$addr.log" >&2; exit 1
}
unlisten() { [ -s "$DIR/pid-$1" ] && kill "$(cat "$DIR/pid-$1")" 2>/dev/null; rm -f "$DIR/pid-$1"; return 0; }
stop() {
  local pid
  for pid in "$DIR"/pid "$DIR"/pid-*; do
    [ -s "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
    rm -f "$pid"
  done
  return 0
}

"$@"
