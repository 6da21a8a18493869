#!/usr/bin/env bash
# Builds kiln under sanitizers, each in its own build directory (CMakePresets.json;
# ccache shared with the release build), and runs tests under them.
#
#   bash scripts/sanitize.sh [asan [--ci] | preload [--ci] | focused | tsan]
#
# asan (default): AddressSanitizer + UndefinedBehaviorSanitizer in build/asan (a
#   second full build of kiln at -O1: about 300 objects, roughly 10 s of CPU each
#   cold, so well over an hour of wall time on a busy two-core machine).
#   Runs every GoogleTest, replays every fuzz corpus and fuzzes each target for a
#   few seconds (scripts/fuzz.sh), then a slice of pytest with kiln._C loaded into
#   an unsanitized CPython (LD_PRELOAD of GCC's libasan; leak checking off for
#   Python, whose interpreter leaks by design). --ci runs the smaller slice
#   CI uses; without it, the fuller slice below.
# preload: no new build: the release build (build/release) with GCC's ASan runtime
#   preloaded and the caching allocator off (KILN_NO_MEMORY_CACHING=1, so every
#   tensor is its own malloc block with redzones). Only the runtime's interceptors
#   check (malloc/free, memcpy/memset and friends: heap overflows through them,
#   double and invalid frees), not every load and store; CI runs it (--ci slice)
#   because it costs test time only.
# focused: no kiln build: the few parts of kiln whose sources stand alone (a few
#   eager/core files are all they link against), each compiled straight from its sources into
#   build/focused (about a minute of CPU in all), and run: the caching allocator's
#   tests under ASan + UBSan (its poisoning death test included) and under TSan,
#   and the schema parser's fuzz target under ASan + UBSan; with clang-19, the schema parser's and the
#   kernel-cache entry reader's targets under libFuzzer's coverage-guided engine (-fsanitize=fuzzer, with
#   ASan + UBSan) for KILN_FUZZ_SECONDS (5) each. CI runs it. (Not the
#   thread pool: over Debian's uninstrumented oneTBB, TSan reports races on every run.)
# tsan: ThreadSanitizer for all of kiln (the "tsan" preset, build/tsan: a second
#   full build): the autograd engine's, the caching allocator's and the thread
#   pool's GoogleTests.
#
# The caching allocator poisons its cached blocks under ASan (Note [Cached blocks
# are poisoned], eager/memory/CachingAllocator.cpp), so overflows inside a cached
# segment are reported with caching on. Suppressions (third-party code only, each
# with its reason) are in scripts/sanitizers/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
mode=asan
slice=full
for arg in "$@"; do
  case $arg in
    asan|tsan|preload|focused) mode=$arg ;;
    --ci) slice=ci ;;
    *) echo "usage: scripts/sanitize.sh [asan [--ci] | preload [--ci] | focused | tsan]" >&2; exit 2 ;;
  esac
done
PYTHON=.venv/bin/python  # created by scripts/setup.sh; cmake and ninja come with it
export PATH="$ROOT/.venv/bin:$PATH"
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
BUILD_DIR=build/$mode
SUPPRESSIONS=$ROOT/scripts/sanitizers

