"""torch.special's erfcx, log_ndtr, ndtri and entr over kiln's ops.

erfcx, log_ndtr and ndtri are evaluated in float64 whatever the floating input
dtype (integers and bool give the default dtype; float16/bfloat16 raise
NotImplementedError as torch's CPU kernels do) and rounded once:

* erfcx(x) = exp(x^2) erfc(x): for 0 <= x < 25 as exp(h^2) exp(l (2h + l)) erfc(x)
  with x = h + l split so that h^2 is exact (no error from rounding x^2); for
  x >= 25 the asymptotic series 1/(x sqrt(pi)) sum (-1)^k (2k-1)!!/(2x^2)^k; for
  x < 0 the reflection 2 exp(x^2) - erfcx(-x) (inf once exp(x^2) overflows).
* log_ndtr(x) = log(erfcx(-x/sqrt 2)/2) - x^2/2 for x < -1 and
  log1p(-erfc(x/sqrt 2)/2) above, so neither tail underflows.
* ndtri(p): with q = min(p, 1 - p) (1 - p is exact for p >= 1/2), Newton's method
  on log_ndtr(x) = log q from a rational first guess in the tails, and on
  erf(x/sqrt 2) = 2p - 1 near the centre, where 2p - 1 is exact.

Each is a kiln.autograd.Function whose backward is torch's formula, written with
these functions so it can be differentiated again. entr is computed in the input's
dtype, like torch's (float16 too)."""

from __future__ import annotations

import functools

import math

from kiln import _C
from kiln._arguments import checked_signature
from kiln.autograd.function import Function
from kiln.special import _common as c

_F = _C._functions

_SPLIT = 2.0 ** 20
_ERFCX_ASYMPTOTIC = 25.0


def exp_square(x, scale=1.0, limit=30.0):
    """exp(scale x^2) for a float64 tensor, without the error of rounding x^2 (|x| is clamped to ``limit``,
    where the result has long over- or underflowed)."""
    x = _F.clamp(x, -limit, limit)
    hi = _F.round(x * _SPLIT) / _SPLIT
    lo = x - hi
    return _F.exp(hi * hi * scale) * _F.exp(lo * (2 * hi + lo) * scale)


def _erfcx_asymptotic(x):
    inv = 1.0 / (2 * x * x)
    coefficients, term = [1.0], 1.0
    for j in range(1, 10):
        term *= -(2 * j - 1)
        coefficients.append(term)
    return c.horner(coefficients, inv) / (x * c.SQRT_PI) + _F.zeros_like(x)


def _erfcx_nonnegative(a):
    """erfcx for a >= 0 (nan passes through)."""
    big = a >= _ERFCX_ASYMPTOTIC
    near = exp_square(_F.where(big, _F.zeros_like(a), a)) * _F.erfc(_F.where(big, _F.zeros_like(a), a))
    far = _erfcx_asymptotic(_F.where(big, a, _F.full_like(a, _ERFCX_ASYMPTOTIC)))
    return _F.where(big, far, near)


def erfcx64(x):
    """erfcx of a float64 tensor."""
    positive = _erfcx_nonnegative(_F.abs(x))
    negative = 2 * exp_square(x) - positive
    return _F.where(x >= 0, positive, negative)


def log_ndtr64(x):
    """log of the standard normal CDF of a float64 tensor."""
    low = x < -1
    xl = _F.where(low, x, _F.full_like(x, -2.0))
    left = _F.log(erfcx64(-xl * (1 / math.sqrt(2))) * 0.5) - xl * xl * 0.5
    xr = _F.where(low, _F.zeros_like(x), x)
    # ndtr(-x) = erfcx(x/sqrt2) exp(-x^2/2) / 2: no error from rounding x/sqrt2 inside erfc's steep tail
    upper_tail = 0.5 * _erfcx_nonnegative(_F.abs(xr) * (1 / math.sqrt(2))) * exp_square(xr, -0.5, 40.0)
    tail = _F.where(xr > 0, upper_tail, 0.5 * _F.erfc(xr * (1 / math.sqrt(2))))
    right = _F.log1p(-tail)
    return _F.where(low, left, right)


def _ndtri_guess(q):
    """A first guess (error < 5e-4) of ndtri(q) for 0 < q <= 1/2."""
    t = _F.sqrt(-2 * _F.log(q))
    numerator = c.horner([2.515517, 0.802853, 0.010328], t)
    denominator = c.horner([1.0, 1.432788, 0.189269, 0.001308], t)
    return numerator / denominator - t


