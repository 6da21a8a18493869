"""The second half of ``_api_extra``: torch's view-copy ops (``alias_copy`` ...
``view_copy``: the view, materialised as a new contiguous tensor), the
``unsafe_*`` splits, ``as_strided_scatter``, and torch's global configuration
switches (matmul precision, determinism, warn-always, anomaly mode, interop
threads, default device / tensor type, autocast state), is_inference_mode_enabled
(which wraps kiln.inference_mode to record its state), typename, get_device,
is_storage and is_distributed.

kiln does not autocast, pick matmul algorithms by precision or have
nondeterministic kernels to forbid: the switches below hold and report their
state as torch's do, so code that sets and reads them runs unchanged, but they
change no computation. ``_api_extra.install`` adds these names to kiln."""

from __future__ import annotations

import builtins
import threading
import warnings

from kiln import _C

bool_ = builtins.bool


def _kiln():
    import kiln

    return kiln


# --- view-copy ops ------------------------------------------------------------------------------

def _materialise(view):
    """A contiguous copy of a view (autograd flows through the view and the clone)."""
    return view.clone(memory_format=_C.contiguous_format)


def _write_out(result, out):
    """``result`` itself, or copied into ``out`` when one is given (torch's resize warning and cast check)."""
    if out is None:
        return result
    if isinstance(result, (list, tuple)):
        if len(out) != len(result):
            raise RuntimeError(f"expected {len(result)} out tensors, but got {len(out)}")
        for target, value in zip(out, result):
            _write_out(value, target)
        return None
    return _C._functions._copy_to_out(result, out)


def alias_copy(input, *, out=None):
    """torch.alias_copy: a contiguous copy of ``input`` (the alias, materialised)."""
    return _write_out(_materialise(input), out)


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    """torch.as_strided_copy: ``input.as_strided(size, stride, storage_offset)`` as a new tensor."""
    view = input.as_strided(size, stride) if storage_offset is None else input.as_strided(size, stride, storage_offset)
    return _write_out(_materialise(view), out)


def detach_copy(input, *, out=None):
    """torch.detach_copy: a copy of ``input``. Like torch, the result of an input that
    requires grad requires grad too, and backward through it raises (aten::detach_copy
    has no derivative)."""
    from kiln._numeric_extra import _no_derivative

    result = _materialise(input.detach())
    (result,) = _no_derivative(["detach_copy"], [result], [input])
    return _write_out(result, out)


def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    """torch.diagonal_copy: ``input.diagonal(offset, dim1, dim2)`` as a new tensor."""
    return _write_out(_materialise(input.diagonal(offset, dim1, dim2)), out)


def expand_copy(input, size, *, implicit=False, out=None):
    """torch.expand_copy: ``input.expand(size)`` as a new (contiguous, materialised) tensor."""
    return _write_out(_materialise(input.expand(*size) if not isinstance(size, int) else input.expand(size)), out)


def narrow_copy(input, dim, start, length, *, out=None):
    """torch.narrow_copy (and Tensor.narrow_copy): ``input.narrow(dim, start, length)`` as a new tensor."""
    return _write_out(_materialise(input.narrow(dim, start, length)), out)


def permute_copy(input, dims, *, out=None):
    """torch.permute_copy: ``input.permute(dims)`` as a new tensor."""
    return _write_out(_materialise(input.permute(*dims)), out)


def select_copy(input, dim, index, *, out=None):
    """torch.select_copy: ``input.select(dim, index)`` as a new tensor."""
    return _write_out(_materialise(input.select(dim, index)), out)


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """torch.slice_copy: ``input[..., start:end:step, ...]`` along ``dim``, as a new tensor."""
    return _write_out(_materialise(_C._functions.slice(input, dim, start, end, step)), out)


def split_copy(input, split_size, dim=0, *, out=None):
    """torch.split_copy: the pieces of ``input.split(split_size, dim)``, each a new tensor."""
    return _write_out([_materialise(p) for p in input.split(split_size, dim)], out)


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    """torch.split_with_sizes_copy: the pieces of ``input.split_with_sizes(split_sizes, dim)``, copied."""
    return _write_out([_materialise(p) for p in input.split_with_sizes(list(split_sizes), dim)], out)