start=$(date +%s)
# halt_on_error: the first race fails the run; second_deadlock_stack: both stacks of a lock-order report.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPPRESSIONS/tsan.supp"
if [ "$mode" = focused ]; then
  mkdir -p "$BUILD_DIR" fuzz/artifacts
  COMMON=(-std=c++20 -O1 -g1 -fno-omit-frame-pointer -I. -pthread)
  ASAN=(-fsanitize=address,undefined)
  TSAN=(-fsanitize=thread)
  ALLOCATOR=(eager/memory/CachingAllocator.cpp eager/memory/CpuAllocator.cpp eager/core/Error.cpp
             eager/core/Device.cpp eager/core/ProfilerEvents.cpp tests/cpp/test_caching_allocator.cpp)
  g++ "${COMMON[@]}" "${ASAN[@]}" "${ALLOCATOR[@]}" -lgtest -lgtest_main -o "$BUILD_DIR/caching_allocator_asan_tests"
  g++ "${COMMON[@]}" "${TSAN[@]}" "${ALLOCATOR[@]}" -lgtest -lgtest_main -o "$BUILD_DIR/caching_allocator_tsan_tests"
  # Not the thread pool (eager/kernels/Parallel.cpp): Debian's libtbb.so is not built with TSan, so the ordering
  # its atomics give (a task submitted, then run on a worker) is invisible and every run reports races on the
  # caller's stack objects that TBB hands to its workers. It needs a TSan build of oneTBB; until then TSan covers
  # the allocator here and kiln's own threads in `sanitize.sh tsan`.
  g++ "${COMMON[@]}" "${ASAN[@]}" eager/dispatch/FunctionSchema.cpp eager/core/Error.cpp \
    fuzz/targets/fuzz_function_schema.cpp fuzz/driver/FuzzDriver.cpp -o "$BUILD_DIR/kiln_fuzz_function_schema"
  echo "sanitize: focused binaries built in $(( $(date +%s) - start )) s"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPPRESSIONS/ubsan.supp"
  export ASAN_OPTIONS="detect_leaks=1" LSAN_OPTIONS="suppressions=$SUPPRESSIONS/lsan.supp"
  "$BUILD_DIR/caching_allocator_asan_tests" --gtest_brief=1
  "$BUILD_DIR/caching_allocator_tsan_tests" --gtest_brief=1
  "$BUILD_DIR/kiln_fuzz_function_schema" -max_total_time="${KILN_FUZZ_SECONDS:-5}" -seed="${KILN_FUZZ_SEED:-$(date +%Y%m%d)}" \
    -dict=fuzz/dictionaries/function_schema.dict -artifact_prefix=fuzz/artifacts/function_schema- \
    fuzz/corpus/function_schema
  # libFuzzer's coverage-guided engine (clang's -fsanitize=fuzzer; scripts/setup.sh installs clang-19) on the
  # targets that build from a few sources: the schema parser and the kernel-cache entry reader. New inputs go to
  # a scratch corpus under build/focused; a crash leaves its input in fuzz/artifacts/.
  if command -v clang++-19 >/dev/null; then
    LIBFUZZER=(clang++-19 "${COMMON[@]}" -fsanitize=fuzzer,address,undefined)
    LLVM_INCLUDE=$(llvm-config-19 --includedir) LLVM_LIB=$(llvm-config-19 --libdir)
    "${LIBFUZZER[@]}" eager/dispatch/FunctionSchema.cpp eager/core/Error.cpp fuzz/targets/fuzz_function_schema.cpp \
      -o "$BUILD_DIR/kiln_libfuzzer_function_schema"
    "${LIBFUZZER[@]}" -isystem "$LLVM_INCLUDE" codegen/llvm/KernelCache.cpp codegen/llvm/KernelCachePrune.cpp \
      eager/core/Error.cpp fuzz/targets/fuzz_kernel_cache_entry.cpp -o "$BUILD_DIR/kiln_libfuzzer_kernel_cache_entry" \
      -L"$LLVM_LIB" -lLLVM-19 -Wl,-rpath,"$LLVM_LIB"
    for name in function_schema kernel_cache_entry; do
      mkdir -p "$BUILD_DIR/$name-corpus"
      "$BUILD_DIR/kiln_libfuzzer_$name" -max_total_time="${KILN_FUZZ_SECONDS:-5}" \
        -seed="${KILN_FUZZ_SEED:-$(date +%Y%m%d)}" -dict="fuzz/dictionaries/$name.dict" \
        -artifact_prefix="fuzz/artifacts/$name-" "$BUILD_DIR/$name-corpus" "fuzz/corpus/$name" 2>"fuzz/artifacts/$name.libfuzzer.log" \
        || { tail -40 "fuzz/artifacts/$name.libfuzzer.log"; exit 1; }
      echo "sanitize: libFuzzer $name: $(tail -1 "fuzz/artifacts/$name.libfuzzer.log")"
    done
  else
    echo "sanitize: no clang++-19 (scripts/setup.sh installs it): libFuzzer's coverage-guided runs skipped"
  fi
  echo "sanitize: focused clean (caching allocator: ASan+UBSan, TSan; schema parser fuzzing: ASan+UBSan;" \
       "libFuzzer on the schema parser and the kernel-cache entry reader)"
  exit 0
