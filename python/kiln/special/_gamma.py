"""torch.special.gammainc / gammaincc (torch.igamma / igammac) and
torch.special.zeta (the Hurwitz zeta function) over kiln's ops.

Both are evaluated in float64 whatever the floating dtype and rounded once.

gammainc(a, x) = P(a, x), gammaincc(a, x) = Q(a, x) = 1 - P; each regime computes
whichever of P and Q it can give to full relative accuracy and the other as
1 minus it:

* a >= 20 and 1/2 <= x/a <= 2: Temme's uniform expansion (coefficients in
  _temme.py), with eta from an accurate log1p(mu) - mu;
* x <= 1.5: the series of P when x^a/Gamma(a+1) < 1/2, else the series of Q,
  Q = -expm1(a log x - lgamma(1 + a)) - x^a/Gamma(a) sum_k>=1 (-x)^k/(k! (a+k))
  (so Q(1e-300, 0.5) keeps its digits);
* x < a + 1: the series P = x^a e^-x/Gamma(a+1) sum_k x^k/((a+1)...(a+k));
* otherwise the continued fraction of Q (modified Lentz);
* x^a e^-x/Gamma(a) is sqrt(a/2pi) exp(-a (mu - log1p mu))/Gamma*(a) for a >= 10
  (Stirling's series for Gamma*), so nothing is lost to a log x - x cancelling.

torch's special values are kept: nan for a < 0 or x < 0; P(0, x) = 1 for x > 0
(nan at x = 0); P(a, 0) = 0; P(inf, x) = 0 (nan at x = inf); P(a, inf) = 1.
Gradient: d/dx P = x^(a-1) e^-x / Gamma(a) (negated for Q); a backward through a
(the first argument) raises torch's NotImplementedError.

zeta(x, q) = sum_k (q + k)^-x: direct terms (those with q + k < 0 first, when q
is negative and x an integer) until q + N >= max(10, x) or until the rest is
below 1e-17 of the sum, then the Euler-Maclaurin tail with 12 Bernoulli terms.
torch's special cases: inf at x = 1, nan for x < 1, inf at q a non-positive
integer, nan for q < 0 with x not an integer. Gradient: d/dq = -x zeta(x+1, q);
through x it raises NotImplementedError, as torch does."""

from __future__ import annotations

import functools

import math
from fractions import Fraction

from kiln import _C, _dtypes
from kiln._arguments import checked_signature
from kiln.autograd import grad_mode
from kiln.autograd.function import Function
from kiln.special import _common as c
from kiln.special._temme import TEMME

_F = _C._functions

_EPS = 1e-17
_MAX_TERMS = 2000


def _bernoulli(count):
    """B_0 .. B_{count-1} as Fractions (B_1 = -1/2)."""
    b = [Fraction(1)]
    for m in range(1, count):
        b.append(-sum(Fraction(math.comb(m + 1, j)) * b[j] for j in range(m)) / (m + 1))
    return b


_B = _bernoulli(30)
_STIRLING = [float(_B[2 * j] / (2 * j * (2 * j - 1))) for j in range(1, 10)]  # log Gamma* = sum s_j a^(1-2j)
_EM = [float(_B[2 * j] / math.factorial(2 * j)) for j in range(1, 13)]  # B_2j / (2j)!


def _zeta_scalar(s):
    n = 20
    total = sum(k ** -s for k in range(1, n))
    total += n ** (1 - s) / (s - 1) + 0.5 * n ** -s
    factor = s * n ** (-s - 1)
    for j in range(1, 8):
        total += _EM[j - 1] * factor
        factor *= (s + 2 * j - 1) * (s + 2 * j) / (n * n)
    return total


_LGAMMA1P = [0.0, -c.EULER_GAMMA] + [(-1) ** k * _zeta_scalar(k) / k for k in range(2, 27)]


def lgamma1p(a):
    """lgamma(1 + a) for a float64 tensor a >= 0, accurate also for tiny a."""
    small = a < 0.2
    series = c.horner(_LGAMMA1P, _F.where(small, a, _F.zeros_like(a)))
    return _F.where(small, series, _F.lgamma(a + 1))


def log1pmx(mu, lam):
    """mu - log1p(mu), mu = lam - 1, without cancellation."""
    near = _F.abs(mu) <= 0.5
    m = _F.where(near, mu, _F.zeros_like(mu))
    t = m / (2 + m)
    t2 = t * t
    series = c.horner([1.0 / (2 * j + 3) for j in range(18)], t2) * t2 * t
    inner = m * t - 2 * series
    safe = _F.where(near, _F.ones_like(lam), lam)
    return _F.where(near, inner, mu - _F.log(safe))


