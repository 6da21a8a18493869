"""torch's autocast state switches (is_autocast_enabled, set_autocast_dtype, the
deprecated CPU/GPU spellings, the cache flag and nesting depth). kiln does not
autocast: these hold and report their state as torch's do, so code that sets and
reads them runs unchanged, but they change no computation."""

from __future__ import annotations

import warnings

from kiln import _C
from kiln._arguments import _require_bool, bool_, checked_signature


_AUTOCAST = {"enabled": {"cpu": False, "cuda": False}, "dtype": {"cpu": _C.bfloat16, "cuda": _C.float16},
             "cache": True, "nesting": 0}


def _autocast_device(device_type, function):
    if not isinstance(device_type, str):
        raise TypeError(f"{function}(): argument 'device_type' (position 1) must be str, not "
                        f"{type(device_type).__name__}")
    return _C.device(device_type).type


def _deprecated(old, new):
    warnings.warn(f"kiln.{old} is deprecated. Please use kiln.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled(device_type=None): the recorded flag (CUDA's when no device type)."""
    key = "cuda" if device_type is None else _autocast_device(device_type, "is_autocast_enabled")
    return _AUTOCAST["enabled"].get(key, False)


def set_autocast_enabled(*args):
    """torch.set_autocast_enabled(device_type, enabled) or (enabled) for CUDA. State only."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = _autocast_device(args[0], "set_autocast_enabled"), args[1]
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 positional arguments but {len(args)} were given")
    _require_bool(enabled, "set_autocast_enabled", "enabled", len(args))
    _AUTOCAST["enabled"][device_type] = enabled


@checked_signature("get_autocast_dtype(str device_type)")
def get_autocast_dtype(device_type):
    """torch.get_autocast_dtype: bfloat16 for the CPU and float16 for CUDA unless set."""
    key = _autocast_device(device_type, "get_autocast_dtype")
    return _AUTOCAST["dtype"].get(key, _C.float16)


def set_autocast_dtype(device_type, dtype):
    """torch.set_autocast_dtype: records the dtype autocast would use on ``device_type``."""
    key = _autocast_device(device_type, "set_autocast_dtype")
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be kiln.dtype, not "
                        f"{type(dtype).__name__}")
    _AUTOCAST["dtype"][key] = dtype


def _check_enabled(enabled):
    if not isinstance(enabled, bool_):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")


def _check_dtype(dtype):
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"dtype must be a kiln.dtype (got {type(dtype).__name__})")


def _deprecated_autocast(name, device_type, setting, replacement):
    """The deprecated CPU/GPU spellings: they warn, then get or set ``setting`` of ``device_type``."""
    def getter():
        _deprecated(f"{name}()", f"{replacement}('{device_type}')")
        return _AUTOCAST[setting][device_type]

    def setter(value):
        argument = "enabled" if setting == "enabled" else "dtype"
        _deprecated(f"{name}({argument})", f"{replacement}('{device_type}', {argument})")
        (_check_enabled if setting == "enabled" else _check_dtype)(value)
        _AUTOCAST[setting][device_type] = value

    function = setter if name.startswith("set_") else getter
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name} (deprecated): use kiln.{replacement}."
    return function


is_autocast_cpu_enabled = _deprecated_autocast("is_autocast_cpu_enabled", "cpu", "enabled", "is_autocast_enabled")

set_autocast_cpu_enabled = _deprecated_autocast("set_autocast_cpu_enabled", "cpu", "enabled", "set_autocast_enabled")

get_autocast_cpu_dtype = _deprecated_autocast("get_autocast_cpu_dtype", "cpu", "dtype", "get_autocast_dtype")

set_autocast_cpu_dtype = _deprecated_autocast("set_autocast_cpu_dtype", "cpu", "dtype", "set_autocast_dtype")

get_autocast_gpu_dtype = _deprecated_autocast("get_autocast_gpu_dtype", "cuda", "dtype", "get_autocast_dtype")

set_autocast_gpu_dtype = _deprecated_autocast("set_autocast_gpu_dtype", "cuda", "dtype", "set_autocast_dtype")


def is_autocast_cache_enabled():
    """torch.is_autocast_cache_enabled."""
    return _AUTOCAST["cache"]


def set_autocast_cache_enabled(enabled):
    """torch.set_autocast_cache_enabled."""
    _check_enabled(enabled)
    _AUTOCAST["cache"] = enabled


def clear_autocast_cache():
    """torch.clear_autocast_cache: kiln keeps no autocast cache."""


def autocast_increment_nesting():
    """torch.autocast_increment_nesting: the new nesting depth."""
    _AUTOCAST["nesting"] += 1
    return _AUTOCAST["nesting"]


def autocast_decrement_nesting():
    """torch.autocast_decrement_nesting: the new nesting depth (may go below zero, as in torch)."""
    _AUTOCAST["nesting"] -= 1
    return _AUTOCAST["nesting"]
