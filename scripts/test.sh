#!/usr/bin/env bash
# Sets up, builds and runs every test: the C++ suite (GoogleTest through ctest)
# and the Python suite (pytest, with torch as the oracle). This is the README's
# test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${KILN_BUILD_DIR:-build/release}
export KILN_BUILD_DIR=$BUILD_DIR

bash scripts/setup.sh
bash scripts/build.sh

echo "== C++ tests (ctest) =="
# --no-tests=error: a build that lost the C++ suite fails here instead of passing with none.
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j2

echo "== Python tests (pytest) =="
# -rs lists every skip and its reason; tests/python/conftest.py fails a skip whose reason is not allowed.
cd tests/python && ../../.venv/bin/python -m pytest -q -rs -p no:cacheprovider .
