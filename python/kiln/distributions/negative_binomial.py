"""NegativeBinomial(total_count, probs | logits), as torch.distributions.NegativeBinomial:
successes before ``total_count`` failures, success probability ``probs``; sampled as a
Poisson with a Gamma rate."""

from __future__ import annotations

import kiln
from kiln.distributions import constraints
from kiln.distributions._helpers import expand_params, one_param_probs_logits
from kiln.distributions.distribution import Distribution
from kiln.distributions.gamma import Gamma
from kiln.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """The number of successes before ``total_count`` failures."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        one_param_probs_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
            self._param = self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, NegativeBinomial, batch_shape, ("total_count", "probs", "logits"), _instance)

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def mean(self):
        return self.total_count * kiln.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / kiln.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=kiln.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=kiln.Size()):
        with kiln.no_grad():
            return kiln.poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        F = kiln.nn.functional
        n = self.total_count
        unnormalized = n * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        normalization = -kiln.lgamma(n + value) + kiln.lgamma(1.0 + value) + kiln.lgamma(n)
        normalization = normalization.masked_fill(n + value == 0.0, 0.0)
        return unnormalized - normalization
