"""kiln.testing.make_tensor: torch.testing.make_tensor for kiln's dtypes.

Values are drawn uniformly from [low, high): by default [0, 2) for bool,
[0, 10) for uint8, [-9, 10) for the signed integers and [-9, 9) for the
floating and complex types (each complex part drawn alone, through
``kiln.view_as_real``). Bounds outside the dtype's finite range are clamped to
it; integral bounds are rounded up. The errors and the low == high
FutureWarning are torch's. kiln's generator is its own Philox stream, so the
values differ from torch's for the same seed; the ranges do not.

kiln has no complex32, uint16/32/64 or float8 dtypes, so make_tensor knows
none of them; any other dtype is a TypeError, as in torch.
"""

from __future__ import annotations

import collections.abc
import math
import warnings
from typing import Optional

from kiln import _C
from kiln._complex import view_as_real
from kiln._dtypes import finfo, iinfo

__all__ = ["make_tensor"]

_F = _C._functions


def _dtype_groups():
    """(integral, floating, complex) dtypes kiln has, of torch's lists."""
    integral = [_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64]
    integral += [getattr(_C, name) for name in ("uint16", "uint32", "uint64") if hasattr(_C, name)]
    floating = [_C.float16, _C.bfloat16, _C.float32, _C.float64]
    complex_ = [getattr(_C, name) for name in ("complex32",) if hasattr(_C, name)] + [_C.complex64, _C.complex128]
    return integral, floating, complex_


def _real_finfo(dtype):
    """kiln.finfo of ``dtype``, of its real part for a complex dtype (torch.finfo(complex64) is float32's)."""
    real = {_C.complex64: _C.float32, _C.complex128: _C.float64}.get(dtype, dtype)
    return finfo(real)


def _uniform_random_(tensor, low: float, high: float):
    """uniform_ over [low, high), halving the bounds (and doubling after) when high - low
    exceeds the dtype's largest finite value, which uniform_ refuses."""
    if high - low >= _real_finfo(tensor.dtype).max:
        return tensor.uniform_(low / 2, high / 2).mul_(2)
    return tensor.uniform_(low, high)


def _bounds(dtype, low, high, *, lowest_inclusive, highest_exclusive, default_low, default_high, integral: bool,
            floating_or_complex: bool):
    """The [low, high) interval to draw from: defaults filled in, checked and clamped, ceiled for integral dtypes."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and floating_or_complex:
        warnings.warn("Passing `low==high` to `kiln.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `kiln.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest_inclusive}, {highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if integral:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low: Optional[float] = None, high: Optional[float] = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):
    """torch.testing.make_tensor: a ``shape`` tensor of ``dtype`` on ``device``, uniform in [low, high).

    ``noncontiguous`` (for two or more elements) gives every other element of a tensor twice as
    wide in its last dim; ``memory_format`` a clone in that format (the two exclude each other);
    ``exclude_zero`` replaces zeros with 1 (bool, integers) or the dtype's smallest normal number
    (floating; the real part of complex). ``requires_grad`` applies to floating and complex dtypes.
    """
    integral, floating, complex_ = _dtype_groups()
    bool_or_integral = [_C.bool, *integral]
    floating_or_complex = [*floating, *complex_]
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and dtype in bool_or_integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])  # every other element of twice the width: distinct values either way

    in_bool = dtype in bool_or_integral
    in_float = dtype in floating_or_complex
    if dtype is _C.bool:
        low, high = _bounds(dtype, low, high, lowest_inclusive=0, highest_exclusive=2, default_low=0, default_high=2,
                            integral=True, floating_or_complex=False)
        result = _F.randint(low, high, shape, device=device, dtype=dtype)
    elif in_bool:
        info = iinfo(dtype)
        # randint cannot draw int64's largest value (its bound is exclusive), so int64 stops one short.
        low, high = _bounds(dtype, low, high, lowest_inclusive=info.min,
                            highest_exclusive=info.max + (1 if dtype is not _C.int64 else 0), default_low=-9,
                            default_high=10, integral=True, floating_or_complex=False)
        result = _F.randint(low, high, shape, device=device, dtype=dtype)
    elif in_float:
        info = _real_finfo(dtype)
        low, high = _bounds(dtype, low, high, lowest_inclusive=info.min, highest_exclusive=info.max, default_low=-9,
                            default_high=9, integral=False, floating_or_complex=True)
        result = _F.empty(shape, device=device, dtype=dtype)
        _uniform_random_(view_as_real(result) if dtype in complex_ else result, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by kiln.testing.make_tensor().")

    if noncontiguous:
        result = result[..., 1::2]  # offset by one, to catch offset bugs too
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)

    if exclude_zero:
        if dtype in complex_:
            parts = view_as_real(result)
            zeros = (parts == 0).all(-1)
            parts[..., 0][zeros] = _real_finfo(dtype).tiny
        else:
            result[result == 0] = 1 if in_bool else _real_finfo(dtype).tiny

    if in_float:
        result.requires_grad = requires_grad
    return result
