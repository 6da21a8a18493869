#!/usr/bin/env bash
# Installs everything kiln needs on a fresh Debian machine: the Debian packages
# the C++ build links against and the Python packages the build, the tests and
# the benchmarks use. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}

APT_PACKAGES=(
  llvm-19-dev                 # the JIT backend (find_package(LLVM) in CMakeLists.txt)
  zlib1g-dev libzstd-dev libxml2-dev libedit-dev libffi-dev  # what LLVMConfig.cmake looks for
  libgtest-dev                # the C++ test suite
  libbenchmark-dev            # the C++ microbenchmarks
  libdlpack-dev               # the DLPack ABI header
  libtbb-dev                  # intra-op thread pool (oneTBB)
  libsleef-dev                # vector math (exp, log, tanh, erf, ...)
  libeigen3-dev               # float tanh at AVX-512 (header-only; chosen by measurement, eager/kernels/README.md)
  libopenblas-dev             # BLAS for float64 matrix products
  libdnnl-dev                 # oneDNN: float32 matrix products and conv2d (Note [float32 GEMM on oneDNN])
  libfftw3-dev                # kiln.fft (Note [FFTs on FFTW])
  libgloo-dev                 # kiln.distributed's CPU collectives (eager/distributed/README.md)
  ccache                      # fast rebuilds, including CI's fresh clones
  clang-19 libclang-rt-19-dev # libFuzzer (-fsanitize=fuzzer) for scripts/sanitize.sh focused (fuzz/README.md)
)
PIP_PACKAGES=(
  "numpy>=1.24" pytest hypothesis pyyaml tqdm safetensors
  matplotlib                  # python -m kiln.bench's plots (Agg backend; imported only there, never by kiln itself)
  expecttest                  # torch.testing._internal (the OpInfo database, tests/python/opinfo) imports it
  "onnx==1.23.2" "onnxruntime==1.32.0"  # kiln.onnx.export writes ONNX; tests/python/interop/test_onnx_* run it
  "scikit-build-core>=0.10" "pybind11>=3.0" ninja "cmake>=3.26"
  "torch==2.13.0"             # CPU build from this machine's disk; the tests' oracle, never imported by kiln
)
# NVRTC and cuBLAS for kiln.cuda and NCCL for kiln.distributed, installed into .venv only (loaded with dlopen at first use,
# never linked: DESIGN.md decision 6, eager/cuda/README.md). NVRTC is pinned to the toolkit's
# 13.0 series: a newer NVRTC writes PTX the CUDA 13.0 ptxas refuses, and its builtins library's
# soname (libnvrtc-builtins.so.13.0) is the one eager/cuda/Nvrtc.cpp preloads.
CUDA_PIP_PACKAGES=(
  "nvidia-cuda-nvrtc==13.0.*"
  "nvidia-cublas==13.0.*"
  "nvidia-nccl-cu13==2.*"     # libnccl.so.2 for backend="nccl" (eager/distributed/NcclLibrary; 205 MB, ~30 s)
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Ask pip only when an import or a version is missing: a no-op pip run costs seconds.
if ! "$PYTHON" - <<'PY' 2>/dev/null
import importlib.metadata as md
need = {"numpy": None, "pytest": None, "hypothesis": None, "PyYAML": None, "tqdm": None, "safetensors": None,
        "expecttest": None, "matplotlib": None, "onnx": "1.23.2", "onnxruntime": "1.32.0",
        "scikit_build_core": None, "pybind11": "3", "ninja": None, "cmake": None, "torch": "2.13.0"}
for name, prefix in need.items():
    version = md.version(name)
    assert prefix is None or version.startswith(prefix), (name, version)
PY
then
  echo "setup: installing Python packages"
  "$PYTHON" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
fi
# kiln itself is installed (editable) into a virtual environment inside the
# checkout, which sees the packages above through --system-site-packages. Each
# checkout (a CI clone, a second work tree) thus imports its own build.
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv --system-site-packages .venv
fi
if ! .venv/bin/python - <<'PY' 2>/dev/null
import importlib.metadata as md
assert md.version("nvidia-cuda-nvrtc").startswith("13.0."), md.version("nvidia-cuda-nvrtc")
assert md.version("nvidia-cublas").startswith("13.0."), md.version("nvidia-cublas")
assert md.version("nvidia-nccl-cu13").startswith("2."), md.version("nvidia-nccl-cu13")
PY
then
  echo "setup: installing NVRTC, cuBLAS and NCCL into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check "${CUDA_PIP_PACKAGES[@]}"
fi
echo "setup: done"
