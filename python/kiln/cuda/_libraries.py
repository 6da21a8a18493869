"""Where kiln finds the CUDA user-space libraries: the NVIDIA wheels' lib folders.

NVRTC and cuBLAS come from PyPI (``nvidia-cuda-nvrtc``, ``nvidia-cublas``; scripts/setup.sh
installs them into .venv) and are loaded with dlopen at first use (DESIGN.md, decision 6).
The wheels put them in ``site-packages/nvidia/cu13/lib`` (13.x) or per-package folders
(``nvidia/cuda_nvrtc/lib``, ``nvidia/cublas/lib``, 12.x); this module hands every such folder
that exists to the C++ loader, which tries them before the dynamic linker's own search.
Nothing is loaded here.
"""

from __future__ import annotations

import importlib.util
import os

from kiln import _C

_WHEEL_LIB_FOLDERS = ("cu13/lib", "cuda_nvrtc/lib", "cublas/lib")


def nvidia_wheel_lib_dirs() -> list[str]:
    """The lib folders of the installed NVIDIA wheels, in search order."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    found = []
    for root in spec.submodule_search_locations:
        for sub in _WHEEL_LIB_FOLDERS:
            path = os.path.join(root, sub)
            if os.path.isdir(path) and path not in found:
                found.append(path)
    return found


def register_library_dirs() -> None:
    for path in nvidia_wheel_lib_dirs():
        _C._cuda_add_library_dir(path)
