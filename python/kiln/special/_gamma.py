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

from kiln import _C
from kiln.autograd.function import Function
from kiln.special import _common as c
from kiln.special._temme import TEMME

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
    k = c.kiln()
    small = a < 0.2
    series = c.horner(_LGAMMA1P, k.where(small, a, k.zeros_like(a)))
    return k.where(small, series, k.lgamma(a + 1))


def log1pmx(mu, lam):
    """mu - log1p(mu), mu = lam - 1, without cancellation."""
    k = c.kiln()
    near = k.abs(mu) <= 0.5
    m = k.where(near, mu, k.zeros_like(mu))
    t = m / (2 + m)
    t2 = t * t
    series = c.horner([1.0 / (2 * j + 3) for j in range(18)], t2) * t2 * t
    inner = m * t - 2 * series
    safe = k.where(near, k.ones_like(lam), lam)
    return k.where(near, inner, mu - k.log(safe))


def _log_gamma_star(a):
    """log Gamma*(a) = lgamma(a) - (a - 1/2) log a + a - log(2 pi)/2, by Stirling's series (a >= 10)."""
    inv = 1.0 / a
    return c.horner(_STIRLING, inv * inv) * inv


def _prefactor(a, x, mu, lam):
    """x^a e^-x / Gamma(a)."""
    k = c.kiln()
    large = a >= 10
    al = k.where(large, a, k.full_like(a, 10.0))
    stirling = k.sqrt(al / (2 * math.pi)) * k.exp(-al * log1pmx(mu, lam) - _log_gamma_star(al))
    direct = a * k.exp(a * k.log(x) - x - lgamma1p(a))
    return k.where(large, stirling, direct)


def _temme(a, mu, lam):
    """(P, Q) by Temme's expansion."""
    k = c.kiln()
    half_eta2 = log1pmx(mu, lam)
    eta = k.sign(mu) * k.sqrt(2 * half_eta2)
    inv_a = 1.0 / a
    total = c.horner(TEMME[-1], eta)
    for row in reversed(TEMME[:-1]):
        total = total * inv_a + c.horner(row, eta)
    r = k.exp(-a * half_eta2) / k.sqrt(2 * math.pi * a) * total
    z = eta * k.sqrt(a * 0.5)
    return 0.5 * k.erfc(-z) - r, 0.5 * k.erfc(z) + r


def _p_series(a, x, prefactor):
    """P = x^a e^-x/Gamma(a+1) sum_k x^k / ((a+1)...(a+k))."""
    k = c.kiln()
    term = k.ones_like(x)
    total = k.ones_like(x)
    for j in range(1, _MAX_TERMS):
        term = term * x / (a + j)
        total = total + term
        if j % 16 == 0 and not c.any_item(term > _EPS * total):
            break
    return prefactor / a * total


def _q_series(a, x):
    """Q for small x: -expm1(u) - a e^u sum_k>=1 (-x)^k / (k! (a + k)), u = a log x - lgamma(1 + a)."""
    k = c.kiln()
    u = a * k.log(x) - lgamma1p(a)
    term = k.ones_like(x)
    total = k.zeros_like(x)
    for j in range(1, 32):
        term = term * (-x) / j
        total = total + term / (a + j)
    return -k.expm1(u) - a * k.exp(u) * total


def _q_fraction(a, x, prefactor):
    """Q = x^a e^-x/Gamma(a) / (x + 1 - a - 1(1 - a)/(x + 3 - a - ...)), by the modified Lentz method."""
    k = c.kiln()
    tiny = 1e-300
    b = x + 1 - a
    cc = k.full_like(x, 1.0 / tiny)
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = k.where(k.abs(d) < tiny, k.full_like(d, tiny), d)
        cc = b + an / cc
        cc = k.where(k.abs(cc) < tiny, k.full_like(cc, tiny), cc)
        d = 1.0 / d
        delta = d * cc
        h = h * delta
        if i % 16 == 0 and not c.any_item(k.abs(delta - 1) > _EPS):
            break
    return prefactor * h


