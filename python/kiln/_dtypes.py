"""Type-promotion queries PyTorch exposes in Python: result_type, promote_types,
can_cast, and the is_floating_point / is_complex predicates. The promotion
itself is the C++ rule every op uses (Note [Promotion by category]): the
queries ask it through an add of empty operands, so they cannot disagree with
what an op would compute."""

from __future__ import annotations

import builtins

from kiln import _C
from kiln._arguments import checked_signature


def _empty_like_for_promotion(value):
    """An empty stand-in with `value`'s promotion role: a tensor of its dtype with
    the same dimensionality class (0-dim or not), or the Python number itself."""
    if isinstance(value, _C.TensorBase):
        if value.dim() == 0:
            return _C._functions.empty([], dtype=value.dtype)
        return _C._functions.empty([0], dtype=value.dtype)
    if isinstance(value, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        return value
    raise TypeError(f"result_type(): argument must be a Tensor or a Number, not {type(value).__name__}")


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or numbers) returns."""
    a, b = _empty_like_for_promotion(tensor1), _empty_like_for_promotion(tensor2)
    if isinstance(a, _C.TensorBase):
        return _C._functions.add(a, b).dtype
    if isinstance(b, _C.TensorBase):
        return _C._functions.add(b, a).dtype
    # two numbers: the category of the higher one, floats in the default dtype
    if isinstance(a, builtins.complex) or isinstance(b, builtins.complex):
        return _C.complex128 if _C.get_default_dtype() is _C.float64 else _C.complex64
    if isinstance(a, builtins.float) or isinstance(b, builtins.float):
        return _C.get_default_dtype()
    if isinstance(a, builtins.bool) and isinstance(b, builtins.bool):
        return _C.bool
    return _C.int64


@checked_signature("promote_types(ScalarType type1, ScalarType type2)")
def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing category."""
    return result_type(_C._functions.empty([0], dtype=type1), _C._functions.empty([0], dtype=type2))


@checked_signature("can_cast(ScalarType from_, ScalarType to)")
def can_cast(from_, to):
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no float to integer, nothing but bool to bool)."""
    if from_.is_complex and not to.is_complex:
        return False
    if from_.is_floating_point and not (to.is_floating_point or to.is_complex):
        return False
    if from_ != _C.bool and to == _C.bool:
        return False
    return True


@checked_signature("is_floating_point(Tensor input)")
def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating point type."""
    return input.dtype.is_floating_point


@checked_signature("is_complex(Tensor input)")
def is_complex(input) -> bool:
    """Whether ``input``'s dtype is complex (complex64 or complex128)."""
    return input.dtype.is_complex


# (mantissa bits without the implicit one, exponent bits, decimal precision) per floating dtype.
_FLOAT_LAYOUT = {"float32": (23, 8, 6), "float64": (52, 11, 15), "float16": (10, 5, 3), "bfloat16": (7, 8, 2)}
_INT_BITS = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True), "uint8": (8, False)}


def _dtype_name(dtype):
    return str(dtype).removeprefix("kiln.")


class finfo:
    """torch.finfo: a floating dtype's machine limits (bits, eps, max, min, tiny/smallest_normal, resolution)."""

    def __init__(self, type=None):
        dtype = _C.get_default_dtype() if type is None else type
        name = _dtype_name(dtype)
        name = {"complex64": "float32", "complex128": "float64"}.get(name, name)  # a complex dtype's parts
        if name not in _FLOAT_LAYOUT:
            raise TypeError("kiln.finfo() requires a floating point input type. Use kiln.iinfo to handle 'kiln.finfo'")
        mantissa, exponent, precision = _FLOAT_LAYOUT[name]
        max_exponent = 2 ** (exponent - 1) - 1
        self.bits = 1 + mantissa + exponent
        self.eps = 2.0 ** -mantissa
        self.max = (2.0 - 2.0 ** -mantissa) * 2.0 ** max_exponent
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** (1 - max_exponent)
        self.resolution = 10.0 ** -precision
        self.dtype = name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo: an integer dtype's bits, min and max."""

    def __init__(self, type):
        name = _dtype_name(type)
        if name not in _INT_BITS:
            raise TypeError("kiln.iinfo() requires an integer input type. Use kiln.finfo to handle 'kiln.iinfo'")
        bits, signed = _INT_BITS[name]
        self.bits = bits
        self.min = -(2 ** (bits - 1)) if signed else 0
        self.max = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
        self.dtype = name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
