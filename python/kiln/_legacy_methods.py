"""torch's legacy Tensor methods: new, resize_as_, apply_ / map_ / map2_ (Python
callables over each element), share_memory_ / is_shared, const_data_ptr and cuda."""

from __future__ import annotations

import builtins
import math
import numbers
import operator

import numpy as np

from kiln import _C, cuda as _cuda
from kiln._arguments import _require_tensor, checked_signature
from kiln._creation import _NUMPY_DTYPES, tensor
from kiln._messages import _options_text

bool_, int_, float_ = builtins.bool, builtins.int, builtins.float


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
        return tensor(data, dtype=self.dtype, device=device)
    size = list(args[0]) if len(args) == 1 and isinstance(args[0], _C.Size) else list(args)
    for position, value in enumerate(size):
        if isinstance(value, bool_) or not isinstance(value, numbers.Integral):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {position + 1} with error "
                            f"\"type must be tuple of ints,but got {type(value).__name__}\"")
    return _C._functions.empty([operator.index(s) for s in size], dtype=self.dtype, device=device)


@checked_signature("resize_as_(Tensor self as input, Tensor the_template)")
def resize_as_(self, the_template, *, memory_format=None):
    """Tensor.resize_as_: ``self.resize_(the_template.shape)``."""
    _require_tensor(the_template, "resize_as_", "the_template", 1)
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
        self.copy_(tensor(values, dtype=self.dtype).reshape(self.shape))
    return self


def _check_same_type(self, name, tensor, argument, position, described):
    """`tensor` broadcast to self, after torch's checks: a Tensor (the parser's message), of
    self's dtype (map_'s message, where torch describes the argument as `described`)."""
    _require_tensor(tensor, name, argument, position)
    if tensor.dtype != self.dtype:
        raise TypeError(f"{name}: expected {self.type()} for {described} (got {tensor.type()})")
    return tensor.expand(self.shape)


def apply_(self, callable):  # noqa: A002 - torch's name
    """Tensor.apply_: replaces each element ``x`` with ``callable(x)`` (CPU only, slow)."""
    return _map_in_place(self, "apply_", [], callable)


def map_(self, tensor, callable):  # noqa: A002 - torch's name
    """Tensor.map_: ``self[i] = callable(self[i], tensor[i])``, ``tensor`` broadcast to ``self``."""
    return _map_in_place(self, "map_", [_check_same_type(self, "map_", tensor, "other", 1, "'other'")], callable)


def map2_(self, x, y, callable):  # noqa: A002 - torch's name
    """Tensor.map2_: ``self[i] = callable(self[i], x[i], y[i])``, ``x`` and ``y`` broadcast."""
    x = _check_same_type(self, "map2_", x, "x", 1, "argument 'x'")
    y = _check_same_type(self, "map2_", y, "y", 2, "argument 'y'")
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
    """Tensor.cuda: ``self`` on a CUDA device (the current one by default). Without a driver,
    kiln's RuntimeError "Found no NVIDIA driver on your system. ..." (kiln is built with CUDA
    support, loaded at first use, so torch's "not compiled with CUDA" AssertionError never applies)."""
    if not _cuda.is_available():
        _cuda.init()  # raises the no-driver error
    target = _C.device("cuda") if device is None else device
    if isinstance(target, int_):
        target = _C.device("cuda", target)
    return self.to(device=target, non_blocking=non_blocking, memory_format=memory_format)
