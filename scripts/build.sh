#!/usr/bin/env bash
# Builds kiln (C++ core, kiln._C, C++ tests and benchmarks) and installs it in
# editable mode into this checkout's .venv, so `.venv/bin/python -c "import kiln"`
# picks up this checkout. The C++ tests are on (KILN_BUILD_TESTS): a missing
# GoogleTest fails the configure step. Incremental: the CMake
# build directory (build/release) and ccache survive between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=.venv/bin/python  # created by scripts/setup.sh
BUILD_DIR=${KILN_BUILD_DIR:-build/release}
# ccache hits across checkouts (CI clones, work trees): hash paths relative to here.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

log=$(mktemp)
if ! "$PYTHON" -m pip install --no-build-isolation --no-deps --disable-pip-version-check -e . \
     -Cbuild-dir="$BUILD_DIR" -Ccmake.define.KILN_BUILD_TESTS=ON >"$log" 2>&1; then
  cat "$log"
  echo "build: FAILED (full log above)" >&2
  exit 1
fi
grep -E "warning:" "$log" | sort -u | head -20 || true
rm -f "$log"
echo "build: kiln built in $BUILD_DIR and installed (editable)"
