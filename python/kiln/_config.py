"""kiln's global configuration: show_config() (what this build is and what LLVM sees of
the machine) and torch's global switches: matmul precision, determinism, warn-always,
anomaly mode, interop threads, flush-denormal, the default device and tensor type, and
is_inference_mode_enabled (which records kiln.inference_mode's state).

kiln does not pick matmul algorithms by precision or have nondeterministic kernels to
forbid: the switches hold and report their state as torch's do, so code that sets and
reads them runs unchanged, but they change no computation."""

from __future__ import annotations

import builtins
import os
import platform
import threading
import warnings

from kiln import _C
from kiln._arguments import _require_bool
from kiln._conversion import _DTYPES_BY_TYPE_NAME
from kiln._version import __version__
from kiln.autograd import grad_mode

bool_ = builtins.bool


def show_config(print_out: bool = True) -> str:
    """Returns (and by default prints) the build and host configuration."""
    host = _C._host_info()
    build = _C._build_info
    features = host["cpu_features"]
    simd = [f for f in features if f.startswith(("avx", "sse4", "fma", "neon", "sve", "amx"))]
    lines = [
        f"kiln {__version__}",
        f"  build: {build['build_type']}, {build['compiler']}, C++ {build['cxx_standard']}, pybind11 {build['pybind11']}",
        f"  LLVM: {host['llvm_version']} (target {host['target_triple']})",
        f"  host CPU (LLVM): {host['cpu_name']}, {os.cpu_count()} logical cores, {platform.machine()}",
        f"  CPU features: {len(features)} enabled; SIMD: {' '.join(simd) if simd else 'none'}",
        f"  memory caching: {'on' if _C._caching_enabled() else 'off (KILN_NO_MEMORY_CACHING)'}",
        "  CUDA: not available (no driver on this machine)",
    ]
    text = "\n".join(lines)
    if print_out:
        print(text)
    return text


_STATE = {
    "matmul_precision": "highest", "deterministic": False, "deterministic_warn_only": False,
    "warn_always": False, "anomaly_check_nan": True, "interop_threads": None, "default_device": None,
}


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: 'highest', 'high' or 'medium' (anything else
    warns and changes nothing, as torch does). kiln records it; its matmuls are unaffected."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _STATE["matmul_precision"] = precision


