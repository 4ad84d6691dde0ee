#!/usr/bin/env bash
# Build (once) a venv that holds one SGLang release's real `sglang serve` parser (SGLANG_VERSION, default
# 0.5.23) and sglang-router 0.3.2, without the GPU stack: sglang --no-deps plus the imports the parser needs
# (requirements/sglang-parser-<version>.txt when the release needs its own list, else
# requirements/sglang-parser.txt). Cached under $METALSERVE_CACHE (default ~/.cache/metalserve-sglang), keyed
# by the release and its requirements file. Prints the venv's python. For 0.5.23 about 60-70 s and 2.1 GB the
# first time (0.5.13.post1: several minutes and 5 GB); instant afterwards.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SGLANG_VERSION=${SGLANG_VERSION:-0.5.23}
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}
REQ="$ROOT/requirements/sglang-parser-$SGLANG_VERSION.txt"
[ -e "$REQ" ] || REQ="$ROOT/requirements/sglang-parser.txt"
KEY=$( { echo "$SGLANG_VERSION"; cat "$REQ"; } | sha256sum | cut -c1-12)
VENV="$CACHE/sglang-parser-$SGLANG_VERSION-$KEY"
if [ ! -e "$VENV/.complete" ]; then
  rm -rf "$VENV"; mkdir -p "$CACHE"
  python3 -m venv "$VENV"
  {
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q --no-deps "sglang==$SGLANG_VERSION"
    "$VENV/bin/pip" install -q -r "$REQ"
  } >"$CACHE/sglang-parser-$SGLANG_VERSION.log" 2>&1 || { tail -30 "$CACHE/sglang-parser-$SGLANG_VERSION.log" >&2; exit 1; }
  "$VENV/bin/python" -c "import sglang.srt.server_args, sglang_router" >/dev/null
  touch "$VENV/.complete"
  # keep one venv per SGLang version
  find "$CACHE" -maxdepth 1 -name "sglang-parser-$SGLANG_VERSION-*" ! -path "$VENV" -exec rm -rf {} +
fi
echo "$VENV/bin/python"
