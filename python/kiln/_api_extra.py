"""Late gaps in kiln's top-level and Tensor API that are aliases, predicates or
thin composites, as torch 2.13 has them for real dtypes (kiln has no complex
dtypes): the creation functions as_tensor, asarray, frombuffer, scalar_tensor,
range, fill and empty_permuted; the predicates (is_nonzero ... isreal, the
always-False backend flags, layout, dim_order); the complex helpers that are
identities on real tensors (conj, real, resolve_neg, ...) and angle; torch-level
spellings of Tensor in-place methods; and the legacy Tensor methods new,
resize_as_, apply_, map_, map2_, share_memory_ and cuda.

The view-copy ops and the global configuration switches live in ``_api_extra2``.
``install`` adds every name to the kiln namespace (and, where torch has the
method or property, to Tensor) only where kiln does not have it yet."""

from __future__ import annotations

import builtins
import math
import numbers
import operator
import warnings

import numpy as np

from kiln import _C, _api_extra2
from kiln._api_extra2 import _require_tensor

bool_, int_, float_ = builtins.bool, builtins.int, builtins.float


def _kiln():
    import kiln

    return kiln


_WARNED = set()


def _warn_once(key, message, stacklevel=3):
    """A UserWarning shown once per process (every time under kiln.set_warn_always(True))."""
    if key in _WARNED and not _api_extra2.is_warn_always_enabled():
        return
    _WARNED.add(key)
    warnings.warn(message, UserWarning, stacklevel=stacklevel)


# --- creation -----------------------------------------------------------------------------------

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
    return _kiln().tensor(data, dtype=dtype, device=device)


def _dtype_name(dtype) -> str:
    from kiln._comparison import scalar_type_name

    return scalar_type_name(dtype)


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
            raise ValueError(f"can't alias tensor with dtype '{_dtype_name(tensor.dtype)}' into dtype "
                             f"'{_dtype_name(dtype)}'.")
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
        tensor = frombuffer(obj, dtype=dtype if dtype is not None else _C.get_default_dtype())
        return _asarray_tensor(tensor, None, device, copy, bool_(requires_grad))
    elif copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    result = _kiln().tensor(obj, dtype=dtype, device=device)
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


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """torch.scalar_tensor: a 0-d tensor holding ``s``, of the default dtype unless told."""
    result = _C._functions.full([], _python_number(s), dtype=dtype if dtype is not None else _C.get_default_dtype(),
                                device=device)
    if requires_grad:
        result.requires_grad_(True)
    return result


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
    return _api_extra2._write_out(result, out)


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


# --- predicates and tensor properties ------------------------------------------------------------

def is_nonzero(input):
    """torch.is_nonzero: the truth of a one-element tensor (torch's errors otherwise)."""
    _require_tensor(input, "is_nonzero")
    return input.is_nonzero()


def is_same_size(input, other):
    """torch.is_same_size."""
    _require_tensor(input, "is_same_size")
    _require_tensor(other, "is_same_size", "other", 2)
    return input.is_same_size(other)


def is_signed(input):
    """torch.is_signed: whether ``input``'s dtype is signed."""
    _require_tensor(input, "is_signed")
    return input.is_signed()


def is_inference(input):
    """torch.is_inference: kiln has no inference tensors (its inference_mode is
    no_grad), so this is always False."""
    _require_tensor(input, "is_inference")
    return False


def is_conj(input):
    """torch.is_conj: False (kiln has no complex tensors, so no conjugate bits)."""
    _require_tensor(input, "is_conj")
    return False


def is_neg(input):
    """torch.is_neg: False (kiln has no negative bits)."""
    _require_tensor(input, "is_neg")
    return False


def isreal(input):
    """torch.isreal: True everywhere for kiln's real dtypes (bool, ``input``'s strides)."""
    _require_tensor(input, "isreal")
    return _C._functions.ones_like(input, dtype=_C.bool)


class layout:
    """torch.layout: kiln has the one strided layout, ``kiln.strided``."""

    __module__ = "kiln"

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"kiln.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")


def _false_flag(name):
    return property(lambda self: False, doc=f"Tensor.{name}: False (kiln has no such tensors).")


_BACKEND_FLAGS = ("is_meta", "is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_nested", "is_xpu",
                  "is_ipu", "is_mps", "is_mtia", "is_maia", "is_vulkan", "is_xla")


