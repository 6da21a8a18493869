"""GeneralizedPareto(loc, scale, concentration), as torch.distributions.GeneralizedPareto."""

from __future__ import annotations

import math

import kiln
from kiln.distributions import constraints
from kiln.distributions._helpers import batch_shape_of, expand_params, is_number
from kiln.distributions.distribution import Distribution
from kiln.distributions.utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution; concentration 0 is the exponential limit."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(batch_shape_of((loc, scale, concentration), self.loc), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, GeneralizedPareto, batch_shape, ("loc", "scale", "concentration"), _instance)

    def _zero_and_safe(self):
        c = self.concentration
        eq_zero = kiln.isclose(c, kiln.zeros_like(c))
        return eq_zero, kiln.where(eq_zero, kiln.ones_like(c), c)

    def rsample(self, sample_shape=kiln.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(kiln.rand(shape, dtype=self.loc.dtype))

    def _z(self, x):
        return (x - self.loc) / self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        y = 1 / safe + kiln.ones_like(z)
        nonzero = kiln.where(y == 0, y, y * kiln.log1p(safe * z))
        log_scale = math.log(self.scale) if is_number(self.scale) else self.scale.log()
        return -log_scale - kiln.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        return kiln.where(eq_zero, -z, -kiln.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return kiln.log1p(-kiln.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return kiln.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._zero_and_safe()
        logu = kiln.log1p(-value)
        nonzero = self.loc + self.scale / safe * kiln.expm1(-safe * logu)
        return kiln.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        c = self.concentration
        valid = c < 1
        safe = kiln.where(valid, c, kiln.full_like(c, 0.5))
        return kiln.where(valid, self.loc + self.scale / (1 - safe), kiln.full_like(c, float("nan")))

    @property
    def variance(self):
        c = self.concentration
        valid = c < 0.5
        safe = kiln.where(valid, c, kiln.full_like(c, 0.25))
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return kiln.where(valid, result, kiln.full_like(c, float("nan")))

    def entropy(self):
        return kiln.broadcast_to(kiln.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = kiln.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