def ndtri64(p):
    """The inverse of the standard normal CDF of a float64 tensor."""
    upper = p > 0.5
    q = _F.where(upper, 1 - p, p)
    inside = (q > 0) & (q <= 0.5)
    q = _F.where(inside, q, _F.full_like(q, 0.25))
    x = _ndtri_guess(q)
    log_q = _F.log(q)
    for _ in range(4):
        lx = log_ndtr64(x)
        x = x - (lx - log_q) * c.SQRT_2PI * _F.exp(x * x * 0.5 + lx)
    central = _F.abs(p - 0.5) < 0.25
    y = _F.where(central, 2 * p - 1, _F.zeros_like(p))
    z = _F.erfinv(y)
    for _ in range(2):
        z = z - (_F.erf(z) - y) * (c.SQRT_PI * 0.5) * exp_square(z)
    tail = _F.where(upper, -x, x)
    result = _F.where(central, z * math.sqrt(2), tail)
    result = _F.where(p == 0, _F.full_like(p, -math.inf), result)
    result = _F.where(p == 1, _F.full_like(p, math.inf), result)
    return _F.where((p < 0) | (p > 1) | _F.isnan(p), _F.full_like(p, math.nan), result)


def _entr_forward(x):
    positive = x > 0
    safe = _F.where(positive, x, _F.ones_like(x))
    result = _F.where(positive, -safe * _F.log(safe), _F.zeros_like(x))
    result = _F.where(x < 0, _F.full_like(x, -math.inf), result)
    return _F.where(_F.isnan(x), x, result)


@functools.cache
def _functions():
    """The autograd Functions, made on first use."""

    class Erfcx(Function):
        @staticmethod
        def forward(ctx, x):
            result = erfcx64(c.as64(x)).to(x.dtype)
            ctx.save_for_backward(x, result)
            return result

        @staticmethod
        def backward(ctx, grad):
            x, result = ctx.saved_tensors
            return (2.0 * x * erfcx(x) - 2.0 / c.SQRT_PI) * grad

    class LogNdtr(Function):
        @staticmethod
        def forward(ctx, x):
            result = log_ndtr64(c.as64(x)).to(x.dtype)
            ctx.save_for_backward(x)
            return result

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad / c.SQRT_2PI * _F.exp(-(log_ndtr(x) + x * x / 2))

    class Ndtri(Function):
        @staticmethod
        def forward(ctx, p):
            result = ndtri64(c.as64(p)).to(p.dtype)
            ctx.save_for_backward(p)
            return result

        @staticmethod
        def backward(ctx, grad):
            (p,) = ctx.saved_tensors
            x = ndtri(p)
            return grad * c.SQRT_2PI * _F.exp(x * x / 2)

    class Entr(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return _entr_forward(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * -(1 + _F.log(x))

    return {"erfcx": Erfcx, "log_ndtr": LogNdtr, "ndtri": Ndtri, "entr": Entr}


def _unary(name, input, out, half_ok=False):
    op = f"special_{name}"
    c.check_tensor(op, input)
    dtype = c.float_dtype(name, input, half_ok=half_ok)
    return c.finish(_functions()[name].apply(input.to(dtype)), out)


@checked_signature("special_erfcx(Tensor input, *, Tensor? out)")
def erfcx(input, *, out=None):
    """torch.special.erfcx: exp(x^2) erfc(x), accurate over the whole line (inf below x ~ -26.6)."""
    return _unary("erfcx", input, out)


@checked_signature("special_log_ndtr(Tensor input, *, Tensor? out)")
def log_ndtr(input, *, out=None):
    """torch.special.log_ndtr: log of the standard normal CDF, without underflow in either tail."""
    return _unary("log_ndtr", input, out)


@checked_signature("special_ndtri(Tensor input, *, Tensor? out)")
def ndtri(input, *, out=None):
    """torch.special.ndtri: the standard normal quantile (-inf at 0, inf at 1, nan outside [0, 1])."""
    return _unary("ndtri", input, out)


@checked_signature("special_entr(Tensor input, *, Tensor? out)")
def entr(input, *, out=None):
    """torch.special.entr: -x log x for x > 0, 0 at 0, -inf below 0."""
    return _unary("entr", input, out, half_ok=True)