def get_float32_matmul_precision():
    """torch.get_float32_matmul_precision: the precision last set ('highest' by default)."""
    return _STATE["matmul_precision"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """torch.use_deterministic_algorithms: records the mode. kiln's kernels are all
    deterministic on the CPU, so nothing has to be refused."""
    _require_bool(mode, "_set_deterministic_algorithms", "mode", 1)
    _require_bool(warn_only, "_set_deterministic_algorithms", "warn_only")
    _STATE["deterministic"] = mode
    _STATE["deterministic_warn_only"] = warn_only


def are_deterministic_algorithms_enabled():
    """torch.are_deterministic_algorithms_enabled."""
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    """torch.is_deterministic_algorithms_warn_only_enabled."""
    return _STATE["deterministic_warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """torch.set_deterministic_debug_mode: 0/'default' (off), 1/'warn', 2/'error'."""
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = names[debug_mode]
    elif not isinstance(debug_mode, builtins.int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """torch.get_deterministic_debug_mode: 0, 1 (warn only) or 2."""
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["deterministic_warn_only"] else 2


def set_warn_always(b):
    """torch.set_warn_always: when True, kiln's warn-once warnings (frombuffer's, asarray's)
    warn every time."""
    if not isinstance(b, bool_):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _STATE["warn_always"] = b


def is_warn_always_enabled():
    """torch.is_warn_always_enabled."""
    return _STATE["warn_always"]


def is_anomaly_enabled():
    """torch.is_anomaly_enabled: kiln.autograd's anomaly mode."""
    return _C.is_anomaly_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    """torch.set_anomaly_enabled: turns kiln.autograd's anomaly mode on or off. kiln's
    engine checks gradients for NaN whenever the mode is on; ``check_nan`` is recorded
    for is_anomaly_check_nan_enabled but cannot turn that check off."""
    _require_bool(enabled, "set_anomaly_enabled", "enabled", 1)
    _require_bool(check_nan, "set_anomaly_enabled", "check_nan", 2)
    _C._set_anomaly_enabled(enabled)
    _STATE["anomaly_check_nan"] = check_nan


def is_anomaly_check_nan_enabled():
    """torch.is_anomaly_check_nan_enabled: the check_nan last given to set_anomaly_enabled
    (True by default; kiln.autograd.detect_anomaly's check_nan is not recorded)."""
    return _STATE["anomaly_check_nan"]


def get_num_interop_threads():
    """torch.get_num_interop_threads: kiln has no separate inter-op pool; this is the
    number last set, or kiln's intra-op thread count."""
    value = _STATE["interop_threads"]
    return value if value is not None else _C.get_num_threads()


def set_num_interop_threads(num):
    """torch.set_num_interop_threads: recorded (kiln runs ops on one inter-op thread)."""
    if not isinstance(num, builtins.int) or isinstance(num, bool_) or num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _STATE["interop_threads"] = num


def init_num_threads():
    """torch.init_num_threads: nothing to initialise in kiln."""


def set_flush_denormal(mode):
    """torch.set_flush_denormal: kiln cannot set the CPU's denormal mode, so this returns
    False, as torch does on CPUs without the support."""
    if not isinstance(mode, bool_):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def compiled_with_cxx11_abi():
    """torch.compiled_with_cxx11_abi: kiln is built with the C++11 ABI."""
    return True


def is_vulkan_available():
    """torch.is_vulkan_available: kiln has no Vulkan backend."""
    return False


def get_default_device():
    """torch.get_default_device: where factories put tensors (always the CPU in kiln)."""
    return _C.device("cpu")


def set_default_device(device):
    """torch.set_default_device: kiln's factories honour only the CPU, so None and 'cpu'
    are accepted and anything else raises NotImplementedError."""
    if device is None:
        _STATE["default_device"] = None
        return
    parsed = _C.device(device) if isinstance(device, (str, _C.device)) else _C.device("cuda", device)
    if parsed.type != "cpu":
        raise NotImplementedError(f"kiln.set_default_device({device!r}): kiln's factories can only default to the "
                                  "CPU; pass device= to each factory instead")
    _STATE["default_device"] = parsed


def set_default_tensor_type(t):
    """torch.set_default_tensor_type (deprecated): 'kiln.FloatTensor' / 'kiln.DoubleTensor'
    (or the torch. spellings, or an object whose ``dtype`` is a floating dtype) set kiln's
    default dtype. kiln has no legacy tensor type classes."""
    warnings.warn("kiln.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "kiln.set_default_dtype() and kiln.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, str):
        name = t.removeprefix("kiln.").removeprefix("torch.")
        if name not in _DTYPES_BY_TYPE_NAME:
            raise TypeError(f"invalid type: '{t}'")
        dtype = _DTYPES_BY_TYPE_NAME[name]
    elif isinstance(getattr(t, "dtype", None), _C.dtype) and not isinstance(t, _C.dtype):
        dtype = t.dtype
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _C.set_default_dtype(dtype)


_INFERENCE = threading.local()


def _inference_stack():
    if not hasattr(_INFERENCE, "stack"):
        _INFERENCE.stack = []
    return _INFERENCE.stack


def _track_inference_mode(cls) -> None:
    """Wraps kiln.inference_mode's enter/exit to record the modes in force (kiln's
    inference_mode keeps no state of its own beyond grad mode)."""
    if getattr(cls, "_kiln_records_mode", False):
        return
    enter, leave = cls.__enter__, cls.__exit__

    def __enter__(self):
        result = enter(self)
        _inference_stack().append(bool_(self.mode))
        return result

    def __exit__(self, *exc):
        stack = _inference_stack()
        if stack:
            stack.pop()
        return leave(self, *exc)

    cls.__enter__, cls.__exit__, cls._kiln_records_mode = __enter__, __exit__, True


def is_inference_mode_enabled():
    """torch.is_inference_mode_enabled: whether the innermost kiln.inference_mode in
    force on this thread is on."""
    stack = _inference_stack()
    return stack[-1] if stack else False


_track_inference_mode(grad_mode.inference_mode)
