"""kiln.special, as torch.special: the special functions under their SciPy-style
names, each the kiln op it names (or a short composite of ops). The Bessel, modified
Bessel I, gamma / zeta / multigammaln, normal-distribution and polynomial families live
in _bessel, _modified_bessel_i, _gamma, _normal and _polynomials; _tensor_methods.bind
attaches the Tensor methods that belong with them (kiln/__init__.py calls it)."""

from __future__ import annotations

import math

from kiln import _C
from kiln._arguments import checked_signature as _checked_signature

_f = _C._functions


@_checked_signature("special_expit(Tensor input, *, Tensor? out)")
def expit(input, *, out=None):
    """The logistic sigmoid."""
    return _f.sigmoid(input, out=out) if out is not None else _f.sigmoid(input)


@_checked_signature("special_logit(Tensor input, float? eps, *, Tensor? out)")
def logit(input, eps=None, *, out=None):
    return _f.logit(input, eps, out=out) if out is not None else _f.logit(input, eps)


@_checked_signature("special_erf(Tensor input, *, Tensor? out)")
def erf(input, *, out=None):
    return _f.erf(input, out=out) if out is not None else _f.erf(input)


@_checked_signature("special_erfc(Tensor input, *, Tensor? out)")
def erfc(input, *, out=None):
    return _f.erfc(input, out=out) if out is not None else _f.erfc(input)


@_checked_signature("special_erfinv(Tensor input, *, Tensor? out)")
def erfinv(input, *, out=None):
    return _f.erfinv(input, out=out) if out is not None else _f.erfinv(input)


@_checked_signature("special_gammaln(Tensor input, *, Tensor? out)")
def gammaln(input, *, out=None):
    return _f.lgamma(input, out=out) if out is not None else _f.lgamma(input)


@_checked_signature("special_digamma(Tensor input, *, Tensor? out)")
def digamma(input, *, out=None):
    return _f.digamma(input, out=out) if out is not None else _f.digamma(input)


psi = digamma


@_checked_signature("special_polygamma(int n, Tensor input, *, Tensor? out)")
def polygamma(n, input, *, out=None):
    return _f.polygamma(n, input, out=out) if out is not None else _f.polygamma(n, input)


@_checked_signature("special_xlogy(Any input, Any other, *, Tensor? out)")
def xlogy(input, other, *, out=None):
    return _f.xlogy(input, other, out=out) if out is not None else _f.xlogy(input, other)


def xlog1py(input, other):
    """x * log1p(y), 0 where x is 0 (unless y is NaN)."""
    result = input * _f.log1p(other)
    return _f.where((input == 0) & ~_f.isnan(other), result * 0, result)


@_checked_signature("special_sinc(Tensor input, *, Tensor? out)")
def sinc(input, *, out=None):
    return _f.sinc(input, out=out) if out is not None else _f.sinc(input)


@_checked_signature("special_ndtr(Tensor input)")
def ndtr(input):
    """The standard normal CDF (integer and bool inputs read as the default float dtype, as torch does)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(_C.get_default_dtype())
    return 0.5 * _f.erfc(-input * (1 / math.sqrt(2)))


@_checked_signature("special_expm1(Tensor input, *, Tensor? out)")
def expm1(input, *, out=None):
    return _f.expm1(input, out=out) if out is not None else _f.expm1(input)


@_checked_signature("special_exp2(Tensor input, *, Tensor? out)")
def exp2(input, *, out=None):
    return _f.exp2(input, out=out) if out is not None else _f.exp2(input)


@_checked_signature("special_log1p(Tensor input, *, Tensor? out)")
def log1p(input, *, out=None):
    return _f.log1p(input, out=out) if out is not None else _f.log1p(input)


@_checked_signature("special_round(Tensor input, *, int decimals, Tensor? out)")
def round(input, *, decimals=0, out=None):  # noqa: A001  (torch's name)
    return _f.round(input, decimals=decimals, out=out) if out is not None else _f.round(input, decimals=decimals)


@_checked_signature("special_logsumexp(Tensor input, int[1] dim, bool keepdim, *, Tensor? out)")
def logsumexp(input, dim, keepdim=False, *, out=None):
    return _f.logsumexp(input, dim, keepdim, out=out) if out is not None else _f.logsumexp(input, dim, keepdim)


@_checked_signature("special_softmax(Tensor input, int dim, *, ScalarType? dtype)")
def softmax(input, dim, *, dtype=None):
    return _f.softmax(input, dim, dtype=dtype)


@_checked_signature("special_log_softmax(Tensor input, int dim, *, ScalarType? dtype)")
def log_softmax(input, dim, *, dtype=None):
    return _f.log_softmax(input, dim, dtype=dtype)


from kiln.special._modified_bessel_i import i0, i0e, i1, i1e  # noqa: E402,F401
from kiln.special._normal import entr, erfcx, log_ndtr, ndtri  # noqa: E402,F401
from kiln.special._gamma import gammainc, gammaincc, multigammaln, zeta  # noqa: E402,F401
from kiln.special._bessel import (  # noqa: E402,F401
    airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, modified_bessel_i0, modified_bessel_i1, modified_bessel_k0,
    modified_bessel_k1, scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0,
)
from kiln.special import _gamma, _tensor_methods  # noqa: E402
from kiln.special._polynomials import (  # noqa: E402,F401
    chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w,
    hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p,
    shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)


def install(kiln_namespace, tensor_class):
    """kiln.igamma / kiln.igammac where ``kiln_namespace`` lacks them, and the Tensor methods of
    _tensor_methods.bind. Idempotent. kiln/__init__.py imports those names plainly and calls bind
    itself; this stays for callers that install into another namespace."""
    kiln_namespace.setdefault("igamma", _gamma.igamma)
    kiln_namespace.setdefault("igammac", _gamma.igammac)
    _tensor_methods.bind(tensor_class)