def _log_gamma_star(a):
    """log Gamma*(a) = lgamma(a) - (a - 1/2) log a + a - log(2 pi)/2, by Stirling's series (a >= 10)."""
    inv = 1.0 / a
    return c.horner(_STIRLING, inv * inv) * inv


def _prefactor(a, x, mu, lam):
    """x^a e^-x / Gamma(a)."""
    large = a >= 10
    al = _F.where(large, a, _F.full_like(a, 10.0))
    stirling = _F.sqrt(al / (2 * math.pi)) * _F.exp(-al * log1pmx(mu, lam) - _log_gamma_star(al))
    direct = a * _F.exp(a * _F.log(x) - x - lgamma1p(a))
    return _F.where(large, stirling, direct)


def _temme(a, mu, lam):
    """(P, Q) by Temme's expansion."""
    half_eta2 = log1pmx(mu, lam)
    eta = _F.sign(mu) * _F.sqrt(2 * half_eta2)
    inv_a = 1.0 / a
    total = c.horner(TEMME[-1], eta)
    for row in reversed(TEMME[:-1]):
        total = total * inv_a + c.horner(row, eta)
    r = _F.exp(-a * half_eta2) / _F.sqrt(2 * math.pi * a) * total
    z = eta * _F.sqrt(a * 0.5)
    return 0.5 * _F.erfc(-z) - r, 0.5 * _F.erfc(z) + r


def _p_series(a, x, prefactor):
    """P = x^a e^-x/Gamma(a+1) sum_k x^k / ((a+1)...(a+k))."""
    term = _F.ones_like(x)
    total = _F.ones_like(x)
    for j in range(1, _MAX_TERMS):
        term = term * x / (a + j)
        total = total + term
        if j % 16 == 0 and not c.any_item(term > _EPS * total):
            break
    return prefactor / a * total


def _q_series(a, x):
    """Q for small x: -expm1(u) - a e^u sum_k>=1 (-x)^k / (k! (a + k)), u = a log x - lgamma(1 + a)."""
    u = a * _F.log(x) - lgamma1p(a)
    term = _F.ones_like(x)
    total = _F.zeros_like(x)
    for j in range(1, 32):
        term = term * (-x) / j
        total = total + term / (a + j)
    return -_F.expm1(u) - a * _F.exp(u) * total


def _q_fraction(a, x, prefactor):
    """Q = x^a e^-x/Gamma(a) / (x + 1 - a - 1(1 - a)/(x + 3 - a - ...)), by the modified Lentz method."""
    tiny = 1e-300
    b = x + 1 - a
    cc = _F.full_like(x, 1.0 / tiny)
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = _F.where(_F.abs(d) < tiny, _F.full_like(d, tiny), d)
        cc = b + an / cc
        cc = _F.where(_F.abs(cc) < tiny, _F.full_like(cc, tiny), cc)
        d = 1.0 / d
        delta = d * cc
        h = h * delta
        if i % 16 == 0 and not c.any_item(_F.abs(delta - 1) > _EPS):
            break
    return prefactor * h


def igamma64(a, x):
    """(P(a, x), Q(a, x)) of float64 tensors of one shape."""
    valid = (a > 0) & (x > 0) & _F.isfinite(a) & _F.isfinite(x)
    a_ = _F.where(valid, a, _F.ones_like(a))
    x_ = _F.where(valid, x, _F.ones_like(x))
    lam = x_ / a_
    mu = (x_ - a_) / a_
    temme = valid & (a_ >= 20) & (lam >= 0.5) & (lam <= 2)
    small_x = valid & ~temme & (x_ <= 1.5)
    use_q = small_x & (a_ * _F.log(x_) - lgamma1p(a_) > math.log(0.5))
    p_series = valid & ~temme & ~use_q & (small_x | (x_ < a_ + 1))
    fraction = valid & ~temme & ~small_x & ~p_series
    one = _F.ones_like(x_)

    p = _F.zeros_like(x_)
    q = _F.zeros_like(x_)
    if c.any_item(temme):
        at = _F.where(temme, a_, _F.full_like(a_, 20.0))
        pt, qt = _temme(at, _F.where(temme, mu, _F.zeros_like(mu)), _F.where(temme, lam, one))
        p, q = _F.where(temme, pt, p), _F.where(temme, qt, q)
    if c.any_item(use_q):
        qs = _q_series(_F.where(use_q, a_, one), _F.where(use_q, x_, one))
        p, q = _F.where(use_q, 1 - qs, p), _F.where(use_q, qs, q)
    if c.any_item(p_series):
        ap, xp = _F.where(p_series, a_, one), _F.where(p_series, x_, _F.full_like(x_, 0.5))
        ps = _p_series(ap, xp, _prefactor(ap, xp, (xp - ap) / ap, xp / ap))
        p, q = _F.where(p_series, ps, p), _F.where(p_series, 1 - ps, q)
    if c.any_item(fraction):
        af, xf = _F.where(fraction, a_, one), _F.where(fraction, x_, _F.full_like(x_, 3.0))
        qf = _q_fraction(af, xf, _prefactor(af, xf, (xf - af) / af, xf / af))
        p, q = _F.where(fraction, 1 - qf, p), _F.where(fraction, qf, q)
    return _igamma_special(a, x, p, q, valid)