def igamma64(a, x):
    """(P(a, x), Q(a, x)) of float64 tensors of one shape."""
    k = c.kiln()
    valid = (a > 0) & (x > 0) & k.isfinite(a) & k.isfinite(x)
    a_ = k.where(valid, a, k.ones_like(a))
    x_ = k.where(valid, x, k.ones_like(x))
    lam = x_ / a_
    mu = (x_ - a_) / a_
    temme = valid & (a_ >= 20) & (lam >= 0.5) & (lam <= 2)
    small_x = valid & ~temme & (x_ <= 1.5)
    use_q = small_x & (a_ * k.log(x_) - lgamma1p(a_) > math.log(0.5))
    p_series = valid & ~temme & ~use_q & (small_x | (x_ < a_ + 1))
    fraction = valid & ~temme & ~small_x & ~p_series
    one = k.ones_like(x_)

    p = k.zeros_like(x_)
    q = k.zeros_like(x_)
    if c.any_item(temme):
        at = k.where(temme, a_, k.full_like(a_, 20.0))
        pt, qt = _temme(at, k.where(temme, mu, k.zeros_like(mu)), k.where(temme, lam, one))
        p, q = k.where(temme, pt, p), k.where(temme, qt, q)
    if c.any_item(use_q):
        qs = _q_series(k.where(use_q, a_, one), k.where(use_q, x_, one))
        p, q = k.where(use_q, 1 - qs, p), k.where(use_q, qs, q)
    if c.any_item(p_series):
        ap, xp = k.where(p_series, a_, one), k.where(p_series, x_, k.full_like(x_, 0.5))
        ps = _p_series(ap, xp, _prefactor(ap, xp, (xp - ap) / ap, xp / ap))
        p, q = k.where(p_series, ps, p), k.where(p_series, 1 - ps, q)
    if c.any_item(fraction):
        af, xf = k.where(fraction, a_, one), k.where(fraction, x_, k.full_like(x_, 3.0))
        qf = _q_fraction(af, xf, _prefactor(af, xf, (xf - af) / af, xf / af))
        p, q = k.where(fraction, 1 - qf, p), k.where(fraction, qf, q)
    return _igamma_special(a, x, p, q, valid)


def _igamma_special(a, x, p, q, valid):
    k = c.kiln()
    nan = k.full_like(p, math.nan)
    zero, one = k.zeros_like(p), k.ones_like(p)
    p, q = k.where(valid, p, nan), k.where(valid, q, nan)
    cases = [  # (condition, P, Q), later entries win
        (k.isinf(x), one, zero),
        (k.isinf(a), k.where(k.isinf(x), nan, zero), k.where(k.isinf(x), nan, one)),
        (x == 0, zero, one),
        (a == 0, k.where(x > 0, one, nan), k.where(x > 0, zero, nan)),
        ((x < 0) | (a < 0), nan, nan),
    ]
    for cond, pv, qv in cases:
        p, q = k.where(cond, pv, p), k.where(cond, qv, q)
    return p, q


def _em_tail(x, w):
    """Euler-Maclaurin: sum_{k>=0} (w + k)^-x - w^-x/2 ... i.e. int_w^inf + w^-x/2 + Bernoulli corrections."""
    k = c.kiln()
    power = k.pow(w, -x)
    total = power * w / (x - 1) + 0.5 * power
    factor = x * power / w
    w2 = w * w
    for j, coefficient in enumerate(_EM, start=1):
        total = total + coefficient * factor
        factor = factor * (x + 2 * j - 1) * (x + 2 * j) / w2
    return total


def _direct_sum(x, q, count):
    """sum_{k < count} (q + k)^-x, elementwise count."""
    k = c.kiln()
    total = k.zeros_like(x)
    limit = int(c.max_item(count, 0))
    for j in range(limit):
        use = count > j
        base = k.where(use, q + j, k.ones_like(q))
        total = total + k.where(use, k.pow(base, -x), k.zeros_like(x))
    return total


