"""CUDA availability, devices and their properties (torch.cuda's device functions).

Without an NVIDIA driver ``is_available()`` is False and ``device_count()`` 0; every other
call raises kiln's RuntimeError "Found no NVIDIA driver on your system. ..." (torch's wording).
"""

from __future__ import annotations

from kiln import _C


def is_available() -> bool:
    """Whether kiln can use a CUDA device: the driver loads and reports a device. Never raises."""
    return _C._cuda_is_available()


def is_initialized() -> bool:
    """Whether CUDA is available (kiln initialises the driver on first query)."""
    return _C._cuda_is_available()


def init() -> None:
    """Initialises CUDA; raises the no-driver RuntimeError when there is none."""
    _C._cuda_require()


def device_count() -> int:
    """The number of CUDA devices: 0 without a driver."""
    return _C._cuda_device_count()


def current_device() -> int:
    """The index of the calling thread's current device."""
    return _C._cuda_current_device()


def _device_index(device, optional: bool = True) -> int:
    """torch's _get_device_index: None is the current device, an int or "cuda:N" or a device its index."""
    if device is None:
        if not optional:
            raise ValueError("Expected a cuda device, but got: None")
        return _C._cuda_current_device()
    if isinstance(device, str):
        device = _C.device(device)
    if isinstance(device, _C.device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return _C._cuda_current_device() if device.index is None else device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return _C._cuda_current_device() if device < 0 else device
    raise ValueError(f"Expected a cuda device, but got: {device!r}")


def set_device(device) -> None:
    """Makes ``device`` current on this thread (a negative index is a no-op, as torch's)."""
    if isinstance(device, int) and device < 0:
        return
    _C._cuda_set_device(_device_index(device))


def synchronize(device=None) -> None:
    """Waits for all work queued on ``device`` (the current one by default)."""
    _C._cuda_synchronize(_device_index(device))


class _CudaDeviceProperties:
    """torch.cuda.get_device_properties' result: name, major, minor, total_memory, ..."""

    def __init__(self, fields: dict):
        for key, value in fields.items():
            setattr(self, key, value)

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, L2_cache_size={self.L2_cache_size // (1024 * 1024)}MB)")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    return _CudaDeviceProperties(_C._cuda_get_device_properties(_device_index(device)))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    props = get_device_properties(device)
    return props.major, props.minor


class device:
    """``with kiln.cuda.device(1):`` makes device 1 current for the block."""

    def __init__(self, device):
        self.idx = -1 if device is None else _device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = _C._cuda_current_device()
            if self.prev_idx != self.idx:
                _C._cuda_set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            _C._cuda_set_device(self.prev_idx)
        return False
