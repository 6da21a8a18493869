"""torch.special's orthogonal polynomials: chebyshev_polynomial_t/u/v/w,
shifted_chebyshev_polynomial_t/u/v/w, hermite_polynomial_h/he,
laguerre_polynomial_l and legendre_polynomial_p, each f(x, n).

x and n broadcast; either (not both) may be a Python number. The result has
torch's promoted dtype (integers give the default dtype; float16/bfloat16 raise
NotImplementedError as torch's CPU kernels do) and is computed in that dtype
with torch's own case analysis, so float32 results round like torch's:

* the degree is n cast to the result dtype and then truncated to an integer;
  NaN, +-inf and values beyond int64 count as negative, and a negative degree
  gives 0;
* the endpoint values (x = +-1, or x = 0, 1 for the shifted kinds) are exact;
* for large degrees inside (-1, 1) the Chebyshev kinds use their trigonometric
  forms (cos(n acos x), ...), as torch does for n > 6 (8 for U, V, W; 4 for the
  shifted W);
* otherwise the three-term recurrence runs n - 1 steps per element, stopping
  early once the element's value is NaN, as torch's kernels do (on CPU in C++,
  kiln._C._polynomial_recurrence, so a huge degree costs what it costs torch:
  Note [Polynomial recurrences run per element]); Hermite degrees above 128
  (float32) or 512 (float64) give NaN, as in torch.

Where torch returns an uninitialised value (x = NaN with n >= 2 for some kinds)
kiln returns NaN. torch records no gradient for these functions and neither
does kiln: the results never require grad."""

from __future__ import annotations

import math

from kiln._arguments import checked_signature
from kiln import _C
from kiln.special import _common as c

_F = _C._functions

_INT64_LIMIT = 2.0 ** 63


def _operands(op, x, n):
    x, n, dtype = c.binary_operands(f"special_{op}", x, n, kernel=op, names=("x", "n"))
    valid = _F.isfinite(n) & (_F.abs(n) < _INT64_LIMIT)
    degree = _F.trunc(_F.where(valid, n, _F.full_like(n, -1.0))).to(_C.int64)
    return x, degree, dtype


# The step of each recurrence form, (j, a, p, q) -> the next q: the formulas kiln._C._polynomial_recurrence
# runs per element on CPU (Note [Polynomial recurrences run per element]), here as whole-tensor steps for
# other devices. Keyed by the C++ form number.
_STEPS = {
    0: lambda j, a, p, q: a * q - p,                                       # Chebyshev kinds: a = 2y
    1: lambda j, a, p, q: a * q - (2 * j) * p,                             # Hermite H: a = 2x
    2: lambda j, a, p, q: a * q - j * p,                                   # Hermite He: a = x
    3: lambda j, a, p, q: (((j + j) + a) * q - j * p) / (j + 1),           # Laguerre: a = 1 - x
    4: lambda j, a, p, q: ((2 * j + 1) * a * q - j * p) / (j + 1),         # Legendre: a = x
}
_CHEBYSHEV, _HERMITE_H, _HERMITE_HE, _LAGUERRE, _LEGENDRE = range(5)


def _recurrence(form, a, first, steps):
    """q after (p, q) <- (q, step(j, a, p, q)) for j = 1, 2, ..., steps (elementwise) from (1, first)."""
    a, first, steps = _F.broadcast_tensors([a, first, steps])
    if a.device.type == "cpu":
        return _C._polynomial_recurrence(form, a.contiguous(), first.contiguous(), steps.contiguous())
    step = _STEPS[form]
    p, q = _F.ones_like(first), first
    total = int(c.max_item(steps, 0))
    for j in range(1, total + 1):
        update = steps >= j
        new = step(j, a, p, q)
        p, q = _F.where(update, q, p), _F.where(update, new, q)
        if j % 32 == 0 and not c.any_item((steps > j) & ~_F.isnan(q)):
            break
    return q


def _even(degree):
    return (degree % 2) == 0


def _signed(degree, value):
    """value for even degrees, -value for odd ones."""
    return _F.where(_even(degree), value, -value)


