#!/usr/bin/env bash
# `make sanity`: ansible-test sanity over the collection, one ansible-core release after the other, --local
# (no containers) and offline apart from the package index.
#   - the releases and the Python each venv runs on: tests/sanity/releases.txt (2.20 and newer need 3.12+);
#   - one venv per ansible-core release under $METALSERVE_CACHE/ansible-test/core-<version> (made once);
#   - ansible-test keeps its per-test venvs and caches under ~/.ansible/test; HOME points into the same
#     cache for it, so nothing lands in the user's ~/.ansible and `rm -rf $METALSERVE_CACHE` cleans all;
#   - ansible-test bootstraps pip into those venvs with a get-pip.py it downloads from a host outside the
#     package index: tests/sanity/get_pip.py stands in for it, with pip's wheel from the index;
#   - the Python versions tests/config.yml declares are found through pyenv when it is there (every
#     installed version's pythonX.Y is linked onto PATH), else whatever python3.X is on PATH (ansible-test
#     skips, with a warning, a version it cannot find);
#   - ansible-test must run from .../ansible_collections/metalserve/sglang: the checkout is linked there
#     (make link); the link is a symlink, which os.getcwd() resolves, so ANSIBLE_TEST_CONTENT_ROOT names it.
#   - every test runs on the newest release; the older ones skip pylint, which takes ~190 of ~240 s per
#     release on a 2-core machine and lints style with that release's pinned pylint; what can differ by
#     release (compile and import on each Python it supports, validate-modules and ansible-doc against its
#     doc schema, runtime-metadata, yamllint, the code-smell tests) runs on all of them.
#   - `units`: ansible-test units on the newest release (the unit tests run under pytest too: make unit).
# Usage: tests/sanity/run.sh [sanity|units] [ansible-test options, e.g. --test pep8; they replace the skips]
# Env: SANITY_CORES (ansible-core releases, oldest first; default: every release of releases.txt), SANITY_FULL
#      (releases that run every test, or "all"), SANITY_SKIP (tests the other releases skip), METALSERVE_CACHE.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${METALSERVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metalserve-sglang}/ansible-test
RELEASES=$ROOT/tests/sanity/releases.txt
CORES=${SANITY_CORES:-$(awk '!/^#/ && NF {printf "%s ", $1}' "$RELEASES")}
CORES=${CORES% }
FULL=${SANITY_FULL:-${CORES##* }}
SKIP=${SANITY_SKIP:-pylint}
LINK=$ROOT/.build/collections/ansible_collections/metalserve/sglang
LOGS=$ROOT/tests/output/sanity

[ -e "$LINK" ] || { echo "$LINK is missing: run make link" >&2; exit 1; }
mkdir -p "$CACHE" "$LOGS"
if ! command -v shellcheck >/dev/null; then
  # the shellcheck sanity test is skipped (a warning, not an error) when the tool is missing
  if [ "$(id -u)" = 0 ]; then
    echo "[sanity] apt-get install shellcheck"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends shellcheck; } \
      >"$CACHE/apt.log" 2>&1 || { tail -20 "$CACHE/apt.log" >&2; exit 1; }
  else
    echo "shellcheck is needed by the shellcheck sanity test: apt-get install shellcheck" >&2; exit 1
  fi
fi
if command -v pyenv >/dev/null; then
  # pyenv's shims answer only for the selected version, and ansible-test passes no PYENV_VERSION to what
  # it runs: link every installed version's pythonX.Y into one directory ahead on PATH
  mkdir -p "$CACHE/pythons"
  for py in "$(pyenv root)"/versions/*/bin/python*; do
    case ${py##*/} in python[23].[0-9] | python3.[0-9][0-9]) ln -sfn "$py" "$CACHE/pythons/${py##*/}" ;; esac
  done
  export PATH=$CACHE/pythons:$PATH
fi

# core_python CORE: the Python its venv runs on (releases.txt; PYTHON overrides it)
core_python() {
  local py
  py=${PYTHON:-$(awk -v core="$1" '$1 == core {print $2}' "$RELEASES")}
  [ -n "$py" ] || { echo "ansible-core $1 is not in ${RELEASES#"$ROOT"/}: add it with the Python its venv runs on" >&2; exit 2; }
  command -v "$py" >/dev/null || { echo "ansible-core $1 needs $py (${RELEASES#"$ROOT"/}); install it (pyenv install)" >&2; exit 2; }
  echo "$py"
}

