#!/usr/bin/env bash
# Prepare this machine for the molecule scenarios (idempotent, cached; ~2-3 min cold, <1 s warm):
#   1. Debian packages: docker.io, debootstrap (and the tools the stand-in apt repo needs later)
#   2. dockerd, started in the background when no daemon answers (CI machines have no systemd)
#   3. the systemd test image metalserve-lab/debian-sshd:12, built with debootstrap (Docker Hub is
#      unreachable) and cached as a rootfs tarball keyed by its recipe. It runs sshd (host keys made at
#      each container's first boot, so every container has its own) and has two unprivileged accounts the
#      tests connect as: `ops` (passwordless sudo) and `opsvault` (sudo with the password kept in
#      tests/lab/vault/sudo.yml, an ansible-vault file), both logging in with the lab key
#      ($CACHE/ssh/id_ed25519, made here once).
# Env: METALSERVE_CACHE (default ~/.cache/metalserve-sglang), LAB_IMAGE, MIRROR.
set -euo pipefail
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}/lab
IMAGE=${LAB_IMAGE:-metalserve-lab/debian-sshd:12}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
PACKAGES="systemd,systemd-sysv,dbus,python3,python3-apt,python3-debian,sudo,iproute2,procps,ca-certificates,kmod,openssh-server"
RECIPE=4   # bump when the customisation below changes (and rename the image if older checkouts share the machine)
HERE=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$CACHE"
t0=$SECONDS
say() { echo "[lab $((SECONDS - t0))s] $*"; }

missing=""
for p in docker.io debootstrap equivs dpkg-dev apt-utils docker-registry curl; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  say "apt-get install$missing"
  apt-get update -q >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  say "starting dockerd"
  # detached with the caller's descriptors closed: a caller under flock (tests/lab/docker-lock.sh) keeps its lock
  bash "$(dirname "$0")/detach.sh" "$CACHE/dockerd.log" dockerd >/dev/null
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 "$CACHE/dockerd.log" >&2; exit 1; }
fi

# every container runs systemd, and each systemd takes several inotify instances: the kernel's default of 128 per
# user stops the 20th or so container from booting (it exits 255). Raise it where we may; say so where we may not.
if [ "$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 0)" -lt 1024 ]; then
  sysctl -q -w fs.inotify.max_user_instances=1024 2>/dev/null \
    || say "fs.inotify.max_user_instances is $(cat /proc/sys/fs/inotify/max_user_instances) and cannot be raised here: labs of more than about 15 containers will not boot"
fi

# the lab's SSH key (its public half goes into the image)
if [ ! -s "$CACHE/ssh/id_ed25519" ]; then
  mkdir -p "$CACHE/ssh" && chmod 700 "$CACHE/ssh"
  ssh-keygen -q -t ed25519 -N "" -C "metalserve-lab" -f "$CACHE/ssh/id_ed25519"
fi
SUDO_HASH=$(cat "$HERE/vault/sudo-password.sha512")
key=$( { echo "$RECIPE $SUITE $PACKAGES $MIRROR $SUDO_HASH"; cat "$CACHE/ssh/id_ed25519.pub";
         cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true; } | sha256sum | cut -c1-16)
if [ "$(docker image inspect -f '{{ index .Config.Labels "metalserve.lab.key" }}' "$IMAGE" 2>/dev/null || true)" != "$key" ]; then
  tarball="$CACHE/rootfs-$SUITE-$key.tar"
  if [ ! -s "$tarball" ]; then
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXX")
    say "debootstrap $SUITE (about a minute)"
    debootstrap --variant=minbase --include="$PACKAGES" --cache-dir="$CACHE" "$SUITE" "$rootfs" "$MIRROR" \
      >"$CACHE/debootstrap.log" 2>&1 || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
    # the host's extra CAs (a TLS-intercepting proxy here): pip and curl work inside the containers
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
      cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
      chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
    fi
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" >"$rootfs/etc/apt/sources.list"
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90lab"
    # units that get in the way inside test containers
    for unit in apt-daily.timer apt-daily-upgrade.timer getty@tty1.service console-getty.service \
                systemd-firstboot.service systemd-remount-fs.service; do
      ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
    done
    : >"$rootfs/etc/machine-id"; rm -f "$rootfs/var/lib/dbus/machine-id"
    # sshd: no host keys in the image; each container makes its own at first boot, before ssh starts
    rm -f "$rootfs"/etc/ssh/ssh_host_*
    printf '[Unit]\nDescription=SSH host keys of this container\nBefore=ssh.service\n[Service]\nType=oneshot\nExecStart=/usr/bin/ssh-keygen -A\n[Install]\nWantedBy=multi-user.target\n' \
      >"$rootfs/etc/systemd/system/metalserve-lab-hostkeys.service"
    ln -sf ../metalserve-lab-hostkeys.service "$rootfs/etc/systemd/system/multi-user.target.wants/metalserve-lab-hostkeys.service"
    printf 'PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin no\n' >"$rootfs/etc/ssh/sshd_config.d/lab.conf"
    # the accounts the tests connect as: ops (passwordless sudo), opsvault (sudo asks for its password)
    for user in ops opsvault; do
      chroot "$rootfs" useradd -m -s /bin/bash "$user"
      install -d -m 700 "$rootfs/home/$user/.ssh"
      install -m 600 "$CACHE/ssh/id_ed25519.pub" "$rootfs/home/$user/.ssh/authorized_keys"
      chroot "$rootfs" chown -R "$user:$user" "/home/$user/.ssh"
    done
    chroot "$rootfs" usermod -p "$SUDO_HASH" opsvault
    echo 'ops ALL=(ALL) NOPASSWD: ALL' >"$rootfs/etc/sudoers.d/ops"
    echo 'opsvault ALL=(ALL) ALL' >"$rootfs/etc/sudoers.d/opsvault"
    chmod 440 "$rootfs/etc/sudoers.d/ops" "$rootfs/etc/sudoers.d/opsvault"
    # no apt lists in the image; an old lists mtime keeps apt's cache_valid_time from trusting them
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    mkdir -p "$rootfs/var/lib/apt/lists/partial"; touch -d @0 "$rootfs/var/lib/apt/lists"
    tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs"
    # older recipes' tarballs stay: another checkout on this machine may still use them (a few hundred MB each)
  fi
  say "importing $IMAGE"
  docker import -c 'CMD ["/lib/systemd/systemd"]' -c 'ENV container=docker' \
    -c "LABEL metalserve.lab.key=$key" "$tarball" "$IMAGE" >/dev/null
fi
say "ready: $(docker image inspect -f '{{.Id}}' "$IMAGE" | cut -c1-19) $IMAGE"