def _contiguous_in_order(sizes, strides, order) -> bool_:
    """Whether the dims in ``order`` (outermost first) are densely packed, size-1 dims free."""
    expected = 1
    for dim in reversed(order):
        if sizes[dim] != 1:
            if strides[dim] != expected:
                return False
            expected *= sizes[dim]
    return True


def _is_contiguous_as(sizes, strides, memory_format) -> bool_:
    ndim = len(sizes)
    if memory_format == _C.contiguous_format:
        return 0 in sizes or _contiguous_in_order(sizes, strides, list(builtins.range(ndim)))
    wanted = {_C.channels_last: 4, _C.channels_last_3d: 5}.get(memory_format)
    if wanted is None or ndim != wanted:
        return False
    return _contiguous_in_order(sizes, strides, [0, *builtins.range(2, ndim), 1])


def _stride_order(sizes, strides, check=False):
    """The logical-to-physical permutation (dims sorted outermost, largest stride, first;
    zero strides compare as no preference, equal strides put the longer dim outside), and,
    with ``check``, whether some neighbouring pair of it is not strictly ordered."""
    ndim = len(sizes)
    if ndim <= 1:
        return list(builtins.range(ndim)), False
    dense = _is_contiguous_as(sizes, strides, _C.contiguous_format)
    channels_last = _is_contiguous_as(sizes, strides, _C.channels_last)
    if dense and not channels_last:
        return list(builtins.range(ndim)), False
    if channels_last and not dense:
        return [0, *builtins.range(2, ndim), 1], False

    def outer(a, b):  # 1: a belongs outside b, -1: inside, 0: no preference
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] == strides[b]:
            return 1 if sizes[a] > sizes[b] else 0
        return 1 if strides[a] > strides[b] else -1

    order = list(reversed(builtins.range(ndim)))  # innermost first while sorting
    for i in builtins.range(1, ndim):
        moving = i
        for j in reversed(builtins.range(i)):
            preference = outer(order[j], order[moving])
            if preference > 0:
                order[j], order[moving] = order[moving], order[j]
                moving = j
            elif preference < 0:
                break
    ambiguous = check and any(outer(a, b) != -1 for a, b in zip(order, order[1:]))
    return list(reversed(order)), ambiguous