def squeeze_copy(input, dim=None, *, out=None):
    """torch.squeeze_copy: ``input.squeeze(dim)`` as a new tensor (dim: None, an int or a tuple)."""
    view = input.squeeze() if dim is None else input.squeeze(dim)
    return _write_out(_materialise(view), out)


def t_copy(input, *, out=None):
    """torch.t_copy: ``input.t()`` as a new tensor."""
    return _write_out(_materialise(input.t()), out)


def transpose_copy(input, dim0, dim1, *, out=None):
    """torch.transpose_copy: ``input.transpose(dim0, dim1)`` as a new tensor."""
    return _write_out(_materialise(input.transpose(dim0, dim1)), out)


def unbind_copy(input, dim=0, *, out=None):
    """torch.unbind_copy: the slices of ``input.unbind(dim)``, each a new tensor."""
    return _write_out([_materialise(p) for p in input.unbind(dim)], out)


def unfold_copy(input, dimension, size, step, *, out=None):
    """torch.unfold_copy: ``input.unfold(dimension, size, step)`` as a new tensor."""
    return _write_out(_materialise(input.unfold(dimension, size, step)), out)


def unsqueeze_copy(input, dim, *, out=None):
    """torch.unsqueeze_copy: ``input.unsqueeze(dim)`` as a new tensor."""
    return _write_out(_materialise(input.unsqueeze(dim)), out)


def view_copy(input, size, *, out=None):
    """torch.view_copy: ``input.view(size)`` (a shape or a dtype) as a new tensor. Unlike
    Tensor.view, any input works: the copy need not alias ``input``'s memory."""
    if isinstance(size, _C.dtype):
        view = input.view(size)
    elif isinstance(size, (list, tuple)):
        shape = [builtins.int(s) for s in size]
        view = input.view(shape) if input.is_contiguous() else input.reshape(shape)
    else:
        raise TypeError(f"view_copy(): argument 'size' must be tuple of ints or a dtype, not {type(size).__name__}")
    return _write_out(_materialise(view), out)


# --- unsafe splits and as_strided_scatter --------------------------------------------------------

def _unsafe_split_class():
    from kiln.autograd import Function

    class UnsafeSplit(Function):
        """Pieces that share ``input``'s memory but are not autograd views of it (so they
        may be modified in place, as torch's unsafe_split allows); backward concatenates."""

        @staticmethod
        def forward(ctx, input, sizes, dim):
            ctx.dim = dim
            return tuple(_C.from_dlpack(piece) for piece in input.detach().split_with_sizes(sizes, dim))

        @staticmethod
        def backward(ctx, *grads):
            return _C._functions.cat(list(grads), ctx.dim), None, None

    return UnsafeSplit


_UNSAFE_SPLIT = []


