"""kiln.amp.autocast (also kiln.autocast), custom_fwd / custom_bwd and
is_autocast_available: torch.amp's autocast API over kiln's autocast state
(kiln.is_autocast_enabled, kiln.get_autocast_dtype, ... in kiln/_autocast_state.py).

kiln does not autocast: inside an enabled autocast region every op still runs
in the dtypes of its inputs (a float32 matmul stays float32, where torch's CPU
autocast would run it in bfloat16). What autocast does here is what code can
observe of it apart from op dtypes: the enabled flag, the dtype, the cache flag
and the nesting depth are set on entry and restored on exit, exactly as
torch's are; custom_fwd's ``cast_inputs`` casts inputs as torch's does; the
argument checks, warnings and errors are torch's.

Knowing differences: kiln knows the device types "cpu" and "cuda" only, so
is_autocast_available is True for those two (torch also says True for xpu,
mps, hpu, xla, ipu, mtia, maia and privateuseone) and autocast raises
"unsupported autocast device_type" for the others; kiln has no CUDA, so
autocast("cuda") warns and disables itself as torch's CPU-only build does.
kiln's autocast state is process-wide, torch's is per thread.
"""

from __future__ import annotations

import collections.abc
import functools
import re
import warnings
from typing import Any, Optional

import numpy as np

from kiln import _C, _autocast_state, cuda

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

# Every device type torch's device-string parser accepts, in its error message's order.
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                       "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
# The device types kiln has, for which it keeps autocast state.
_KILN_AUTOCAST_TYPES = ("cpu", "cuda")
_SUPPORTED_DTYPES = (_C.bfloat16, _C.float16)


def _device_type_of(device: str) -> str:
    """The type part of a device string ("cuda:1" -> "cuda"); RuntimeError, in torch's words, for an unknown type."""
    match = re.fullmatch(r"([a-z_]+)(:\d+)?", device)
    if match is None or match.group(1) not in _TORCH_DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at start of device string: "
                           f"{device}")
    return match.group(1)


def is_autocast_available(device_type: str) -> bool:
    """torch.amp.is_autocast_available: whether autocast state is kept for ``device_type``
    (True for "cpu" and "cuda", with or without an index, in kiln)."""
    return _device_type_of(device_type) in _KILN_AUTOCAST_TYPES


def autocast_decorator(autocast_instance, func):
    """``func`` run inside ``autocast_instance`` (what ``@autocast(...)`` makes of a function)."""
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None), as a context
    manager or a decorator.

    ``dtype`` defaults to _autocast_state.get_autocast_dtype(device_type) (bfloat16 for the CPU, float16 for
    CUDA); a dtype other than bfloat16/float16 warns and disables the region, as does "cuda"
    (kiln has no CUDA). Entering sets kiln's autocast flag, dtype and cache flag for the device and
    raises the nesting depth; leaving restores them (clearing the cache at depth 0).

    kiln does not autocast: ops inside the region run in their inputs' dtypes.
    """

    def __init__(self, device_type: str, dtype: Optional[_C.dtype] = None, enabled: bool = True,
                 cache_enabled: Optional[bool] = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.fast_dtype = _autocast_state.get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        self._cache_enabled = _autocast_state.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if self.device == "cuda":
                if not cuda.is_available():
                    warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in _SUPPORTED_DTYPES:
                name = self.device.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of "
                              f"{', '.join(str(d) for d in _SUPPORTED_DTYPES)} currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = _autocast_state.is_autocast_cache_enabled()
        self.prev = _autocast_state.is_autocast_enabled(self.device)
        self.prev_fastdtype = _autocast_state.get_autocast_dtype(self.device)
        _autocast_state.set_autocast_enabled(self.device, self._enabled)
        _autocast_state.set_autocast_dtype(self.device, self.fast_dtype)
        _autocast_state.autocast_increment_nesting()
        _autocast_state.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if _autocast_state.autocast_decrement_nesting() == 0:
            _autocast_state.clear_autocast_cache()
        _autocast_state.set_autocast_enabled(self.device, self.prev)
        _autocast_state.set_autocast_dtype(self.device, self.prev_fastdtype)
        _autocast_state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use "
                            f"autocast as a context manager? For example:\n    with kiln.autocast(device_type=...):\n"
                            f"        output = model(input)")
        return autocast_decorator(self, func)


class _UnmanagedAutocast(autocast):
    """An autocast entered and left by _enter_autocast / _exit_autocast rather than a with-block."""


def _enter_autocast(*vals):
    mode = _UnmanagedAutocast(*vals)
    mode.__enter__()
    return mode


def _exit_autocast(mode) -> None:
    mode.__exit__(None, None, None)


def _cast(value, device_type: str, dtype):
    """``value`` with its floating-point tensors on ``device_type`` (float64 excepted) cast to ``dtype``,
    through mappings and iterables (lists and tuples keep their type; strings and arrays are left alone)."""
    if isinstance(value, _C.TensorBase):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not _C.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: Optional[_C.dtype] = None):
    """torch.amp.custom_fwd: decorates a custom autograd Function's ``forward``. It records the
    autocast dtype and state on ``ctx`` (for custom_bwd); with ``cast_inputs``, inside an enabled
    region it casts floating inputs to that dtype and runs ``forward`` with autocast disabled."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = _autocast_state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = _autocast_state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_autocast = _autocast_state.is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if in_autocast:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """torch.amp.custom_bwd: runs a custom Function's ``backward`` under the autocast state
    its custom_fwd-decorated ``forward`` recorded on ``ctx``."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