def _igamma_special(a, x, p, q, valid):
    nan = _F.full_like(p, math.nan)
    zero, one = _F.zeros_like(p), _F.ones_like(p)
    p, q = _F.where(valid, p, nan), _F.where(valid, q, nan)
    cases = [  # (condition, P, Q), later entries win
        (_F.isinf(x), one, zero),
        (_F.isinf(a), _F.where(_F.isinf(x), nan, zero), _F.where(_F.isinf(x), nan, one)),
        (x == 0, zero, one),
        (a == 0, _F.where(x > 0, one, nan), _F.where(x > 0, zero, nan)),
        ((x < 0) | (a < 0), nan, nan),
    ]
    for cond, pv, qv in cases:
        p, q = _F.where(cond, pv, p), _F.where(cond, qv, q)
    return p, q


def _em_tail(x, w):
    """Euler-Maclaurin: sum_{k>=0} (w + k)^-x - w^-x/2 ... i.e. int_w^inf + w^-x/2 + Bernoulli corrections."""
    power = _F.pow(w, -x)
    total = power * w / (x - 1) + 0.5 * power
    factor = x * power / w
    w2 = w * w
    for j, coefficient in enumerate(_EM, start=1):
        total = total + coefficient * factor
        factor = factor * (x + 2 * j - 1) * (x + 2 * j) / w2
    return total


def _direct_sum(x, q, count):
    """sum_{k < count} (q + k)^-x, elementwise count."""
    total = _F.zeros_like(x)
    limit = int(c.max_item(count, 0))
    for j in range(limit):
        use = count > j
        base = _F.where(use, q + j, _F.ones_like(q))
        total = total + _F.where(use, _F.pow(base, -x), _F.zeros_like(x))
    return total


def zeta64(x, q):
    """The Hurwitz zeta function of float64 tensors of one shape, with torch's special values."""
    integer_x = x == _F.floor(x)
    negative_ok = (q < 0) & (q != _F.floor(q)) & integer_x
    regular = (x > 1) & _F.isfinite(x) & _F.isfinite(q) & ((q > 0) | negative_ok)
    xr = _F.where(regular, x, _F.full_like(x, 2.0))
    qr = _F.where(regular, q, _F.ones_like(q))
    shift = _F.where(qr < 0, _F.ceil(-qr), _F.zeros_like(qr))
    total = _direct_sum(xr, qr, shift)
    qs = qr + shift  # in (0, 1) after a shift
    wanted = _F.clamp(_F.ceil(_F.clamp(xr, min=10.0) - qs), min=0.0)
    enough = _F.ceil(qs * _F.expm1(39.0 / xr))
    negligible = enough < wanted
    count = _F.where(negligible, enough, wanted)
    total = total + _direct_sum(xr, qs, count)
    tail = _em_tail(xr, qs + count)
    total = total + _F.where(negligible, _F.zeros_like(tail), tail)
    nan, inf = _F.full_like(x, math.nan), _F.full_like(x, math.inf)
    result = _F.where(regular, total, nan)
    at_inf = _F.where(q == 1, _F.ones_like(x), _F.where((q > 0) & (q < 1) | negative_ok, inf, nan))
    result = _F.where(_F.isinf(x) & (x > 0) & ~_F.isnan(q), at_inf, result)
    nonpositive = q <= 0
    result = _F.where(nonpositive & ~integer_x, nan, result)
    result = _F.where(nonpositive & (q == _F.floor(q)), inf, result)
    result = _F.where(x < 1, nan, result)
    return _F.where(x == 1, inf, result)


