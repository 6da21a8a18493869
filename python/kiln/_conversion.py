"""Tensor.to in torch's three argument forms, and the conversion shorthands
(.float(), .double(), .half(), .bfloat16(), .long(), .int(), .short(),
.char(), .byte(), .bool(), .cpu(), .type()). Each lands in the `to` ops of
eager/ops/conversion.yaml, which return self when nothing changes."""

from __future__ import annotations

from kiln import _C

_TensorBase = _C.TensorBase
_base_to = _TensorBase.to

# torch's legacy tensor type names (Tensor.type()).
_TYPE_NAMES = {
    _C.float32: "FloatTensor", _C.float64: "DoubleTensor", _C.float16: "HalfTensor",
    _C.bfloat16: "BFloat16Tensor", _C.int8: "CharTensor", _C.int16: "ShortTensor", _C.int32: "IntTensor",
    _C.int64: "LongTensor", _C.uint8: "ByteTensor", _C.bool: "BoolTensor",
}
_DTYPES_BY_TYPE_NAME = {name: dtype for dtype, name in _TYPE_NAMES.items()}


def _is_device(value) -> bool:
    return isinstance(value, (str, _C.device)) or (isinstance(value, int) and not isinstance(value, bool))


def to(self, *args, **kwargs):
    """to(dtype, non_blocking=False, copy=False, *, memory_format=kiln.preserve_format)
    to(device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=kiln.preserve_format)
    to(other, non_blocking=False, copy=False)

    A tensor with the given dtype and/or device (those of ``other``); ``self``
    itself when it already has them and ``copy`` is False."""
    rest = list(args)
    chosen = {}
    if rest and isinstance(rest[0], _TensorBase):
        other = rest.pop(0)
        chosen = {"dtype": other.dtype, "device": other.device}
    elif rest and isinstance(rest[0], _C.dtype):
        chosen["dtype"] = rest.pop(0)
    elif rest and (rest[0] is None or _is_device(rest[0])):
        device = rest.pop(0)
        if device is not None:
            chosen["device"] = device
        if rest and (rest[0] is None or isinstance(rest[0], _C.dtype)):
            dtype = rest.pop(0)
            if dtype is not None:
                chosen["dtype"] = dtype
    elif rest:  # not a form of to(): the generated parser names the problem
        return _base_to(self, *args, **kwargs)
    for name in ("dtype", "device"):
        if name in kwargs:
            value = kwargs.pop(name)
            if name in chosen:
                raise TypeError(f"to() got multiple values for argument '{name}'")
            if value is not None:
                chosen[name] = value
    for name, value in zip(("non_blocking", "copy"), rest):
        if name in kwargs:
            raise TypeError(f"to() got multiple values for argument '{name}'")
        kwargs[name] = value
    if len(rest) > 2:
        return _base_to(self, *args, **kwargs)
    if isinstance(chosen.get("device"), int):
        chosen["device"] = _C.device("cuda", chosen["device"])
    return _base_to(self, **chosen, **kwargs)


def _shorthand(dtype, name: str):
    def convert(self, memory_format=_C.preserve_format):
        return _base_to(self, dtype=dtype, memory_format=memory_format)

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = f"``self.to({dtype})``."
    return convert


def cpu(self, memory_format=_C.preserve_format):
    """``self`` on the CPU (``self`` itself when it is there already)."""
    return _base_to(self, device="cpu", memory_format=memory_format)


def type(self, dtype=None, non_blocking=False, **kwargs):  # noqa: A001 - torch's name
    """With no dtype: the type's name ('kiln.FloatTensor'). Otherwise ``self``
    converted to that dtype (a kiln.dtype or a name such as 'kiln.DoubleTensor')."""
    if dtype is None:
        return f"kiln.{_TYPE_NAMES[self.dtype]}"
    if isinstance(dtype, str):
        name = dtype.removeprefix("kiln.").removeprefix("torch.")
        if name not in _DTYPES_BY_TYPE_NAME:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = _DTYPES_BY_TYPE_NAME[name]
    return _base_to(self, dtype=dtype, non_blocking=non_blocking)


_SHORTHANDS = {
    "float": _C.float32, "double": _C.float64, "half": _C.float16, "bfloat16": _C.bfloat16,
    "long": _C.int64, "int": _C.int32, "short": _C.int16, "char": _C.int8, "byte": _C.uint8, "bool": _C.bool,
}

_SHORTHANDS.update({"cfloat": _C.complex64, "cdouble": _C.complex128})


def chalf(self, memory_format=_C.preserve_format):
    """Tensor.chalf: torch's complex32 (two float16 halves), a dtype kiln does not have."""
    raise NotImplementedError("Tensor.chalf: kiln has no complex32 (ComplexHalf) dtype; use cfloat() for complex64")


# Tensor.float(), .double(), .cfloat(), ... (kiln/_tensor_bindings.py puts them on Tensor).
SHORTHAND_METHODS = {name: _shorthand(dtype, name) for name, dtype in _SHORTHANDS.items()}
SHORTHAND_METHODS["chalf"] = chalf
