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
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2

echo "== Python tests (pytest) =="
cd tests/python && ../../.venv/bin/python -m pytest -q -p no:cacheprovider .
