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

# The gate is reproducible: hypothesis draws the same examples every run (tests/python/conftest.py's
# "gate" profile) and the sanitizer runs' fuzzers mutate from a fixed seed (passed to sanitize.sh alone:
# in pytest, KILN_FUZZ_SEED=N narrows the compile fuzzer to program N). By hand, both explore.
export KILN_HYPOTHESIS_PROFILE=${KILN_HYPOTHESIS_PROFILE:-gate}
FUZZ_SEED=${KILN_FUZZ_SEED:-1}

echo "== C++ tests (ctest) =="
# --no-tests=error: a build that lost the C++ suite fails here instead of passing with none.
ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j2

echo "== ASan's runtime preloaded into the release build: GoogleTest, fuzzing, a pytest slice =="
# ctest above replayed the fuzz corpora; this also mutates them (and kiln.load's) for
# KILN_FUZZ_SECONDS (3) each (fuzz/README.md), all with ASan's interceptors watching.
KILN_FUZZ_SEED=$FUZZ_SEED bash scripts/sanitize.sh preload --ci

echo "== ASan + UBSan and TSan on the parts of kiln that build alone (caching allocator, schema parser) =="
KILN_FUZZ_SEED=$FUZZ_SEED bash scripts/sanitize.sh focused

if [ "${KILN_SANITIZE_CI:-0}" = "1" ]; then
  # Off by default: each is a second full build of kiln, over an hour cold on two cores (scripts/sanitize.sh).
  echo "== Sanitizers: ASan + UBSan build of all of kiln, GoogleTest, fuzzing and a pytest slice; TSan build =="
  KILN_FUZZ_SEED=$FUZZ_SEED bash scripts/sanitize.sh asan --ci
  bash scripts/sanitize.sh tsan
fi

echo "== Python tests (pytest) =="
# -rs lists every skip and its reason; tests/python/conftest.py fails a skip whose reason is not allowed.
cd tests/python && ../../.venv/bin/python -m pytest -q -rs -p no:cacheprovider .
