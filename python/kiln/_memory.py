"""Caching-allocator statistics and control (CPU; kiln.cuda mirrors these for GPUs)."""

from kiln import _C


def memory_stats() -> dict:
    """Statistics of the CPU caching allocator, with PyTorch's key names:
    ``allocated_bytes.all.current``, ``reserved_bytes.all.peak``, ``num_device_alloc``
    (calls to the OS), ``num_device_free``, ..."""
    return _C._memory_stats()


def empty_cache() -> None:
    """Returns every wholly free cached segment to the operating system."""
    _C._empty_cache()


def reset_peak_memory_stats() -> None:
    """Resets the ``*.peak`` statistics to their current values."""
    _C._reset_peak_memory_stats()
