#!/usr/bin/env bash
# The GPU run (issue 25 item 6), in one call on a machine with an NVIDIA GPU, in under 8 minutes:
#   1. the CUDA test suite: tests/python/cuda (devices, streams, events, the caching allocator and
#      its several-stream stress, copies, every eager CUDA op against the CPU result), kiln.compile
#      on CUDA tensors against eager (compiler/test_cuda_compiled.py: fused kernels from
#      codegen/cuda) with the generated kernels' checks (compiler/test_cuda_codegen.py,
#      compiler/test_cuda_target.py), and the kernel-source compile check
#      (ptxas -O0, as in CI: the device JIT-compiles every kernel it runs at full optimisation
#      anyway); at most 300 s;
#   2. the CUDA benchmarks (tests/gpu/cuda_bench.py: copy bandwidth, allocation from the cache,
#      pointwise chains as a fraction of the copy bandwidth, softmax, layer_norm, matmul against
#      cuBLAS called directly, MLP and GPT-block training steps, torch on the same GPU when it
#      is installed there); at most 150 s.
# Expects this checkout built (scripts/build.sh) with its .venv (the NVRTC and cuBLAS wheels).
# Writes $OUT/gpu_run.json (build/gpu_run.json without OUT): the test counts, the benchmark
# figures and the device. Exit status: pytest's (the benchmarks record their errors instead).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PYTHON=${PYTHON:-.venv/bin/python}
RESULTS=${OUT:-build}
mkdir -p "$RESULTS" build
SUMMARY=$RESULTS/gpu_run.json
QUICK=${KILN_GPU_QUICK:+--quick}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
"$PYTHON" - <<'PY'
import kiln
print("kiln.cuda.is_available():", kiln.cuda.is_available(), "devices:", kiln.cuda.device_count())
if kiln.cuda.is_available():
    print("device 0:", kiln.cuda.get_device_properties(0))
else:
    print("reason:", kiln._C._cuda_unavailable_reason())
PY

(cd tests/python && timeout 300 "$ROOT/$PYTHON" -m pytest -q -p no:cacheprovider -rs cuda \
  compiler/test_cuda_compiled.py compiler/test_cuda_codegen.py compiler/test_cuda_target.py distributed/test_nccl_device.py \
  --junitxml="$ROOT/build/gpu_run_junit.xml" 2>&1 | tail -40)
status=${PIPESTATUS[0]}

timeout 150 "$PYTHON" tests/gpu/cuda_bench.py $QUICK --out build/gpu_bench.json 2>&1 | tail -20

"$PYTHON" - "$SUMMARY" "$status" <<'PY'
import json, os, sys, xml.etree.ElementTree as ET
import kiln
path, status = sys.argv[1], int(sys.argv[2])
summary = {"status": status, "cuda_available": kiln.cuda.is_available(), "devices": kiln.cuda.device_count()}
if os.path.exists("build/gpu_run_junit.xml"):
    suite = ET.parse("build/gpu_run_junit.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    summary["tests"] = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    summary["failed"] = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
                         if c.find("failure") is not None or c.find("error") is not None][:50]
if kiln.cuda.is_available():
    summary["device"] = kiln.cuda.get_device_name(0)
if os.path.exists("build/gpu_bench.json"):
    summary["benchmarks"] = json.load(open("build/gpu_bench.json"))
json.dump(summary, open(path, "w"), indent=2)
print(json.dumps({k: v for k, v in summary.items() if k != "benchmarks"}))
PY
exit "$status"