def _chebyshev(op, x, n, kind, shifted, out):
    x, degree, dtype = _operands(op, x, n)
    nf = degree.to(dtype)
    one = _F.ones_like(x)
    y = x + x - 1.0 if shifted else x
    first = {"t": y, "u": y + y, "v": y + y - 1.0, "w": y + y + 1.0}[kind]
    threshold = 4 if (shifted and kind == "w") else (6 if shifted or kind == "t" else 8)
    trig = (degree > threshold) & (_F.abs(y) < 1)
    if shifted:
        top, bottom = x == 1, x == 0
    else:
        top, bottom = x == 1, x == -1
    ends = top | bottom
    steps = _F.where((degree >= 2) & ~trig & ~ends, degree - 1, _F.zeros_like(degree))
    two_y = y + y
    result = _recurrence(_CHEBYSHEV, two_y, first, steps)
    result = _F.where(degree == 1, first, result)
    result = _F.where(degree == 0, one, result)
    result = _F.where(trig, _chebyshev_trig(kind, shifted, _F.where(trig, y, _F.zeros_like(y)), x, degree, nf), result)
    result = _F.where(ends, _chebyshev_ends(kind, top, degree, nf), result)
    result = _F.where(degree < 0, _F.zeros_like(result), result)
    return c.finish(result, out)


def _chebyshev_trig(kind, shifted, y, x, degree, nf):
    theta = _F.acos(y)
    if kind == "t":
        return _F.cos(nf * theta)
    if kind == "u":
        s = _F.sin(theta)
        return _F.where(s != 0, _F.sin((nf + 1) * theta) / s, (nf + 1) * _F.cos((nf + 1) * theta) / y)
    half = theta / 2
    twice = nf + nf + 1
    if kind == "v":
        return _F.where(_F.sin(half) != 1, _F.cos((nf + 0.5) * theta) / _F.cos(half), _signed(degree, twice))
    # cos(theta / 2) rounds to 1 only next to y = +-1, where W_n is 2n + 1 at the top and +-1 at the bottom.
    # torch's kernel returns +-1 at both ends (and reaches it at the top only where its cos rounds to 1, which
    # std::cos does not for x = 1 - 1e-16 but a vector cos may); kiln gives the top its limit, 2n + 1.
    fallback = _F.where(y > 0, twice, _signed(degree, _F.ones_like(y)))
    return _F.where(_F.cos(half) != 1, _F.sin((nf + 0.5) * theta) / _F.sin(half), fallback)


def _chebyshev_ends(kind, top, degree, nf):
    """The values at y = 1 (top) and y = -1."""
    one = _F.ones_like(nf)
    twice = nf + nf + 1
    at_top = {"t": one, "u": nf + 1, "v": one, "w": twice}[kind]
    at_bottom = {"t": _signed(degree, one), "u": _signed(degree, nf + 1), "v": _signed(degree, twice),
                 "w": _signed(degree, one)}[kind]
    return _F.where(top, at_top, at_bottom)


@checked_signature("special_chebyshev_polynomial_t(Any input, Any n, *, Tensor? out)")
def chebyshev_polynomial_t(input, n, *, out=None):
    """torch.special.chebyshev_polynomial_t: T_n(x)."""
    return _chebyshev("chebyshev_polynomial_t", input, n, "t", False, out)


@checked_signature("special_chebyshev_polynomial_u(Any input, Any n, *, Tensor? out)")
def chebyshev_polynomial_u(input, n, *, out=None):
    """torch.special.chebyshev_polynomial_u: U_n(x)."""
    return _chebyshev("chebyshev_polynomial_u", input, n, "u", False, out)


@checked_signature("special_chebyshev_polynomial_v(Any input, Any n, *, Tensor? out)")
def chebyshev_polynomial_v(input, n, *, out=None):
    """torch.special.chebyshev_polynomial_v: V_n(x)."""
    return _chebyshev("chebyshev_polynomial_v", input, n, "v", False, out)


@checked_signature("special_chebyshev_polynomial_w(Any input, Any n, *, Tensor? out)")
def chebyshev_polynomial_w(input, n, *, out=None):
    """torch.special.chebyshev_polynomial_w: W_n(x)."""
    return _chebyshev("chebyshev_polynomial_w", input, n, "w", False, out)


@checked_signature("special_shifted_chebyshev_polynomial_t(Any input, Any n, *, Tensor? out)")
def shifted_chebyshev_polynomial_t(input, n, *, out=None):
    """torch.special.shifted_chebyshev_polynomial_t: T_n(2x - 1)."""
    return _chebyshev("shifted_chebyshev_polynomial_t", input, n, "t", True, out)


