"""Tensor creation that is not an op: kiln.tensor(data) (it parses nested Python data),
as_tensor, asarray, frombuffer, scalar_tensor, range (deprecated), fill and
empty_permuted. The factories (empty, zeros, ones, full, arange, linspace, logspace,
eye, rand, ...) and the *_like forms are ops in eager/ops/*.yaml with generated
bindings."""

from __future__ import annotations

import builtins
import math
import numbers
import warnings

import numpy as np

from kiln import _C
from kiln._arguments import _require_tensor, _write_out, checked_signature
from kiln._comparison import scalar_type_name
from kiln._config import is_warn_always_enabled

bool_, int_, float_ = builtins.bool, builtins.int, builtins.float


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, numbers, arrays, tensors)."""
    return _C._tensor(data, dtype, device, requires_grad)


_WARNED = set()


def _warn_once(key, message, stacklevel=3):
    """A UserWarning shown once per process (every time under kiln.set_warn_always(True))."""
    if key in _WARNED and not is_warn_always_enabled():
        return
    _WARNED.add(key)
    warnings.warn(message, UserWarning, stacklevel=stacklevel)


def _same_device(tensor, device) -> bool_:
    if device is None:
        return True
    wanted = _C.device(device) if isinstance(device, (str, _C.device)) else _C.device("cuda", device)
    return wanted.type == tensor.device.type and (wanted.index is None or wanted.index == tensor.device.index)


def as_tensor(data, dtype=None, device=None):
    """torch.as_tensor: ``data`` itself when it is a kiln tensor of that dtype and device,
    else a converted tensor (differentiable); numpy arrays share their memory when the
    dtype already fits; other data (lists, numbers) is copied as by kiln.tensor."""
    if isinstance(data, _C.TensorBase):
        if (dtype is None or dtype == data.dtype) and _same_device(data, device):
            return data
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray):
        return as_tensor(_C.from_numpy(data), dtype, device)
    return tensor(data, dtype=dtype, device=device)


def _asarray_tensor(tensor, dtype, device, copy, requires_grad):
    """asarray's rules for a tensor: alias when possible and allowed, else copy."""
    if requires_grad is None:
        if tensor.requires_grad:
            _warn_once("asarray", "kiln.asarray: unspecified requires_grad now defaults to obj.requires_grad "
                                  "instead of False. Pass requires_grad=False explicitly to get the old behavior "
                                  "and silence this warning.", stacklevel=4)
        requires_grad = tensor.requires_grad
    converts = (dtype is not None and dtype != tensor.dtype) or not _same_device(tensor, device)
    if copy is False and converts:
        if dtype is not None and dtype != tensor.dtype:
            raise ValueError(f"can't alias tensor with dtype '{scalar_type_name(tensor.dtype)}' into dtype "
                             f"'{scalar_type_name(dtype)}'.")
        raise ValueError(f"can't alias tensor on device '{tensor.device}' into device '{device}'.")
    if copy or converts:
        source = tensor if requires_grad else tensor.detach()
        result = source.to(device=device, dtype=dtype, copy=True)
        if requires_grad and not result.requires_grad:
            result.requires_grad_(True)
        return result
    if tensor.requires_grad != requires_grad:
        tensor.requires_grad_(requires_grad)  # torch changes the flag of the tensor it returns
    return tensor


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """torch.asarray: ``obj`` as a tensor, sharing memory where it can (tensors, numpy
    arrays, DLPack capsules' owners, buffer-protocol objects read as ``dtype`` or the
    default dtype) unless ``copy=True``; ``copy=False`` refuses to copy."""
    if isinstance(obj, _C.TensorBase):
        return _asarray_tensor(obj, dtype, device, copy, requires_grad)
    if isinstance(obj, np.ndarray):
        return _asarray_tensor(_C.from_numpy(obj), dtype, device, copy, bool_(requires_grad))
    if isinstance(obj, np.generic):
        if copy is False:
            raise RuntimeError("can't alias NumPy scalars. Either remove copy=False or transform it in a ndarray. ")
    elif hasattr(obj, "__dlpack__"):
        return _asarray_tensor(_C.from_dlpack(obj), dtype, device, copy, bool_(requires_grad))
    elif not isinstance(obj, (str, list, tuple, numbers.Number)) and _has_buffer(obj):
        buffer_view = frombuffer(obj, dtype=dtype if dtype is not None else _C.get_default_dtype())
        return _asarray_tensor(buffer_view, None, device, copy, bool_(requires_grad))
    elif copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    result = tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        result.requires_grad_(True)
    return result


def _has_buffer(obj) -> bool_:
    try:
        memoryview(obj).release()
    except TypeError:
        return False
    return True


