#!/usr/bin/env bash
# Builds Gloo's own benchmark (gloo/benchmark: main.cc, runner.cc, options.cc) against the Gloo kiln
# links (Debian's libgloo-dev headers and libgloo.so), for bench/distributed_allreduce_vs_gloo.py.
# Debian ships neither the binary nor, here, a source package, so the sources come from Gloo's
# repository at the commit Debian's 0.0~git20220518.5b14351 packages: pass a clone of
# https://github.com/pytorch/gloo as GLOO_SOURCE (its gloo/benchmark at that commit is taken with
# git archive). Writes build/gloo_benchmark. Compiling takes ~30 s of CPU.
#   GLOO_SOURCE=/path/to/gloo bash bench/gloo_benchmark/build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${GLOO_SOURCE:?set GLOO_SOURCE to a clone of https://github.com/pytorch/gloo}"
COMMIT=${GLOO_COMMIT:-5b14351}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$GLOO_SOURCE" archive "$COMMIT" gloo/benchmark | tar -x -C "$work"
mkdir -p build
# Debian's libgloo is built with Redis rendezvous and ibverbs: its headers include hiredis's.
${CXX:-g++} -std=c++17 -O2 -I"$work" -I/usr/include/hiredis \
  "$work"/gloo/benchmark/main.cc "$work"/gloo/benchmark/runner.cc "$work"/gloo/benchmark/options.cc \
  -o build/gloo_benchmark -lgloo -lhiredis -libverbs -lpthread
echo "gloo_benchmark: build/gloo_benchmark (Gloo's benchmark at $COMMIT, Debian's libgloo)"