def dim_order(self, *, ambiguity_check=False):
    """Tensor.dim_order: the dims from outermost to innermost in memory. With
    ``ambiguity_check`` (True, or a list of memory formats one of which must fit
    uniquely), a layout that several orders describe raises RuntimeError."""
    formats = []
    if not isinstance(ambiguity_check, bool_):
        if not isinstance(ambiguity_check, list) or not all(isinstance(m, _C.memory_format) for m in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
        formats = ambiguity_check
    sizes, strides = list(self.shape), list(self.stride())
    if ambiguity_check is not False:
        several = any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes
        fits = builtins.sum(1 for m in formats if _is_contiguous_as(sizes, strides, m))
        if several and fits != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
    order, ambiguous = _stride_order(sizes, strides, check=bool_(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(order)


# --- complex helpers on real tensors -------------------------------------------------------------

def _identity(name, doc):
    def identity(input):
        _require_tensor(input, name)
        return input

    identity.__name__ = identity.__qualname__ = name
    identity.__doc__ = doc
    return identity


conj = _identity("conj", "torch.conj: ``input`` itself (kiln's dtypes are real).")
conj_physical = _identity("conj_physical", "torch.conj_physical: ``input`` itself for a real tensor, as in torch.")
conj_physical_ = _identity("conj_physical_", "torch.conj_physical_: nothing to do on a real tensor; ``input``.")
resolve_conj = _identity("resolve_conj", "torch.resolve_conj: ``input`` itself (no conjugate bit to resolve).")
resolve_neg = _identity("resolve_neg", "torch.resolve_neg: ``input`` itself (no negative bit to resolve).")
real = _identity("real", "torch.real: ``input`` itself for a real tensor.")


def imag(input):
    """torch.imag: torch's error, since kiln's tensors are real."""
    _require_tensor(input, "imag")
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _real_property():
    def set_real(self, value):
        self.copy_(value)

    def set_imag(self, value):
        imag(self)

    return (property(lambda self: self, set_real, doc="Tensor.real: the tensor itself (kiln's dtypes are real)."),
            property(imag, set_imag, doc="Tensor.imag: torch's error for real tensors."))


_ANGLE = []


def _angle_function():
    from kiln.autograd import Function

    class Angle(Function):
        """angle of a real tensor: pi below zero, 0 elsewhere, NaN kept; its gradient is zero."""

        @staticmethod
        def forward(ctx, x):
            result = _C._functions.zeros_like(x).masked_fill(x < 0, math.pi)
            return _C._functions.where(x.isnan(), x, result)

        @staticmethod
        def backward(ctx, grad):
            return _C._functions.zeros_like(grad)

    return Angle


def angle(input, *, out=None):
    """torch.angle for real tensors: pi where ``input`` < 0, 0 elsewhere (-0.0 included),
    NaN where NaN; integer and bool inputs give the default dtype. Gradient zero."""
    _require_tensor(input, "angle")
    if not _ANGLE:
        _ANGLE.append(_angle_function())
    x = input if input.dtype.is_floating_point else input.to(_C.get_default_dtype())
    return _api_extra2._write_out(_ANGLE[0].apply(x), out)


# --- torch-level spellings of Tensor in-place methods --------------------------------------------

_INPLACE_ALIASES = ("arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "clamp_", "clamp_max_",
                    "clamp_min_", "clip_", "sinc_", "xlogy_")


def _forward_to_method(name):
    def function(input, *args, **kwargs):
        _require_tensor(input, name)
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}: ``input.{name}(...)``."
    return function


# --- legacy Tensor methods -----------------------------------------------------------------------

def _options_text(dtype) -> str:
    from kiln._numeric_extra import _type_word

    return (f"TensorOptions(dtype={_type_word(dtype)}, device=cpu, layout=Strided, requires_grad=false (default), "
            "pinned_memory=false (default), memory_format=(nullopt))")


def new(self, *args, device=None):
    """Tensor.new (legacy): ``new()`` is empty; ``new(*sizes)`` / ``new(kiln.Size)`` is
    uninitialised; ``new(tensor)`` aliases a tensor of the same dtype; ``new(data)``
    copies a sequence (or array) into ``self``'s dtype."""
    device = device if device is not None else self.device
    if not args:
        return _C._functions.empty([0], dtype=self.dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], (builtins.int, _C.Size)):
        data = args[0]
        if isinstance(data, _C.TensorBase):
            if data.dtype != self.dtype:
                raise TypeError(f"expected {_options_text(self.dtype)} (got {_options_text(data.dtype)})")
            return data.as_strided(data.shape, data.stride(), data.storage_offset())
        if isinstance(data, numbers.Number) or not hasattr(data, "__len__"):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return _kiln().tensor(data, dtype=self.dtype, device=device)
    size = list(args[0]) if len(args) == 1 and isinstance(args[0], _C.Size) else list(args)
    for position, value in enumerate(size):
        if isinstance(value, bool_) or not isinstance(value, numbers.Integral):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {position + 1} with error "
                            f"\"type must be tuple of ints,but got {type(value).__name__}\"")
    return _C._functions.empty([operator.index(s) for s in size], dtype=self.dtype, device=device)