_NUMPY_DTYPES = {
    _C.float32: np.float32, _C.float64: np.float64, _C.float16: np.float16, _C.bfloat16: np.int16,
    _C.int8: np.int8, _C.int16: np.int16, _C.int32: np.int32, _C.int64: np.int64, _C.uint8: np.uint8,
    _C.bool: np.bool_,
}


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch.frombuffer: a 1-D tensor over ``count`` elements of ``buffer`` from byte
    ``offset`` on. The tensor shares the buffer's memory (through a numpy view, which
    keeps the buffer alive); writing to it writes the buffer, even a read-only one."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length, readonly = view.nbytes, view.readonly
    view.release()
    size = dtype.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0 and (length - offset) % size != 0:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a multiple "
                         f"of element size ({size})")
    if count < 0:
        count = (length - offset) // size
    if offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must not be "
                         f"greater than actual buffer length ({length} bytes)")
    if readonly:
        _warn_once("frombuffer", "The given buffer is not writable, and kiln does not support non-writable tensors. "
                   "This means you can write to the underlying (supposedly non-writable) buffer using the tensor. "
                   "You may want to copy the buffer to protect its data or make it writable before converting it "
                   "to a tensor. This type of warning will be suppressed for the rest of this program.")
    array = np.frombuffer(buffer, dtype=_NUMPY_DTYPES[dtype], count=count, offset=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # from_numpy's own read-only warning: the one above replaces it
        result = _C.from_numpy(array)
    if dtype == _C.bfloat16:
        result = result.view(_C.bfloat16)
    if requires_grad:
        result.requires_grad_(True)
    return result


def _python_number(value):
    return value.item() if isinstance(value, _C.TensorBase) else value


@checked_signature("scalar_tensor(Scalar s, *, ScalarType? dtype, Any layout, Any device, bool? pin_memory)")
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """torch.scalar_tensor: a 0-d tensor holding ``s``, of the default dtype unless told."""
    result = _C._functions.full([], _python_number(s), dtype=dtype if dtype is not None else _C.get_default_dtype(),
                                device=device)
    if requires_grad:
        result.requires_grad_(True)
    return result


@checked_signature("range(Scalar start, Scalar end, Any step, *, Tensor? out, ScalarType? dtype)")
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """torch.range (deprecated): ``start, start + step, ...`` up to and including ``end``,
    of the default dtype unless told. Values are computed in double (int64 for integer
    dtypes) and rounded once, as torch's CPU kernel does."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn("kiln.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use kiln.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    dtype = dtype if dtype is not None else _C.get_default_dtype()
    floating = dtype.is_floating_point
    kind = float_ if floating else int_
    first, last, delta = (kind(_python_number(v)) for v in (start, end, step))
    if delta == 0:
        raise RuntimeError("step must be nonzero")
    if floating and not (math.isfinite(first) and math.isfinite(last)):
        raise RuntimeError(f"unsupported range: {first:g} -> {last:g}")
    if not ((delta > 0 and last >= first) or (delta < 0 and last <= first)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int_((last - first) / delta + 1) if floating else (last - first) // delta + 1
    steps = _C._functions.arange(count, dtype=_C.float64 if floating else _C.int64, device=device)
    result = (steps * delta + first).to(dtype)
    if requires_grad:
        result.requires_grad_(True)
    return _write_out(result, out)


@checked_signature("fill(Tensor input)")
def fill(input, value):
    """torch.fill: a copy of ``input`` with every element ``value`` (a number or a 0-d
    tensor); gradient flows to a tensor ``value`` (and zero to ``input``)."""
    _require_tensor(input, "fill")
    result = input.clone()
    if isinstance(value, _C.TensorBase):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        return result.copy_(value.expand(input.shape))
    return result.fill_(value)


@checked_signature("empty_permuted(int[] size, int[] physical_layout, *, ScalarType? dtype, Any layout, Any device, "
                   "Any requires_grad, bool? pin_memory)")
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """torch.empty_permuted: an uninitialised tensor of ``size`` whose memory holds its
    dimensions in the order ``physical_layout`` (outermost first)."""
    size, order = [int_(s) for s in size], [int_(d) for d in physical_layout]
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    seen = set()
    for index, dim in enumerate(order):
        if not 0 <= dim < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but got {dim} "
                               f"at index {index}).  NB: negative dims not currently supported; file an issue if "
                               "you want it.")
        if dim in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(dim)
    result = _C._functions.empty([size[d] for d in order], dtype=dtype, device=device)
    if size:
        result = result.permute(*[order.index(d) for d in builtins.range(len(size))])
    if requires_grad:
        result.requires_grad_(True)
    return result

