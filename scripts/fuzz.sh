#!/usr/bin/env bash
# Runs every fuzz target (fuzz/README.md) for a bounded time: each C++ target
# (build/<dir>/kiln_fuzz_*) replays its corpus and then mutates it, and each
# Python target (fuzz/python/fuzz_*.py) does the same.
#
#   KILN_FUZZ_SECONDS=5 bash scripts/fuzz.sh        # seconds per target (default 5)
#   KILN_LONG_TESTS=1 bash scripts/fuzz.sh          # 300 s per target
#   KILN_FUZZ_BUILD_DIR=build/asan ...              # the targets of a sanitizer build
#   KILN_FUZZ_PYTHON="python ..." ...               # the interpreter (prefix) for Python targets
#   KILN_FUZZ_SEED=N                                # vary the mutations (default: the date, so CI explores)
#
# A finding leaves its input in fuzz/artifacts/ (ignored by git) and fails the
# run; fuzz/README.md says how it becomes a corpus entry and a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${KILN_FUZZ_BUILD_DIR:-build/release}
SECONDS_PER_TARGET=${KILN_FUZZ_SECONDS:-5}
[ "${KILN_LONG_TESTS:-0}" = "1" ] && SECONDS_PER_TARGET=${KILN_FUZZ_SECONDS:-300}
SEED=${KILN_FUZZ_SEED:-$(date +%Y%m%d)}
PYTHON=${KILN_FUZZ_PYTHON:-.venv/bin/python}
ARTIFACTS=fuzz/artifacts
mkdir -p "$ARTIFACTS"

found=0
for binary in "$BUILD_DIR"/kiln_fuzz_*; do
  [ -x "$binary" ] || continue
  name=${binary##*/kiln_fuzz_}
  dict=()
  [ -f "fuzz/dictionaries/$name.dict" ] && dict=("-dict=fuzz/dictionaries/$name.dict")
  if "$binary" -max_total_time="$SECONDS_PER_TARGET" -seed="$SEED" "${dict[@]}" \
       -artifact_prefix="$ARTIFACTS/$name-" "fuzz/corpus/$name" 2>"$ARTIFACTS/$name.log"; then
    echo "fuzz: $name: $(tail -1 "$ARTIFACTS/$name.log")"
  else
    echo "fuzz: $name: FINDING (log: $ARTIFACTS/$name.log)"; tail -30 "$ARTIFACTS/$name.log"; found=1
  fi
done
for target in fuzz/python/fuzz_*.py; do
  name=$(basename "$target" .py)
  name=${name#fuzz_}
  # shellcheck disable=SC2086  # KILN_FUZZ_PYTHON may be a command with its environment
  if $PYTHON "$target" --seconds "$SECONDS_PER_TARGET" --seed "$SEED" --artifact "$ARTIFACTS" \
       "fuzz/corpus/$name" >"$ARTIFACTS/$name.log" 2>&1; then
    echo "fuzz: $name: $(tail -1 "$ARTIFACTS/$name.log")"
  else
    echo "fuzz: $name: FINDING (log: $ARTIFACTS/$name.log)"; tail -30 "$ARTIFACTS/$name.log"; found=1
  fi
done
exit $found
