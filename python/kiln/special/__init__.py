"""kiln.special, as torch.special: the special functions under their SciPy-style
names, each the kiln op it names (or a short composite of ops)."""

from __future__ import annotations

import math

from kiln import _C

_f = _C._functions


def expit(input, *, out=None):
    """The logistic sigmoid."""
    return _f.sigmoid(input, out=out) if out is not None else _f.sigmoid(input)


def logit(input, eps=None, *, out=None):
    return _f.logit(input, eps, out=out) if out is not None else _f.logit(input, eps)


def erf(input, *, out=None):
    return _f.erf(input, out=out) if out is not None else _f.erf(input)


def erfc(input, *, out=None):
    return _f.erfc(input, out=out) if out is not None else _f.erfc(input)


def erfinv(input, *, out=None):
    return _f.erfinv(input, out=out) if out is not None else _f.erfinv(input)


def erfcx(input):
    """exp(x^2) erfc(x)."""
    return _f.exp(input * input) * _f.erfc(input)


def gammaln(input, *, out=None):
    return _f.lgamma(input, out=out) if out is not None else _f.lgamma(input)


def digamma(input, *, out=None):
    return _f.digamma(input, out=out) if out is not None else _f.digamma(input)


psi = digamma


def polygamma(n, input, *, out=None):
    return _f.polygamma(n, input, out=out) if out is not None else _f.polygamma(n, input)


def multigammaln(input, p):
    """log of the multivariate gamma function of dimension p."""
    result = _f.lgamma(input)
    for j in range(1, p):
        result = result + _f.lgamma(input - j / 2)
    return result + p * (p - 1) / 4 * math.log(math.pi)


def xlogy(input, other, *, out=None):
    return _f.xlogy(input, other, out=out) if out is not None else _f.xlogy(input, other)


def xlog1py(input, other):
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    result = input * _f.log1p(other)
    return _f.where((input == 0) & ~_f.isnan(other), result * 0, result)


def entr(input):
    """-x log x for x > 0, 0 at 0, -inf below."""
    result = -_f.xlogy(input, input)
    return _f.where(input < 0, _f.full_like(result, -math.inf), result)


def sinc(input, *, out=None):
    return _f.sinc(input, out=out) if out is not None else _f.sinc(input)


def ndtr(input):
    """The standard normal CDF."""
    return 0.5 * _f.erfc(-input * (1 / math.sqrt(2)))


def ndtri(input):
    """The inverse of the standard normal CDF."""
    return math.sqrt(2) * _f.erfinv(2 * input - 1)


def log_ndtr(input):
    """log of the standard normal CDF."""
    return _f.log(ndtr(input))


def expm1(input, *, out=None):
    return _f.expm1(input, out=out) if out is not None else _f.expm1(input)


def exp2(input, *, out=None):
    return _f.exp2(input, out=out) if out is not None else _f.exp2(input)


def log1p(input, *, out=None):
    return _f.log1p(input, out=out) if out is not None else _f.log1p(input)


def round(input, *, decimals=0, out=None):  # noqa: A001  (torch's name)
    return _f.round(input, decimals=decimals, out=out) if out is not None else _f.round(input, decimals=decimals)


def logsumexp(input, dim, keepdim=False, *, out=None):
    return _f.logsumexp(input, dim, keepdim, out=out) if out is not None else _f.logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _f.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _f.log_softmax(input, dim, dtype=dtype)


from kiln.special._more import i0, i0e, i1, i1e, multigammaln  # noqa: E402,F401,F811
