"""Gamma(concentration, rate), as torch.distributions.Gamma (samples from kiln's Python
Marsaglia-Tsang sampler, see _sampling)."""

from __future__ import annotations

import kiln
from kiln.distributions import constraints
from kiln.distributions._helpers import batch_shape_of, expand_params
from kiln.distributions._sampling import standard_gamma
from kiln.distributions.exp_family import ExponentialFamily
from kiln.distributions.utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Density rate^c x^(c-1) exp(-rate x) / Gamma(c) on x >= 0."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch_shape_of((concentration, rate), self.concentration), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Gamma, batch_shape, ("concentration", "rate"), _instance)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=kiln.Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return kiln.clamp(value, min=kiln.finfo(value.dtype).tiny) if not value.requires_grad else value

    def log_prob(self, value):
        value = kiln.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return kiln.xlogy(c, r) + kiln.xlogy(c - 1, value) - r * value - kiln.lgamma(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return kiln.special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - kiln.log(self.rate) + kiln.lgamma(c) + (1.0 - c) * kiln.digamma(c)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return kiln.lgamma(x + 1) + (x + 1) * kiln.log(-y.reciprocal())
