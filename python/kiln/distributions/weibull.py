"""Weibull(scale, concentration), as torch.distributions.Weibull: scale * E ** (1/concentration)
for E ~ Exponential(1)."""

from __future__ import annotations

import kiln
from kiln.distributions import constraints
from kiln.distributions.exponential import Exponential
from kiln.distributions.transformed_distribution import TransformedDistribution
from kiln.distributions.transforms import AffineTransform, PowerTransform
from kiln.distributions.utils import broadcast_all, euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(kiln.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base, self._transforms(self), validate_args=validate_args)

    @staticmethod
    def _transforms(d):
        return [PowerTransform(exponent=d.concentration_reciprocal), AffineTransform(loc=0, scale=d.scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base = self.base_dist.expand(batch_shape)
        super(Weibull, new).__init__(base, self._transforms(new), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * kiln.exp(kiln.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (kiln.exp(kiln.lgamma(1 + 2 * r)) - kiln.exp(2 * kiln.lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + kiln.log(self.scale * r) + 1
