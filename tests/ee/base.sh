#!/usr/bin/env bash
# The base image the test execution environment is built on (idempotent, cached; ~1-2 min cold, <1 s warm).
#
# STAND-IN: execution-environment.yml builds on quay.io/fedora/fedora:41; registries are unreachable here, so the
# test builds on a Debian 12 image made with debootstrap from Debian's own packages (the lab's approach,
# tests/lab/setup.sh, sharing its package cache). What it holds is what ansible-builder 3 asks of a base image:
#   - the system Python (Debian's python3 3.11) with pip (python3-pip; Debian disables `python3 -m ensurepip` for
#     the system Python, so the definition sets options.skip_pip_install) and venv (builder's assemble step);
#   - a package manager in dnf's grammar: builder runs `$PKGMGR install -y PKGS` and `$PKGMGR clean all`;
#     /usr/local/bin/ee-apt translates both to apt-get (options.package_manager_path names it), so bindep's
#     [platform:dpkg] entries of bindep.txt are what the image gets;
#   - the host's extra CA certificates (a TLS-intercepting proxy here), for pip and apt inside the build.
# Nothing else: ansible-core, ansible-runner, the collections, bindep's packages and the plugins' Python are the
# builder's to install. The image is keyed by this recipe, like the lab's.
# Env: METALSERVE_CACHE (default ~/.cache/metalserve-sglang), EE_BASE_IMAGE, MIRROR.
# `base.sh --rootfs` makes the cached rootfs tarball only (debootstrap; no Docker).
set -euo pipefail
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}
IMAGE=${EE_BASE_IMAGE:-metalserve-ee/debian-python:12}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
PACKAGES="python3,python3-pip,python3-venv,ca-certificates"
RECIPE=2   # bump when the customisation below changes
HERE=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$CACHE/ee" "$CACHE/lab"
t0=$SECONDS
say() { echo "[ee-base $((SECONDS - t0))s] $*"; }

key=$( { echo "$RECIPE $SUITE $PACKAGES $MIRROR"; cat "$HERE/ee-apt";
         cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true; } | sha256sum | cut -c1-16)
tarball="$CACHE/ee/rootfs-$SUITE-$key.tar"
if [ "${1:-}" != "--rootfs" ]; then
  bash "$HERE/../lab/setup.sh" >/dev/null   # docker engine and debootstrap (the lab's own setup, cached)
fi
if [ "${1:-}" = "--rootfs" ] || [ "$(docker image inspect -f '{{ index .Config.Labels "metalserve.ee.key" }}' "$IMAGE" 2>/dev/null || true)" != "$key" ]; then
  if [ ! -s "$tarball" ]; then
    rootfs=$(mktemp -d "$CACHE/ee/rootfs.XXXX")
    say "debootstrap $SUITE with $PACKAGES (about a minute)"
    debootstrap --variant=minbase --include="$PACKAGES" --cache-dir="$CACHE/lab" "$SUITE" "$rootfs" "$MIRROR" \
      >"$CACHE/ee/debootstrap.log" 2>&1 || { tail -20 "$CACHE/ee/debootstrap.log" >&2; exit 1; }
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
      cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
      chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
    fi
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" >"$rootfs/etc/apt/sources.list"
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90ee"
    install -m 755 "$HERE/ee-apt" "$rootfs/usr/local/bin/ee-apt"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    mkdir -p "$rootfs/var/lib/apt/lists/partial"
    chmod 755 "$rootfs"   # mktemp made it 0700: the image's / must let the job user (uid 1000) in
    tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
  fi
  if [ "${1:-}" = "--rootfs" ]; then say "rootfs: $tarball"; exit 0; fi
  say "importing $IMAGE"
  docker import -c 'CMD ["/bin/bash"]' -c "LABEL metalserve.ee.key=$key" \
    -c 'LABEL metalserve.ee.standin="Debian 12 with its own Python, standing in for quay.io/fedora/fedora:41 (tests/ee/base.sh)"' \
    "$tarball" "$IMAGE" >/dev/null
fi
say "ready: $(docker image inspect -f '{{.Id}}' "$IMAGE" | cut -c1-19) $IMAGE"
