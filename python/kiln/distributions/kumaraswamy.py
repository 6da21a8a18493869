"""Kumaraswamy(concentration1, concentration0), as torch.distributions.Kumaraswamy:
(1 - U ** (1/c0)) ** (1/c1) for U ~ Uniform(0, 1)."""

from __future__ import annotations

import kiln
from kiln.distributions import constraints
from kiln.distributions.transformed_distribution import TransformedDistribution
from kiln.distributions.transforms import AffineTransform, PowerTransform
from kiln.distributions.uniform import Uniform
from kiln.distributions.utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[X^n] = b B(1 + n/a, b)."""
    arg1 = 1 + n / a
    return b * kiln.exp(kiln.lgamma(arg1) + kiln.lgamma(b) - kiln.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """Density c1 c0 x^(c1-1) (1 - x^c1)^(c0-1) on [0, 1]."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(kiln.full_like(self.concentration0, 0), kiln.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        c1, c0 = self.concentration1, self.concentration0
        log_mode = c0.reciprocal() * (-c0).log1p() - (-c0 * c1).log1p()
        log_mode = kiln.where((c0 < 1) | (c1 < 1), kiln.full_like(log_mode, float("nan")), log_mode)
        return log_mode.exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - kiln.pow(self.mean, 2)

    def entropy(self):
        c1, c0 = self.concentration1, self.concentration0
        t1 = 1 - c1.reciprocal()
        t0 = 1 - c0.reciprocal()
        h0 = kiln.digamma(c0 + 1) + euler_constant
        return t0 + t1 * h0 - kiln.log(c1) - kiln.log(c0)
