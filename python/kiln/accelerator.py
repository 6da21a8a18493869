"""kiln.accelerator, as torch.accelerator: the current accelerator (CUDA when
kiln.cuda.is_available(), else none) and its queries. With none available,
current_accelerator() is None, is_available() False, device_count() 0, and the
per-device calls raise torch's RuntimeError."""

from __future__ import annotations

import contextlib

from kiln import _C, cuda

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "device_index", "synchronize", "current_stream", "set_stream",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_stats", "reset_peak_memory_stats", "reset_accumulated_memory_stats"]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def current_accelerator(check_available: bool = False):
    """kiln.device("cuda") when kiln has a CUDA device, else None."""
    return _C.device("cuda") if cuda.is_available() else None


def is_available() -> bool:
    return current_accelerator() is not None


def device_count() -> int:
    return cuda.device_count() if is_available() else 0


def _require():
    if not is_available():
        raise RuntimeError(_NONE_AVAILABLE)


def current_device_index() -> int:
    _require()
    return 0


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _require()


set_device_idx = set_device_index


@contextlib.contextmanager
def device_index(device, /):
    """Makes ``device`` current for the block; None does nothing (so it works without an accelerator)."""
    if device is not None:
        _require()
    yield


def synchronize(device=None) -> None:
    _require()


def current_stream(device=None):
    _require()


def set_stream(stream) -> None:
    _require()


def empty_cache() -> None:
    _require()


def _memory_query(device=None) -> int:
    _require()
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _memory_query


def memory_stats(device=None) -> dict:
    _require()
    return {}


def reset_peak_memory_stats(device=None) -> None:
    _require()


def reset_accumulated_memory_stats(device=None) -> None:
    _require()