def _unsafe_split_with(input, sizes, dim):
    if not _UNSAFE_SPLIT:
        _UNSAFE_SPLIT.append(_unsafe_split_class())
    ndim = builtins.max(input.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return _UNSAFE_SPLIT[0].apply(input, list(sizes), dim % ndim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """torch.unsafe_split_with_sizes: like split_with_sizes, but the pieces are not views
    (they share memory with ``input``; in-place changes to them are not tracked as such)."""
    input.split_with_sizes(list(split_sizes), dim)  # kiln's own checks and messages
    return _unsafe_split_with(input, split_sizes, dim)


def unsafe_split(input, split_size, dim=0):
    """torch.unsafe_split: like split (an int size), with pieces that are not views."""
    if not isinstance(split_size, builtins.int):
        return unsafe_split_with_sizes(input, split_size, dim)
    sizes = [p.shape[dim] for p in input.split(split_size, dim)]
    return _unsafe_split_with(input, sizes, dim)


def unsafe_chunk(input, chunks, dim=0):
    """torch.unsafe_chunk: like chunk, with pieces that are not views."""
    sizes = [p.shape[dim] for p in input.chunk(chunks, dim)]
    return _unsafe_split_with(input, sizes, dim)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """torch.as_strided_scatter: a copy of ``input`` (same strides) whose
    ``as_strided(size, stride, storage_offset)`` window holds ``src``. Differentiable in both."""
    if input.requires_grad and not input.is_contiguous():
        raise RuntimeError("as_strided_scatter is currently only supported for contiguous inputs")
    output = input.clone()
    window = output.as_strided(size, stride) if storage_offset is None else output.as_strided(size, stride,
                                                                                             storage_offset)
    if tuple(window.shape) != tuple(src.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(window.shape)}")
    window.copy_(src)
    return output


VIEW_COPIES = {fn.__name__: fn for fn in (
    alias_copy, as_strided_copy, detach_copy, diagonal_copy, expand_copy, narrow_copy, permute_copy, select_copy,
    slice_copy, split_copy, split_with_sizes_copy, squeeze_copy, t_copy, transpose_copy, unbind_copy, unfold_copy,
    unsqueeze_copy, view_copy, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, as_strided_scatter)}
VIEW_METHODS = {name: VIEW_COPIES[name] for name in (
    "narrow_copy", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "as_strided_scatter")}


# --- global configuration ------------------------------------------------------------------------

_STATE = {
    "matmul_precision": "highest", "deterministic": False, "deterministic_warn_only": False,
    "warn_always": False, "anomaly_check_nan": True, "interop_threads": None, "default_device": None,
}


def _require_tensor(value, function, argument="input", position=1):
    """torch's argument parser's TypeError for a non-tensor."""
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{function}(): argument '{argument}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def _require_bool(value, function, argument, position=None):
    """torch's argument parser's TypeError for a non-bool."""
    if not isinstance(value, bool_):
        where = f" (position {position})" if position is not None else ""
        raise TypeError(f"{function}(): argument '{argument}'{where} must be bool, not {type(value).__name__}")


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
    from kiln._conversion import _DTYPES_BY_TYPE_NAME

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


# --- autocast state (kiln does not autocast) -----------------------------------------------------

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


# --- inference mode, typename and friends --------------------------------------------------------

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


def typename(obj):
    """torch.typename: 'kiln.FloatTensor' for tensors (Tensor.type()), else the dotted
    module and qualified name of ``obj`` (a class or function) or of its type."""
    if isinstance(obj, _C.TensorBase):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


def get_device(input):
    """torch.get_device: -1 for a CPU tensor, else its CUDA index."""
    _require_tensor(input, "get_device")
    return input.get_device()


def is_storage(obj):
    """torch.is_storage: False (kiln has no storage objects)."""
    return False


def is_distributed(input):
    """torch.is_distributed: False (kiln has no distributed tensors)."""
    _require_tensor(input, "is_distributed")
    return False


CONFIG = {fn.__name__: fn for fn in (
    set_float32_matmul_precision, get_float32_matmul_precision, use_deterministic_algorithms,
    are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled,
    set_deterministic_debug_mode, get_deterministic_debug_mode, set_warn_always, is_warn_always_enabled,
    is_anomaly_enabled, set_anomaly_enabled, is_anomaly_check_nan_enabled, get_num_interop_threads,
    set_num_interop_threads, init_num_threads, set_flush_denormal, compiled_with_cxx11_abi, is_vulkan_available,
    get_default_device, set_default_device, set_default_tensor_type, is_autocast_enabled, set_autocast_enabled,
    get_autocast_dtype, set_autocast_dtype, is_autocast_cpu_enabled, set_autocast_cpu_enabled,
    get_autocast_cpu_dtype, set_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_gpu_dtype,
    is_autocast_cache_enabled, set_autocast_cache_enabled, clear_autocast_cache, autocast_increment_nesting,
    autocast_decrement_nesting, is_inference_mode_enabled, typename, get_device, is_storage, is_distributed)}
