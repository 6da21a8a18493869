"""NCCL, the GPU backend, found at first use: libnccl.so.2 is loaded with dlopen by the C++ side
(eager/distributed/NcclLibrary, never linked), from $KILN_NCCL_LIBRARY, the NVIDIA wheels'
lib folders (``nvidia-nccl-cu13``/``-cu12`` put it in ``site-packages/nvidia/nccl/lib``), or the
dynamic linker's search. Nothing is loaded when kiln.distributed is imported."""

from __future__ import annotations

import importlib.util
import os

from kiln import _C
from kiln._C import _distributed

__all__ = ["nccl_missing", "nccl_version"]

_WHEEL_LIB_FOLDERS = ("nccl/lib", "cu13/lib", "cu12/lib")
_registered = False


def _register_wheel_folders() -> None:
    global _registered
    if _registered:
        return
    _registered = True
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        for sub in _WHEEL_LIB_FOLDERS:
            path = os.path.join(root, sub)
            if os.path.isfile(os.path.join(path, "libnccl.so.2")):
                _C._cuda_add_library_dir(path)


def nccl_missing() -> str | None:
    """None when NCCL loads; else the loader's message (every path tried, and how to install it)."""
    _register_wheel_folders()
    ok, why = _distributed._nccl_loadable()
    return None if ok else why


def nccl_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the NCCL that loads (RuntimeError when none does)."""
    _register_wheel_folders()
    code = _distributed._nccl_version()
    if code >= 10000:  # NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch
        return code // 10000, code % 10000 // 100, code % 100
    return code // 1000, code % 1000 // 100, code % 100
