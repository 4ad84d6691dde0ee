#!/usr/bin/env bash
# Build the local apt repository of STAND-IN packages that replace vendor packages the tests cannot
# download (NVIDIA's and AMD's repositories are unreachable here). Each stand-in carries the real
# package name, version, dependencies and systemd unit names; its description says it is a stand-in;
# its binaries are small scripts. They never replace this collection's own code.
# Output: $METALSERVE_CACHE/lab/aptrepo (flat repo: "deb [trusted=yes] file:/srv/aptrepo ./"), rebuilt
# only when tests/lab/aptrepo/ changed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}/lab
REPO=$CACHE/aptrepo
key=$(cd "$HERE/aptrepo" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [ -s "$REPO/.key" ] && [ "$(cat "$REPO/.key")" = "$key" ]; then echo "apt repo up to date ($REPO)"; exit 0; fi
build=$(mktemp -d)
cp -a "$HERE/aptrepo/." "$build/"
python3 "$HERE/aptrepo/standins.py" "$build"
(cd "$build" && for ctl in *.ctl; do equivs-build "$ctl" >"${ctl%.ctl}.log" 2>&1 || { cat "${ctl%.ctl}.log"; exit 1; }; done)
rm -rf "$REPO"; mkdir -p "$REPO"
# AMD's stand-ins go into one signed repository per release, laid out as AMD's (suite jammy, component
# main), signed by a throw-away test key (amd/test-archive-key.asc) so Signed-By is exercised.
python3 - "$build" "$REPO" <<'PY'
import json, shutil, sys
from pathlib import Path
build, repo = Path(sys.argv[1]), Path(sys.argv[2])
for sub, debs in json.loads((build / "amd-layout.json").read_text()).items():
    pool = repo / sub / "pool" / "main"
    pool.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        name, version = deb.split("_", 1)
        shutil.move(str(build / f"{name}_{version.split(':')[-1]}_all.deb"), pool)
PY
export GNUPGHOME=$build/gnupg; mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' --quick-gen-key "metalserve test archive (tests only)" \
  ed25519 sign never 2>/dev/null
gpg --batch --armor --export >"$REPO/amd-test-archive-key.asc"
while IFS= read -r dir; do
  (cd "$dir" && mkdir -p dists/jammy/main/binary-amd64 \
    && dpkg-scanpackages --multiversion pool /dev/null >dists/jammy/main/binary-amd64/Packages 2>/dev/null \
    && gzip -9nkf dists/jammy/main/binary-amd64/Packages \
    && apt-ftparchive -o APT::FTPArchive::Release::Suite=jammy -o APT::FTPArchive::Release::Codename=jammy \
       -o APT::FTPArchive::Release::Components=main -o APT::FTPArchive::Release::Architectures=amd64 \
       release dists/jammy >dists/jammy/Release \
    && gpg --batch --yes --clearsign -o dists/jammy/InRelease dists/jammy/Release)
done < <(find "$REPO/amd" -type d -name pool -printf '%h\n')
cp "$build"/*.deb "$REPO/"
(cd "$REPO" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null && gzip -9nkf Packages \
  && apt-ftparchive release . >Release)
chmod -R a+rX "$REPO"
echo "$key" >"$REPO/.key"
rm -rf "$build"
echo "apt repo built: $(find "$REPO" -name '*.deb' | wc -l) stand-in packages in $REPO"
