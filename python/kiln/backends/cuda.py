"""kiln.backends.cuda, as torch.backends.cuda: the matmul precision flags and the
scaled-dot-product-attention backend switches. kiln's CUDA backend is not built
(is_built() is False), so they are accepted, kept and read back, and switch nothing."""

from __future__ import annotations

import contextlib
import enum


class _MatmulFlags:
    """torch.backends.cuda.matmul: reduced-precision switches for CUDA matmuls."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.allow_fp16_accumulation = False


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether kiln was built with CUDA kernels (False: the CUDA backend has not landed)."""
    return False


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Switches the attention backends for the ``with`` block (torch's deprecated spelling of
    torch.nn.attention.sdpa_kernel)."""
    previous = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.update(previous)


def preferred_linalg_library(backend=None):
    return "default"


def preferred_blas_library(backend=None):
    return "cublas"
