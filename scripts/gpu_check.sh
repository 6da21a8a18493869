#!/usr/bin/env bash
# The GPU check, in one call on a machine with an NVIDIA GPU (DESIGN.md, decision 6): the
# CUDA test folder (devices, streams, events, the caching allocator, copies and every eager
# CUDA op against the CPU result) plus the kernel-source compile check at ptxas's full
# optimisation, and kiln.compile on CUDA tensors against eager (compiler/test_cuda_compiled.py:
# fused CUDA kernels from codegen/cuda) with the generated kernels' compile check
# (compiler/test_cuda_codegen.py, compiler/test_cuda_target.py). Expects this checkout built (scripts/build.sh) with its .venv (the NVRTC and
# cuBLAS wheels). Writes a JSON summary to $OUT/gpu_check.json when OUT is set, else to
# build/gpu_check.json. Exit status: pytest's.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
SUMMARY=${OUT:-build}/gpu_check.json
mkdir -p "$(dirname "$SUMMARY")"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4
"$PYTHON" - <<'PY'
import kiln
print("kiln.cuda.is_available():", kiln.cuda.is_available(), "devices:", kiln.cuda.device_count())
if kiln.cuda.is_available():
    print("device 0:", kiln.cuda.get_device_properties(0))
else:
    print("reason:", kiln._C._cuda_unavailable_reason())
PY

cd tests/python
KILN_LONG_TESTS=1 timeout 420 "../../$PYTHON" -m pytest -q -p no:cacheprovider -rs cuda \
  compiler/test_cuda_compiled.py compiler/test_cuda_codegen.py compiler/test_cuda_target.py \
  --junitxml="$OLDPWD/build/gpu_check_junit.xml" 2>&1 | tail -40
status=${PIPESTATUS[0]}
cd "$OLDPWD"

"$PYTHON" - "$SUMMARY" "$status" <<'PY'
import json, sys, xml.etree.ElementTree as ET
import kiln
path, status = sys.argv[1], int(sys.argv[2])
suite = ET.parse("build/gpu_check_junit.xml").getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
summary = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
summary.update(status=status, cuda_available=kiln.cuda.is_available(), devices=kiln.cuda.device_count())
if kiln.cuda.is_available():
    summary["device"] = kiln.cuda.get_device_name(0)
json.dump(summary, open(path, "w"), indent=2)
print(json.dumps(summary))
PY
exit "$status"
