"""VonMises(loc, concentration), the circular normal, as torch.distributions.VonMises.

log_prob and variance use the same polynomial approximations of log I0 / log I1 as torch
(Abramowitz & Stegun 9.8.1-9.8.4), so values match torch's rather than the exact Bessel
functions. Sampling is Best and Fisher's (1979) rejection scheme, in float64, as torch's
algorithm; kiln's random stream differs, so the draws do not. No rsample (as torch).
"""

from __future__ import annotations

import math

import kiln
from kiln.distributions import constraints
from kiln.distributions.distribution import Distribution
from kiln.distributions.utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

_I0_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2]
_I0_LARGE = [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
             -0.1647633e-1, 0.392377e-2]
_I1_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]
_I1_LARGE = [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
             0.1787654e-1, -0.420059e-2]


def _horner(y, coefficients):
    result = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for order 0 or 1, x > 0 (polynomial approximations)."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    small_c, large_c = (_I0_SMALL, _I0_LARGE) if order == 0 else (_I1_SMALL, _I1_LARGE)
    y = (x / 3.75) ** 2
    small = _horner(y, small_c)
    if order == 1:
        small = x.abs() * small
    small = small.log()
    large = x - 0.5 * x.log() + _horner(3.75 / x, large_c).log()
    return kiln.where(x < 3.75, small, large)


def _rejection_sample(loc, concentration, proposal_r, x):
    done = kiln.zeros(x.shape, dtype=kiln.bool)
    while not bool(done.all()):
        u1, u2, u3 = kiln.rand((3,) + tuple(x.shape), dtype=loc.dtype).unbind()
        z = kiln.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        accept = accept & ~done
        if bool(accept.any()):
            x = kiln.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Density exp(kappa cos(x - loc)) / (2 pi I0(kappa)) on the circle, reported in [-pi, pi)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, kiln.Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        try:
            return super().expand(batch_shape)
        except NotImplementedError:
            validate_args = self.__dict__.get("_validate_args")
            loc = self.loc.expand(batch_shape)
            concentration = self.concentration.expand(batch_shape)
            return type(self)(loc, concentration, validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * kiln.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_modified_bessel_fn(self.concentration, order=0)

    @lazy_property
    def _loc(self):
        return self.loc.to(kiln.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(kiln.double)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho ** 2) / (2 * rho)
        return kiln.where(kappa < 1e-5, 1 / kappa + kappa, r)

    def sample(self, sample_shape=kiln.Size()):
        with kiln.no_grad():
            shape = self._extended_shape(sample_shape)
            x = kiln.zeros(shape, dtype=kiln.double)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, x).to(self.loc.dtype)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        c = self.concentration
        return 1 - (_log_modified_bessel_fn(c, order=1) - _log_modified_bessel_fn(c, order=0)).exp()