def resize_as_(self, the_template, *, memory_format=None):
    """Tensor.resize_as_: ``self.resize_(the_template.shape)``."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if memory_format is None:
        return self.resize_(the_template.shape)
    return self.resize_(the_template.shape, memory_format=memory_format)


def _element(value, dtype):
    """A callable's result as a ``dtype`` element, with torch's type and overflow checks."""
    if isinstance(value, _C.TensorBase):
        value = value.item()
    if isinstance(value, complex) or not isinstance(value, numbers.Number):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    if dtype == _C.bool:
        return bool_(value)
    if dtype.is_floating_point:
        return float_(value)
    info = np.iinfo(_NUMPY_DTYPES[dtype])
    low = -int_(info.max) if info.min == 0 else int_(info.min)  # unsigned values wrap from below
    whole = int_(value) if math.isfinite(float_(value)) else None
    if whole is None or not low <= whole <= info.max:
        raise RuntimeError(f"value cannot be converted to type {str(dtype).removeprefix('kiln.')} without overflow")
    return whole % (int_(info.max) + 1) if info.min == 0 else whole


def _map_in_place(self, name, others, fn):
    """self[i] = fn(self[i], *(other[i] ...)) for every element, on the CPU."""
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if any(t.requires_grad for t in (self, *others)):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    columns = [t.detach().reshape(-1).tolist() for t in (self, *others)]
    values = [_element(fn(*items), self.dtype) for items in zip(*columns)]
    if values:
        self.copy_(_kiln().tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def _check_same_type(self, name, tensor, argument):
    if tensor.dtype != self.dtype:
        raise TypeError(f"{name}: expected {self.type()} for {argument} (got {tensor.type()})")
    return tensor.expand(self.shape)


def apply_(self, callable):  # noqa: A002 - torch's name
    """Tensor.apply_: replaces each element ``x`` with ``callable(x)`` (CPU only, slow)."""
    return _map_in_place(self, "apply_", [], callable)


def map_(self, tensor, callable):  # noqa: A002 - torch's name
    """Tensor.map_: ``self[i] = callable(self[i], tensor[i])``, ``tensor`` broadcast to ``self``."""
    return _map_in_place(self, "map_", [_check_same_type(self, "map_", tensor, "'other'")], callable)


def map2_(self, x, y, callable):  # noqa: A002 - torch's name
    """Tensor.map2_: ``self[i] = callable(self[i], x[i], y[i])``, ``x`` and ``y`` broadcast."""
    x = _check_same_type(self, "map2_", x, "argument 'x'")
    y = _check_same_type(self, "map2_", y, "argument 'y'")
    return _map_in_place(self, "map2_", [x, y], callable)


def share_memory_(self):
    """Tensor.share_memory_: kiln cannot move tensors into inter-process shared memory,
    so this does nothing and returns ``self`` (is_shared stays False)."""
    return self


def is_shared(self):
    """Tensor.is_shared: False (kiln has no inter-process shared memory)."""
    return False


def const_data_ptr(self):
    """Tensor.const_data_ptr: the address of the first element, as data_ptr."""
    return self.data_ptr()


def cuda(self, device=None, non_blocking=False, memory_format=_C.preserve_format):
    """Tensor.cuda: ``self`` on a CUDA device, when kiln.cuda.is_available(); otherwise
    torch's AssertionError for a build without CUDA."""
    if not _kiln().cuda.is_available():
        raise AssertionError("kiln not compiled with CUDA enabled")
    target = _C.device("cuda") if device is None else device
    if isinstance(target, int_):
        target = _C.device("cuda", target)
    return self.to(device=target, non_blocking=non_blocking, memory_format=memory_format)


FUNCTIONS = {fn.__name__: fn for fn in (
    as_tensor, asarray, frombuffer, scalar_tensor, range, fill, empty_permuted, is_nonzero, is_same_size, is_signed,
    is_inference, is_conj, is_neg, isreal, conj, conj_physical, conj_physical_, resolve_conj, resolve_neg, real, imag,
    angle)}
METHODS = {"is_inference": lambda self: False, "is_conj": lambda self: False, "is_neg": lambda self: False,
           "isreal": isreal, "conj": conj, "conj_physical": conj_physical, "conj_physical_": conj_physical_,
           "resolve_conj": resolve_conj, "resolve_neg": resolve_neg, "angle": angle, "dim_order": dim_order,
           "const_data_ptr": const_data_ptr, "new": new, "resize_as_": resize_as_, "apply_": apply_, "map_": map_,
           "map2_": map2_, "share_memory_": share_memory_, "is_shared": is_shared, "cuda": cuda}


def install(namespace, tensor_class):
    """Adds this module's and ``_api_extra2``'s functions to the kiln namespace and their
    methods and properties to Tensor (only names kiln does not have yet)."""
    functions = dict(FUNCTIONS)
    functions.update(_api_extra2.VIEW_COPIES)
    functions.update(_api_extra2.CONFIG)
    functions.update({name: _forward_to_method(name) for name in _INPLACE_ALIASES})
    functions.update({"layout": layout, "strided": strided})
    for name, fn in functions.items():
        if name not in namespace:
            namespace[name] = fn
    real_property, imag_property = _real_property()
    attributes = dict(METHODS)
    attributes.update(_api_extra2.VIEW_METHODS)
    attributes.update({name: _false_flag(name) for name in _BACKEND_FLAGS})
    attributes.update({"layout": property(lambda self: namespace["strided"], doc="Tensor.layout: kiln.strided."),
                       "output_nr": property(lambda self: 0, doc="Tensor.output_nr: 0 (kiln does not record which "
                                                                 "output of its node a tensor is)."),
                       "real": real_property, "imag": imag_property})
    for name, value in attributes.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, value)
    from kiln.autograd import grad_mode

    _api_extra2._track_inference_mode(grad_mode.inference_mode)
