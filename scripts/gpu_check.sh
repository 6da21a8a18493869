#!/usr/bin/env bash
# Kept for old references: the GPU check is tests/gpu/run.sh (the CUDA suite and the CUDA
# benchmarks, one JSON summary). Arguments and environment pass through.
exec "$(dirname "$0")/../tests/gpu/run.sh" "$@"