fi
# CPython does not link libstdc++: preloaded after libasan, so ASan's __cxa_throw interceptor
# finds the real one (otherwise the first C++ exception aborts with "real___cxa_throw != 0").
ASAN_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)"
if [ "$mode" = preload ]; then
  BUILD_DIR=${KILN_BUILD_DIR:-build/release}
  # malloc_fill: fresh memory reads as 0xbe bytes up to 1 MiB per block (default 4 KiB), so an output a
  # kernel forgets to write shows as garbage instead of a lucky zero.
  export KILN_NO_MEMORY_CACHING=1 ASAN_OPTIONS="detect_leaks=0:malloc_fill_byte=190:max_malloc_fill_size=1048576"
  echo "== sanitize (preload): GoogleTest =="
  LD_PRELOAD="$ASAN_PRELOAD" "$BUILD_DIR/kiln_cpp_tests" --gtest_brief=1
  echo "== sanitize (preload): fuzz targets =="
  LD_PRELOAD="$ASAN_PRELOAD" KILN_FUZZ_BUILD_DIR=$BUILD_DIR KILN_FUZZ_SECONDS=${KILN_FUZZ_SECONDS:-3} bash scripts/fuzz.sh
  echo "== sanitize (preload): pytest slice =="
  if [ "$slice" = ci ]; then
    PYTEST_FILES=(tensor/test_copy_strided.py indexing/test_indexing.py autograd/test_autograd_engine.py
                  runtime/test_allocation_faults.py interop/test_checkpoint_safety.py)
  else
    PYTEST_FILES=(tensor indexing shape autograd reduction runtime interop nn/test_layers.py compiler/test_compile.py)
  fi
  (cd tests/python && LD_PRELOAD="$ASAN_PRELOAD" "../../$PYTHON" -m pytest -q -x -p no:cacheprovider "${PYTEST_FILES[@]}")
  echo "sanitize: preload clean ($(( $(date +%s) - start )) s)"
  exit 0
fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake --preset "$mode" -DPython_EXECUTABLE="$ROOT/$PYTHON" >/dev/null
fi
if [ "$mode" = tsan ]; then
  targets=(kiln_cpp_tests)
else
  targets=(kiln_cpp_tests _C kiln_fuzz_function_schema kiln_fuzz_ir_parser kiln_fuzz_tensor_geometry)
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${targets[@]}" | grep -E "error|warning: .*sanitiz|FAILED" || true
test -x "$BUILD_DIR/kiln_cpp_tests" || { echo "sanitize: build failed" >&2; exit 1; }
echo "sanitize: $mode build ready in $(( $(date +%s) - start )) s"

if [ "$mode" = tsan ]; then
  "$BUILD_DIR/kiln_cpp_tests" --gtest_brief=1 --gtest_filter='AutogradEngine*:CachingAllocator*:*ThreadCount*:Parallel*'
  echo "sanitize: tsan clean (autograd engine, caching allocator, thread pool)"
  exit 0
fi

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$SUPPRESSIONS/ubsan.supp"
export ASAN_OPTIONS="detect_leaks=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$SUPPRESSIONS/lsan.supp:print_suppressions=0"

echo "== sanitize: GoogleTest under ASan + UBSan =="
"$BUILD_DIR/kiln_cpp_tests" --gtest_brief=1

echo "== sanitize: fuzz corpora and bounded fuzzing under ASan + UBSan =="
KILN_FUZZ_BUILD_DIR=$BUILD_DIR bash scripts/fuzz.sh

echo "== sanitize: pytest slice under ASan + UBSan =="
# An import tree of this checkout's Python sources with the ASan kiln._C beside them
# (rebuilt each run, so new modules are picked up), run by the base interpreter so
# the editable release install in .venv is not on the path.
SITE=$BUILD_DIR/site
rm -rf "$SITE" && mkdir -p "$SITE/kiln"
for entry in python/kiln/*; do
  case $(basename "$entry") in __pycache__|*.so) continue ;; esac
  ln -s "$ROOT/$entry" "$SITE/kiln/"
done
ln -s "$ROOT/$BUILD_DIR"/_C.*.so "$ROOT/$BUILD_DIR/libkiln_core.so" "$SITE/kiln/"
BASE_PYTHON=$("$PYTHON" -c 'import sys; print(sys._base_executable)')
if [ "$slice" = ci ]; then
  PYTEST_FILES=(tensor/test_copy_strided.py indexing/test_indexing.py autograd/test_autograd_engine.py
                runtime/test_allocation_faults.py runtime/test_memory.py interop/test_checkpoint_safety.py)
else
  PYTEST_FILES=(tensor indexing shape autograd reduction runtime interop nn/test_layers.py nn/test_nn_norm.py
                nn/test_nn_conv_pool.py compiler/test_compile.py compiler/test_fusion.py)
fi
existing=()
for f in "${PYTEST_FILES[@]}"; do [ -e "tests/python/$f" ] && existing+=("$f"); done
(
  cd tests/python
  # detect_leaks=0: CPython and torch keep interpreter-lifetime allocations that LSan reports.
  LD_PRELOAD="$ASAN_PRELOAD" \
  ASAN_OPTIONS="detect_leaks=0:detect_stack_use_after_return=0" \
  PYTHONPATH="$ROOT/$SITE" KILN_SANITIZED_BUILD=1 \
    "$BASE_PYTHON" -m pytest -q -x -p no:cacheprovider "${existing[@]}"
)
echo "sanitize: asan clean ($(( $(date +%s) - start )) s in all)"
