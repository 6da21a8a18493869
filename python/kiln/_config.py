"""kiln.show_config(): what this build is and what LLVM sees of the machine."""

import os
import platform

from kiln import _C


def show_config(print_out: bool = True) -> str:
    """Returns (and by default prints) the build and host configuration."""
    host = _C._host_info()
    build = _C._build_info
    features = host["cpu_features"]
    simd = [f for f in features if f.startswith(("avx", "sse4", "fma", "neon", "sve", "amx"))]
    lines = [
        f"kiln {__import__('kiln').__version__}",
        f"  build: {build['build_type']}, {build['compiler']}, C++ {build['cxx_standard']}, pybind11 {build['pybind11']}",
        f"  LLVM: {host['llvm_version']} (target {host['target_triple']})",
        f"  host CPU (LLVM): {host['cpu_name']}, {os.cpu_count()} logical cores, {platform.machine()}",
        f"  CPU features: {len(features)} enabled; SIMD: {' '.join(simd) if simd else 'none'}",
        f"  CPU kernels: {_C._cpu_capability()} (KILN_CPU_CAPABILITY=default|avx2|avx512 caps it)",
        f"  memory caching: {'on' if _C._caching_enabled() else 'off (KILN_NO_MEMORY_CACHING)'}",
        "  CUDA: not available (no driver on this machine)",
    ]
    text = "\n".join(lines)
    if print_out:
        print(text)
    return text
