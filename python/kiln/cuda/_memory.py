"""The CUDA caching allocator's statistics and control (torch.cuda.memory_allocated and friends).

Each device has its own pool (eager/cuda/CudaAllocator.h over eager/memory's CachingAllocator).
Without a driver the statistics are zeros and empty_cache does nothing, as torch's on a machine
where CUDA was never initialised; OutOfMemoryError is kiln.OutOfMemoryError (torch's is too).
"""

from __future__ import annotations

from kiln import _C
from kiln.cuda._device import _device_index

OutOfMemoryError = _C.OutOfMemoryError


def _index(device) -> int:
    return _device_index(device) if _C._cuda_is_available() else 0


def memory_stats(device=None) -> dict:
    """torch's flat dict: "allocated_bytes.all.current", "reserved_bytes.all.peak", ..."""
    if not _C._cuda_is_available():
        return {}
    return dict(sorted(_C._cuda_memory_stats(_index(device)).items()))


def _stat(device, key: str) -> int:
    if not _C._cuda_is_available():
        return 0
    return _C._cuda_memory_stats(_index(device))[key]


def memory_allocated(device=None) -> int:
    """Bytes of CUDA tensors alive on ``device`` (block sizes: multiples of 512)."""
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device=None) -> int:
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device=None) -> int:
    """Bytes the allocator holds from the driver on ``device`` (allocated plus cached)."""
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device=None) -> int:
    return _stat(device, "reserved_bytes.all.peak")


def reset_peak_memory_stats(device=None) -> None:
    if _C._cuda_is_available():
        _C._cuda_reset_peak_memory_stats(_index(device))


def empty_cache() -> None:
    """Returns every wholly free cached segment of every device to the driver."""
    _C._cuda_empty_cache()


def _format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A short table of the allocator's statistics for ``device``."""
    stats = memory_stats(device)
    name = f"cuda:{_index(device)}" if _C._cuda_is_available() else "cuda (no device)"
    lines = [f"kiln CUDA memory summary, device {name}",
             f"{'metric':<22}{'current':>14}{'peak':>14}{'allocated':>14}{'freed':>14}"]
    for key, label, as_bytes in (("allocated_bytes", "allocated memory", True),
                                 ("active_bytes", "active memory", True),
                                 ("reserved_bytes", "reserved memory", True),
                                 ("allocation", "allocations", False),
                                 ("segment", "segments", False)):
        values = [stats.get(f"{key}.all.{field}", 0) for field in ("current", "peak", "allocated", "freed")]
        shown = [_format_bytes(v) if as_bytes else str(v) for v in values]
        lines.append(f"{label:<22}" + "".join(f"{s:>14}" for s in shown))
    lines.append(f"device allocs: {stats.get('num_device_alloc', 0)}, device frees: {stats.get('num_device_free', 0)}, "
                 f"alloc retries: {stats.get('num_alloc_retries', 0)}, OOMs: {stats.get('num_ooms', 0)}")
    return "\n".join(lines)