# core_venv CORE: the venv of one ansible-core release (made once), and ansible-test's get-pip seeded for it
core_venv() {
  local core=$1 venv=$CACHE/core-$1 pip_version seed=$HOME_AT/.ansible/test/cache py
  py=$(core_python "$core")
  if [ ! -e "$venv/.complete" ]; then
    echo "[sanity] venv for ansible-core $core ($py)" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    { "$venv/bin/pip" install -q --upgrade pip && "$venv/bin/pip" install -q "ansible-core==$core"; } \
      >"$CACHE/core-$core.log" 2>&1 || { tail -30 "$CACHE/core-$core.log" >&2; exit 1; }
    touch "$venv/.complete"
  fi
  # the pip release ansible-test pins in its venvs, and the stand-in for its get-pip.py beside pip's wheel
  pip_version=$("$venv/bin/python" -c 'import sys, types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="%d.%d" % sys.version_info[:2]))["pip"])')
  mkdir -p "$seed"
  if [ ! -e "$seed/pip-$pip_version-py3-none-any.whl" ]; then
    "$venv/bin/pip" download -q --no-deps --only-binary :all: -d "$seed" "pip==$pip_version" >/dev/null
  fi
  cp "$ROOT/tests/sanity/get_pip.py" "$seed/get_pip_${pip_version//./_}.py"
  echo "$venv"
}

HOME_AT=$CACHE/home
mode=${1:-sanity}
[ $# -eq 0 ] || shift

if [ "$mode" = units ]; then
  # ansible-test units, newest release: pytest resolves the symlinked checkout to its real path, which ansible-test's
  # collection loader then refuses ("not found in collection path"), so the units run on a copy of the work tree
  core=${CORES##* }
  venv=$(core_venv "$core")
  copy=$CACHE/units/ansible_collections/metalserve/sglang
  rm -rf "$copy"; mkdir -p "$copy"
  (cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C "$copy")
  log=$LOGS/units-$core.log
  py=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  echo "== ansible-test units, ansible-core $core, Python $py -> ${log#"$ROOT"/}"
  start=$SECONDS rc=0
  (cd "$copy" && HOME=$HOME_AT "$venv/bin/ansible-test" units --local --requirements --python "$py" --color no "$@") \
    >"$log" 2>&1 || rc=$?
  grep -E '^(FAILED|ERROR|FATAL)|passed|failed' "$log" | tail -20 || true
  echo "ansible-core $core units: rc=$rc, $((SECONDS - start))s"
  exit "$rc"
fi
[ "$mode" = sanity ] || { echo "usage: $0 [sanity|units] [ansible-test options]" >&2; exit 2; }

failed=() summary=()
for core in $CORES; do
  venv=$(core_venv "$core")
  args=("$@")
  if [ ${#args[@]} -eq 0 ] && [ "$FULL" != all ] && ! grep -qwF -- "$core" <<<"$FULL"; then
    for t in $SKIP; do args+=(--skip-test "$t"); done
  fi
  log=$LOGS/$core.log
  echo "== ansible-test sanity, ansible-core $core ${args[*]:-(every test)} -> ${log#"$ROOT"/}"
  start=$SECONDS rc=0
  (cd "$LINK" && HOME=$HOME_AT ANSIBLE_TEST_CONTENT_ROOT=$LINK "$venv/bin/ansible-test" sanity --color no "${args[@]}") \
    >"$log" 2>&1 || rc=$?
  grep -E '^(ERROR|FATAL)' "$log" | head -60 || true
  took=$((SECONDS - start))
  summary+=("ansible-core $core: $(grep -c '^Running sanity test' "$log" || true) tests, \
$(grep -cE '^ERROR: [^ ]+:[0-9]+' "$log" || true) errors, rc=$rc, ${took}s")
  [ "$rc" = 0 ] || failed+=("$core")
done
printf '%s\n' "${summary[@]}"
[ ${#failed[@]} -eq 0 ] || { echo "sanity failed on ansible-core ${failed[*]} (logs: ${LOGS#"$ROOT"/}/)" >&2; exit 1; }