@functools.cache
def _functions():
    """The autograd Functions, made on first use."""

    def _density(a, x):
        return _F.exp((a - 1) * _F.log(x) - x - _F.lgamma(a))

    def _make(name, upper):
        class IncompleteGamma(Function):
            @staticmethod
            def forward(ctx, a, x):
                p, q = igamma64(c.as64(a), c.as64(x))
                ctx.save_for_backward(a, x)
                return (q if upper else p).to(a.dtype)

            @staticmethod
            def backward(ctx, grad):
                a, x = ctx.saved_tensors
                if ctx.needs_input_grad[0]:
                    raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
                g = grad * _density(a, x)
                return None, (-g if upper else g)

        IncompleteGamma.__name__ = "Igammac" if upper else "Igamma"
        return IncompleteGamma

    class Zeta(Function):
        @staticmethod
        def forward(ctx, x, q):
            ctx.save_for_backward(x, q)
            return zeta64(c.as64(x), c.as64(q)).to(x.dtype)

        @staticmethod
        def backward(ctx, grad):
            x, q = ctx.saved_tensors
            if ctx.needs_input_grad[0]:
                raise NotImplementedError("the derivative for 'zeta' is not implemented.")
            return None, grad * -x * zeta(x + 1.0, q)

    return {"igamma": _make("igamma", False), "igammac": _make("igammac", True), "zeta": Zeta}


def _incomplete(kernel, op, input, other, out):
    c.check_tensor(op, input, "input", 1)
    c.check_tensor(op, other, "other", 2)
    dtype = _dtypes.result_type(input, other)
    if not dtype.is_floating_point:
        raise c.not_implemented(kernel, dtype, input.device.type)
    a, x, _ = c.binary_operands(op, input, other, kernel=kernel, half_ok=True, scalars=False, detach=False)
    return c.finish(_functions()[kernel].apply(a, x), out)


@checked_signature("special_gammainc(Tensor input, Tensor other, *, Tensor? out)")
def gammainc(input, other, *, out=None):
    """torch.special.gammainc: the regularised lower incomplete gamma function P(input, other)."""
    return _incomplete("igamma", "special_gammainc", input, other, out)


@checked_signature("special_gammaincc(Tensor input, Tensor other, *, Tensor? out)")
def gammaincc(input, other, *, out=None):
    """torch.special.gammaincc: the regularised upper incomplete gamma function Q(input, other)."""
    return _incomplete("igammac", "special_gammaincc", input, other, out)


@checked_signature("igamma(Tensor input, Tensor other, *, Tensor? out)")
def igamma(input, other, *, out=None):
    """torch.igamma: as special.gammainc."""
    return _incomplete("igamma", "igamma", input, other, out)


@checked_signature("igammac(Tensor input, Tensor other, *, Tensor? out)")
def igammac(input, other, *, out=None):
    """torch.igammac: as special.gammaincc."""
    return _incomplete("igammac", "igammac", input, other, out)


@checked_signature("special_zeta(Any input, Any other, *, Tensor? out)")
def zeta(input, other, *, out=None):
    """torch.special.zeta: the Hurwitz zeta function sum_k (other + k)^-input; either argument may be a
    Python number."""
    a, q, _ = c.binary_operands("special_zeta", input, other, kernel="zeta", detach=False)
    return c.finish(_functions()["zeta"].apply(a, q), out)


def _inplace(self, result):
    with grad_mode.no_grad():
        self.copy_(result.detach())
    return self


def tensor_igamma(self, other):
    return igamma(self, other)


def tensor_igamma_(self, other):
    return _inplace(self, igamma(self, other))


def tensor_igammac(self, other):
    return igammac(self, other)


def tensor_igammac_(self, other):
    return _inplace(self, igammac(self, other))


@checked_signature("special_multigammaln(Tensor input, int p, *, Tensor? out)")
def multigammaln(input, p, *, out=None, _op="special_multigammaln"):
    """log of the multivariate gamma function of dimension p: sum_j lgamma(x - j/2) + p (p-1)/4 log(pi)
    (torch.mvlgamma). Integer inputs give the default dtype."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{_op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"{_op}(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = c.float_input(_op, input)
    offsets = _F.arange(p, dtype=x.dtype) * -0.5
    result = _F.lgamma(x.unsqueeze(-1) + offsets).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result
