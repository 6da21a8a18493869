"""StudentT(df, loc, scale), as torch.distributions.StudentT (samples: normal / sqrt(chi2 / df))."""

from __future__ import annotations

import math

import kiln
from kiln.distributions import constraints
from kiln.distributions.chi2 import Chi2
from kiln.distributions.distribution import Distribution
from kiln.distributions.utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, shifted by ``loc`` and scaled by ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = kiln.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return kiln.where(self.df <= 1, kiln.full_like(self.loc, float("nan")), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        result = kiln.where(df > 2, finite, kiln.full_like(df, math.inf))
        return kiln.where(df <= 1, kiln.full_like(df, float("nan")), result)

    def rsample(self, sample_shape=kiln.Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * kiln.rsqrt(z / self.df))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        log_z = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi) + kiln.lgamma(0.5 * df)
                 - kiln.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * kiln.log1p(y ** 2.0 / df) - log_z

    def entropy(self):
        df = self.df
        lbeta = kiln.lgamma(0.5 * df) + math.lgamma(0.5) - kiln.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (kiln.digamma(0.5 * (df + 1)) - kiln.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)
