"""Whole-tensor comparisons PyTorch composes from pointwise ops: isclose,
allclose and equal (aten/src/ATen/native/TensorCompare.cpp's definitions,
written over kiln's ops)."""

from __future__ import annotations

import builtins

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature

# PyTorch's ScalarType names, as its dtype-mismatch errors print them.
SCALAR_TYPE_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
    "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}


def scalar_type_name(dtype) -> str:
    return SCALAR_TYPE_NAMES[str(dtype).removeprefix("kiln.")]


@checked_signature("isclose(Tensor input, Tensor other, float rtol, float atol, bool equal_nan)")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (broadcasting); infinities are close
    to themselves, NaNs to each other only with ``equal_nan``."""
    _require_tensor(input, "isclose", "input", 1)
    _require_tensor(other, "isclose", "other", 2)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{scalar_type_name(input.dtype)} did not match {scalar_type_name(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = _C._functions.eq(input, other)
    floating = input.dtype.is_floating_point or input.dtype.is_complex
    if equal_nan and floating:
        close = close | (_C._functions.isnan(input) & _C._functions.isnan(other))
    if rtol == 0 and atol == 0:
        return close
    if input.dtype == _C.bool:  # torch measures booleans' distance in the default float dtype
        input, other = input.to(_C.get_default_dtype()), other.to(_C.get_default_dtype())
        floating = True
    allowed = _C._functions.abs(other * rtol) + atol
    actual = _C._functions.abs(input - other)
    if floating:
        return close | (_C._functions.isfinite(actual) & (actual <= allowed))
    return close | (actual <= allowed)


@checked_signature("allclose(Tensor input, Tensor other, float rtol, float atol, bool equal_nan)")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> builtins.bool:
    """Whether every element of ``input`` is close to ``other`` (see isclose)."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@checked_signature("equal(Tensor input, Tensor other)")
def equal(input, other) -> builtins.bool:
    """True when both tensors have the same size and equal elements (NaN is not equal to NaN)."""
    _require_tensor(input, "equal", "input", 1)
    _require_tensor(other, "equal", "other", 2)
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool(_C._functions.eq(input, other).all().item())