def zeta64(x, q):
    """The Hurwitz zeta function of float64 tensors of one shape, with torch's special values."""
    k = c.kiln()
    integer_x = x == k.floor(x)
    negative_ok = (q < 0) & (q != k.floor(q)) & integer_x
    regular = (x > 1) & k.isfinite(x) & k.isfinite(q) & ((q > 0) | negative_ok)
    xr = k.where(regular, x, k.full_like(x, 2.0))
    qr = k.where(regular, q, k.ones_like(q))
    shift = k.where(qr < 0, k.ceil(-qr), k.zeros_like(qr))
    total = _direct_sum(xr, qr, shift)
    qs = qr + shift  # in (0, 1) after a shift
    wanted = k.clamp(k.ceil(k.clamp(xr, min=10.0) - qs), min=0.0)
    enough = k.ceil(qs * k.expm1(39.0 / xr))
    negligible = enough < wanted
    count = k.where(negligible, enough, wanted)
    total = total + _direct_sum(xr, qs, count)
    tail = _em_tail(xr, qs + count)
    total = total + k.where(negligible, k.zeros_like(tail), tail)
    nan, inf = k.full_like(x, math.nan), k.full_like(x, math.inf)
    result = k.where(regular, total, nan)
    at_inf = k.where(q == 1, k.ones_like(x), k.where((q > 0) & (q < 1) | negative_ok, inf, nan))
    result = k.where(k.isinf(x) & (x > 0) & ~k.isnan(q), at_inf, result)
    nonpositive = q <= 0
    result = k.where(nonpositive & ~integer_x, nan, result)
    result = k.where(nonpositive & (q == k.floor(q)), inf, result)
    result = k.where(x < 1, nan, result)
    return k.where(x == 1, inf, result)


@functools.cache
def _functions():
    """The autograd Functions, made on first use."""
    k = c.kiln()

    def _density(a, x):
        return k.exp((a - 1) * k.log(x) - x - k.lgamma(a))

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
    k = c.kiln()
    c.check_tensor(op, input, "input", 1)
    c.check_tensor(op, other, "other", 2)
    dtype = k.result_type(input, other)
    if not dtype.is_floating_point:
        raise c.not_implemented(kernel, dtype, input.device.type)
    a, x, _ = c.binary_operands(op, input, other, kernel=kernel, half_ok=True, scalars=False, detach=False)
    return c.finish(_functions()[kernel].apply(a, x), out)


def gammainc(input, other, *, out=None):
    """torch.special.gammainc: the regularised lower incomplete gamma function P(input, other)."""
    return _incomplete("igamma", "special_gammainc", input, other, out)


def gammaincc(input, other, *, out=None):
    """torch.special.gammaincc: the regularised upper incomplete gamma function Q(input, other)."""
    return _incomplete("igammac", "special_gammaincc", input, other, out)


def igamma(input, other, *, out=None):
    """torch.igamma: as special.gammainc."""
    return _incomplete("igamma", "igamma", input, other, out)


def igammac(input, other, *, out=None):
    """torch.igammac: as special.gammaincc."""
    return _incomplete("igammac", "igammac", input, other, out)


def zeta(input, other, *, out=None):
    """torch.special.zeta: the Hurwitz zeta function sum_k (other + k)^-input; either argument may be a
    Python number."""
    a, q, _ = c.binary_operands("special_zeta", input, other, kernel="zeta", detach=False)
    return c.finish(_functions()["zeta"].apply(a, q), out)


def _inplace(self, result):
    with c.kiln().no_grad():
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


def multigammaln(input, p, *, out=None, _op="special_multigammaln"):
    """log of the multivariate gamma function of dimension p: sum_j lgamma(x - j/2) + p (p-1)/4 log(pi)
    (torch.mvlgamma). Integer inputs give the default dtype."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{_op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"{_op}(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    k = c.kiln()
    x = c.float_input(_op, input)
    offsets = k.arange(p, dtype=x.dtype) * -0.5
    result = k.lgamma(x.unsqueeze(-1) + offsets).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    if out is not None:
        return _C._functions._copy_to_out(result, out)
    return result
