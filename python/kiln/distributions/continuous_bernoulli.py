"""ContinuousBernoulli(probs | logits) on [0, 1], as torch.distributions.ContinuousBernoulli
(Loaiza-Ganem & Cunningham 2019), with torch's Taylor expansions inside ``lims`` around 1/2."""

from __future__ import annotations

import math

import kiln
from kiln.distributions import constraints
from kiln.distributions._helpers import is_number, one_param_probs_logits
from kiln.distributions.exp_family import ExponentialFamily
from kiln.distributions.utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Density C(p) p^x (1-p)^(1-x) on [0, 1]."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        one_param_probs_logits(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None:
                if not self.arg_constraints["probs"].check(self.probs).all():
                    raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        scalar = is_number(probs if probs is not None else logits)
        self._lims = lims
        super().__init__(kiln.Size() if scalar else self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = kiln.Size(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return kiln.le(self.probs, self._lims[0]) | kiln.gt(self.probs, self._lims[1])

    def _cut_probs(self):
        return kiln.where(self._outside_unstable_region(), self.probs, self._lims[0] * kiln.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = kiln.where(kiln.le(cut, 0.5), cut, kiln.zeros_like(cut))
        above = kiln.where(kiln.ge(cut, 0.5), cut, kiln.ones_like(cut))
        log_norm = kiln.log(kiln.abs(kiln.log1p(-cut) - kiln.log(cut))) - kiln.where(
            kiln.le(cut, 0.5), kiln.log1p(-2.0 * below), kiln.log(2.0 * above - 1.0))
        x = kiln.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return kiln.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (kiln.log1p(-cut) - kiln.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * kiln.pow(x, 2)) * x
        return kiln.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return kiln.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / kiln.pow(1.0 - 2.0 * cut, 2)
                     + 1.0 / kiln.pow(kiln.log1p(-cut) - kiln.log(cut), 2))
        x = kiln.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return kiln.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=kiln.Size()):
        shape = self._extended_shape(sample_shape)
        u = kiln.rand(shape, dtype=self.probs.dtype)
        with kiln.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=kiln.Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(kiln.rand(shape, dtype=self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = kiln.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (kiln.pow(cut, value) * kiln.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = kiln.where(self._outside_unstable_region(), cdfs, value)
        return kiln.where(kiln.le(value, 0.0), kiln.zeros_like(value),
                          kiln.where(kiln.ge(value, 1.0), kiln.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inverse = ((kiln.log1p(-cut + value * (2.0 * cut - 1.0)) - kiln.log1p(-cut))
                   / (kiln.log(cut) - kiln.log1p(-cut)))
        return kiln.where(self._outside_unstable_region(), inverse, value)

    def entropy(self):
        log_p0 = kiln.log1p(-self.probs)
        log_p1 = kiln.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = kiln.le(x, self._lims[0] - 0.5) | kiln.gt(x, self._lims[1] - 0.5)
        cut = kiln.where(outside, x, (self._lims[0] - 0.5) * kiln.ones_like(x))
        log_norm = kiln.log(kiln.abs(kiln.expm1(cut))) - kiln.log(kiln.abs(cut))
        taylor = 0.5 * x + kiln.pow(x, 2) / 24.0 - kiln.pow(x, 4) / 2880.0
        return kiln.where(outside, log_norm, taylor)
