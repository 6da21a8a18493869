"""torch's window functions: hann, hamming, blackman, bartlett and kaiser."""

from __future__ import annotations

import math

from kiln import _C
from kiln._arguments import checked_signature
from kiln._messages import _type_word
from kiln._pointwise import i0

_F = _C._functions


def _window(name, window_length, periodic, dtype, requires_grad, terms):
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        result = _F.ones(window_length, dtype=dtype)
    else:
        n = window_length + 1 if periodic else window_length
        k = _F.arange(window_length, dtype=_C.float64)
        result = terms(k, n - 1).to(dtype)
    return result.requires_grad_(requires_grad) if requires_grad else result


def _cosine_sum(coefficients):
    def terms(k, span):
        total = _F.full_like(k, coefficients[0])
        for j, a in enumerate(coefficients[1:], 1):
            total = total + ((-1) ** j) * a * _F.cos(k * (2 * math.pi * j / span))
        return total

    return terms


@checked_signature("hann_window(int window_length, Any periodic, *, ScalarType? dtype, Any layout, Any device, "
                   "bool? pin_memory)")
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, requires_grad, _cosine_sum((0.5, 0.5)))


@checked_signature("hamming_window(int window_length, Any periodic, Any alpha, Any beta, *, ScalarType? dtype, "
                   "Any layout, Any device, bool? pin_memory)")
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _cosine_sum((alpha, beta)))


@checked_signature("blackman_window(int window_length, Any periodic, *, ScalarType? dtype, Any layout, Any device, "
                   "bool? pin_memory)")
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   _cosine_sum((0.42, 0.5, 0.08)))


@checked_signature("bartlett_window(int window_length, Any periodic, *, ScalarType? dtype, Any layout, Any device, "
                   "bool? pin_memory)")
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, span: 1 - _F.abs(k * (2 / span) - 1))


@checked_signature("kaiser_window(int window_length, Any periodic, Any beta, *, ScalarType? dtype, Any layout, "
                   "Any device, bool? pin_memory)")
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """torch.kaiser_window: I0(beta * sqrt(1 - ((k - a) / a)^2)) / I0(beta), a = (N - 1) / 2, for
    k < N = window_length (+ 1 when ``periodic``, the last point then dropped); evaluated in
    float32 (float64 for a float64 window), as torch's opmath."""
    if not isinstance(window_length, int) or isinstance(window_length, bool):
        raise TypeError(f"kaiser_window(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"kaiser_window expects floating point dtypes, got: TensorOptions("
                           f"dtype={_type_word(dtype)}, device=cpu, layout=Strided (default), requires_grad=false (default), "
                           f"pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        result = _F.ones(window_length, dtype=dtype)
    else:
        n = window_length + 1 if periodic else window_length
        compute = _C.float64 if dtype == _C.float64 else _C.float32
        alpha = (n - 1) / 2.0
        k = _F.arange(n, dtype=compute)
        ratio = (k - alpha) / alpha
        argument = float(beta) * _F.sqrt(_F.abs(1 - ratio.pow(2.0)))
        result = (i0(argument) / i0(_F.full((), float(beta), dtype=compute)))[:window_length].to(dtype)
        result = result.contiguous()
    return result.requires_grad_(True) if requires_grad else result
