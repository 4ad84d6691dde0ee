#!/usr/bin/env bash
# Build the local apt repositories of STAND-IN packages that replace vendor packages the tests cannot download
# (NVIDIA's and AMD's repositories are unreachable here). tests/lab/aptrepo/standins.py generates them from the
# tests' own vendor facts (tests/vendor/*.yml): real names, all the published versions with their real revisions,
# dependencies and unit names; small scripts instead of vendor software; each description says it is a stand-in.
# They never replace this collection's own code.
# Output: $METALSERVE_CACHE/lab/aptrepo, rebuilt only when tests/lab/aptrepo/ or tests/vendor/ changed:
#   ./                                        flat, trusted (NVIDIA Container Toolkit stand-ins)
#   nvidia/cuda/repos/<folder>/x86_64/        NVIDIA's layout: flat, Release Origin NVIDIA / Label NVIDIA CUDA,
#                                             signed; the signing key sits where NVIDIA's does (3bf863cc.pub)
#   distribution/<folder>/                    the distribution's own, newer builds of the same names (the pin test)
#   amd/rocm/apt/<dir>, amd/graphics/<dir>/ubuntu, amd/amdgpu/<driver>/ubuntu
#                                             AMD's layout: suite jammy, component main, Origin repo.radeon.com, signed;
#                                             key at amd/rocm/rocm.gpg.key
# The signing key is a throw-away test key made here, standing in for NVIDIA's and AMD's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}/lab
REPO=$CACHE/aptrepo
PY=${PYTHON:-python3}
key=$( (cd "$HERE/aptrepo" && find . -type f -print0 | sort -z | xargs -0 sha256sum; \
        cd "$HERE/../vendor" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
if [ -s "$REPO/.key" ] && [ "$(cat "$REPO/.key")" = "$key" ]; then echo "apt repo up to date ($REPO)"; exit 0; fi
t0=$SECONDS
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
"$PY" "$HERE/aptrepo/standins.py" "$build"
# equivs-build every control file, two at a time
# shellcheck disable=SC2016  # the single-quoted script is sh -c's, expanded there
find "$build" -name '*.ctl' -print0 | xargs -0 -P 2 -I{} sh -c \
  'cd "$(dirname "$1")" && equivs-build "$(basename "$1")" >"$1.log" 2>&1 || { cat "$1.log"; exit 255; }' _ {}

export GNUPGHOME=$build/gnupg; mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' --quick-gen-key \
  "metalserve.sglang test archive key (STAND-IN for NVIDIA's and AMD's, tests only)" ed25519 sign never 2>/dev/null

rm -rf "$REPO"; mkdir -p "$REPO"
"$PY" - "$build" "$REPO" <<'PY'
import json, shutil, subprocess, sys
from pathlib import Path
build, repo = Path(sys.argv[1]), Path(sys.argv[2])
for spec in json.loads((build / "layout.json").read_text()):
    src, dest = build / spec["ctl_dir"], repo / spec["path"]
    debs = sorted(src.glob("*.deb"))
    if spec["flat"]:
        dest.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            shutil.copy(deb, dest)
        index = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=dest, capture_output=True, text=True,
                               check=True).stdout
        (dest / "Packages").write_text(index)
        subprocess.run(["gzip", "-9nkf", "Packages"], cwd=dest, check=True)
        opts = [f"-oAPT::FTPArchive::Release::{k}={v}" for k, v in spec["release"].items()
                if k in ("Origin", "Label", "Suite")]
        release = subprocess.run(["apt-ftparchive", *opts, "release", "."], cwd=dest, capture_output=True, text=True,
                                 check=True).stdout
        extra = "".join(f"{k}: {v}\n" for k, v in spec["release"].items() if k not in ("Origin", "Label", "Suite"))
        (dest / "Release").write_text(extra + release)
        target = dest
    else:
        suite = spec["suite"]
        pool = dest / "pool" / "main"
        pool.mkdir(parents=True, exist_ok=True)
        for deb in debs:
            shutil.copy(deb, pool)
        bindir = dest / "dists" / suite / "main" / "binary-amd64"
        bindir.mkdir(parents=True, exist_ok=True)
        index = subprocess.run(["dpkg-scanpackages", "--multiversion", "pool"], cwd=dest, capture_output=True,
                               text=True, check=True).stdout
        (bindir / "Packages").write_text(index)
        subprocess.run(["gzip", "-9nkf", "Packages"], cwd=bindir, check=True)
        opts = [f"-oAPT::FTPArchive::Release::{k}={v}" for k, v in
                {**spec["release"], "Suite": suite, "Codename": suite, "Components": "main",
                 "Architectures": "amd64"}.items()]
        release = subprocess.run(["apt-ftparchive", *opts, "release", f"dists/{suite}"], cwd=dest, capture_output=True,
                                 text=True, check=True).stdout
        (dest / "dists" / suite / "Release").write_text(release)
        target = dest / "dists" / suite
    if not spec.get("trusted"):
        subprocess.run(["gpg", "--batch", "--yes", "--clearsign", "-o", "InRelease", "Release"], cwd=target, check=True)
        subprocess.run(["gpg", "--batch", "--yes", "-abs", "-o", "Release.gpg", "Release"], cwd=target, check=True)
    if spec.get("key_file"):
        key = subprocess.run(["gpg", "--batch", "--armor", "--export"], capture_output=True, text=True, check=True).stdout
        (dest / spec["key_file"]).write_text(key)
    print(f"  {spec['path']}: {len(debs)} stand-ins")
PY
mkdir -p "$REPO/amd/rocm"
gpg --batch --armor --export >"$REPO/amd/rocm/rocm.gpg.key"
cp "$HERE/aptrepo/README.standins" "$REPO/README" 2>/dev/null || true
chmod -R a+rX "$REPO"
echo "$key" >"$REPO/.key"
echo "apt repos built in $((SECONDS - t0))s: $(find "$REPO" -name '*.deb' | wc -l) stand-in packages in $REPO"