@checked_signature("special_shifted_chebyshev_polynomial_u(Any input, Any n, *, Tensor? out)")
def shifted_chebyshev_polynomial_u(input, n, *, out=None):
    """torch.special.shifted_chebyshev_polynomial_u: U_n(2x - 1)."""
    return _chebyshev("shifted_chebyshev_polynomial_u", input, n, "u", True, out)


@checked_signature("special_shifted_chebyshev_polynomial_v(Any input, Any n, *, Tensor? out)")
def shifted_chebyshev_polynomial_v(input, n, *, out=None):
    """torch.special.shifted_chebyshev_polynomial_v: V_n(2x - 1)."""
    return _chebyshev("shifted_chebyshev_polynomial_v", input, n, "v", True, out)


@checked_signature("special_shifted_chebyshev_polynomial_w(Any input, Any n, *, Tensor? out)")
def shifted_chebyshev_polynomial_w(input, n, *, out=None):
    """torch.special.shifted_chebyshev_polynomial_w: W_n(2x - 1)."""
    return _chebyshev("shifted_chebyshev_polynomial_w", input, n, "w", True, out)


def _hermite(op, x, n, physicists, out):
    x, degree, dtype = _operands(op, x, n)
    one = _F.ones_like(x)
    limit = 128 if dtype == _C.float32 else 512
    first = x + x if physicists else x
    too_high = degree > limit
    steps = _F.where((degree >= 2) & ~too_high, degree - 1, _F.zeros_like(degree))
    if physicists:
        two_x = x + x
        result = _recurrence(_HERMITE_H, two_x, first, steps)
    else:
        result = _recurrence(_HERMITE_HE, x, first, steps)
    result = _F.where(too_high, _F.full_like(result, math.nan), result)
    result = _F.where(degree == 1, first, result)
    result = _F.where(degree == 0, one, result)
    result = _F.where(degree < 0, _F.zeros_like(result), result)
    return c.finish(result, out)


@checked_signature("special_hermite_polynomial_h(Any input, Any n, *, Tensor? out)")
def hermite_polynomial_h(input, n, *, out=None):
    """torch.special.hermite_polynomial_h: the physicists' Hermite polynomial H_n(x)."""
    return _hermite("hermite_polynomial_h", input, n, True, out)


@checked_signature("special_hermite_polynomial_he(Any input, Any n, *, Tensor? out)")
def hermite_polynomial_he(input, n, *, out=None):
    """torch.special.hermite_polynomial_he: the probabilists' Hermite polynomial He_n(x)."""
    return _hermite("hermite_polynomial_he", input, n, False, out)


@checked_signature("special_laguerre_polynomial_l(Any input, Any n, *, Tensor? out)")
def laguerre_polynomial_l(input, n, *, out=None):
    """torch.special.laguerre_polynomial_l: the Laguerre polynomial L_n(x) (1 at x = 0)."""
    x, degree, dtype = _operands("laguerre_polynomial_l", input, n)
    one = _F.ones_like(x)
    first = 1.0 - x
    zero = x == 0
    steps = _F.where((degree >= 2) & ~zero, degree - 1, _F.zeros_like(degree))
    result = _recurrence(_LAGUERRE, first, first, steps)
    result = _F.where(degree == 1, first, result)
    result = _F.where((degree == 0) | zero, one, result)
    result = _F.where(degree < 0, _F.zeros_like(result), result)
    return c.finish(result, out)


@checked_signature("special_legendre_polynomial_p(Any input, Any n, *, Tensor? out)")
def legendre_polynomial_p(input, n, *, out=None):
    """torch.special.legendre_polynomial_p: the Legendre polynomial P_n(x)."""
    x, degree, dtype = _operands("legendre_polynomial_p", input, n)
    one = _F.ones_like(x)
    ends = _F.abs(x) == 1
    steps = _F.where((degree >= 2) & ~ends, degree - 1, _F.zeros_like(degree))
    result = _recurrence(_LEGENDRE, x, x, steps)
    result = _F.where(degree == 1, x, result)
    result = _F.where(degree == 0, one, result)
    result = _F.where(ends, _F.where((x > 0) | _even(degree), one, -one), result)
    result = _F.where(degree < 0, _F.zeros_like(result), result)
    return c.finish(result, out)
