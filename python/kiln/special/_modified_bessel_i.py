"""torch.special's modified Bessel functions of the first kind i0, i0e, i1 and i1e, over
kiln's ops (kiln/special/_bessel.py's modified_bessel_i0/i1 use _bessel_i too).

The Bessel values are computed in float64 whatever the input's floating dtype
(integers and bool become the default dtype) and rounded once to it: the
power series I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k+nu)!) for |x| <= 20
(all its terms are positive, so it loses nothing to cancellation), and
beyond that the large-argument expansion
I_nu(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k x^k),
both within about 5 ulp of float64 over the whole line. Each function is a
kiln.autograd.Function whose backward is torch's formula (i0' = i1,
i0e' = i1e - sgn(x) i0e, i1' = i0 - i1/x, i1e' = i0e - i1e (sgn(x) + 1/x), both
1/2 at 0), written with these functions, so it can be differentiated again.
Like torch, i0 and i1 give nan at +-inf; i0e and i1e give +-0 there."""

from __future__ import annotations

import functools
import math

from kiln import _C
from kiln._arguments import checked_signature
from kiln.autograd import grad_mode
from kiln.autograd.function import Function
from kiln.special import _common

_F = _C._functions

_SERIES_LIMIT = 20.0
_SERIES_TERMS = 36
_ASYMPTOTIC_TERMS = 26


def _series_coefficients(nu):
    return [1.0 / (math.factorial(k) * math.factorial(k + nu)) for k in range(_SERIES_TERMS)]


def _asymptotic_coefficients(nu):
    coefficients, c = [1.0], 1.0
    for k in range(1, _ASYMPTOTIC_TERMS):
        c *= -(4 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)
        coefficients.append(c)
    return coefficients


_COEFFICIENTS = {nu: (_series_coefficients(nu), _asymptotic_coefficients(nu)) for nu in (0, 1)}


def _horner(coefficients, t):
    result = t * coefficients[-1] + coefficients[-2]
    for c in reversed(coefficients[:-2]):
        result = result * t + c
    return result


def _bessel_i(nu, x, scaled):
    """I_nu(x) (scaled: e^-|x| I_nu(x)) in x's dtype, computed in float64, not recorded by autograd."""

    series, asymptotic = _COEFFICIENTS[nu]
    with grad_mode.no_grad():
        x64 = x.detach().to(_C.float64)
        a = x64.abs()
        small = a <= _SERIES_LIMIT
        xs = _F.where(small, x64, _F.zeros_like(x64))
        near = _horner(series, xs * xs * 0.25)
        if nu == 1:
            near = near * (xs * 0.5) + 0.0  # -0 in gives +0 out, as torch's
        if scaled:
            near = near * _F.exp(-xs.abs())
        xl = _F.where(small, _F.full_like(a, 2 * _SERIES_LIMIT), a)
        far = _horner(asymptotic, 1.0 / xl) / _F.sqrt(2 * math.pi * xl)
        if not scaled:
            half = _F.exp(xl * 0.5)  # e^x as two factors: no early overflow, no rounding of x - log(...)
            far = far * half * half
            far = _F.where(_F.isinf(xl), _F.full_like(far, math.nan), far)
        if nu == 1:
            far = far * _F.sign(x64)
        return _F.where(small, near, far).to(x.dtype)


@functools.cache
def _functions():
    """The autograd Functions, made on first use."""

    def _at_zero_half(x, value):
        return _F.where(x == 0, _F.full_like(value, 0.5), value)

    class I0(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return _bessel_i(0, x, False)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * i1(x)

    class I0e(Function):
        @staticmethod
        def forward(ctx, x):
            result = _bessel_i(0, x, True)
            ctx.save_for_backward(x)
            return result

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (i1e(x) - _F.sgn(x) * i0e(x))

    class I1(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return _bessel_i(1, x, False)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * _at_zero_half(x, i0(x) - i1(x) / x)

    class I1e(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return _bessel_i(1, x, True)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * _at_zero_half(x, i0e(x) - i1e(x) * (_F.sgn(x) + 1 / x))

    return {"i0": I0, "i0e": I0e, "i1": I1, "i1e": I1e}


def _apply(name, input, out, op=None):
    result = _functions()[name].apply(_common.float_input(op or f"special_{name}", input))
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result


@checked_signature("special_i0(Tensor input, *, Tensor? out)")
def i0(input, *, out=None, _op=None):
    """The modified Bessel function of the first kind of order 0."""
    return _apply("i0", input, out, _op)


@checked_signature("special_i0e(Tensor input, *, Tensor? out)")
def i0e(input, *, out=None):
    """exp(-|x|) i0(x)."""
    return _apply("i0e", input, out)


@checked_signature("special_i1(Tensor input, *, Tensor? out)")
def i1(input, *, out=None):
    """The modified Bessel function of the first kind of order 1."""
    return _apply("i1", input, out)


@checked_signature("special_i1e(Tensor input, *, Tensor? out)")
def i1e(input, *, out=None):
    """exp(-|x|) i1(x)."""
    return _apply("i1e", input, out)
