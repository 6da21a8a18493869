"""Dirichlet(concentration), as torch.distributions.Dirichlet (samples: normalized gamma draws,
see _sampling for how their gradient differs per sample from torch's)."""

from __future__ import annotations

import kiln
from kiln.distributions import constraints
from kiln.distributions._helpers import expand_params
from kiln.distributions._sampling import sample_dirichlet
from kiln.distributions.exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex of the last dim of ``concentration``."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_params(self, Dirichlet, batch_shape, ("concentration",), _instance,
                             {"concentration": self.event_shape})

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return kiln.xlogy(c - 1.0, value).sum(-1) + kiln.lgamma(c.sum(-1)) - kiln.lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, True)
        # All concentrations below 1: torch puts the mode at the vertex of its (nan-propagating) argmax.
        all_small = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = kiln.nn.functional.one_hot(mode.argmax(dim=-1), cm1.shape[-1]).to(mode.dtype)
        return kiln.where(all_small, vertex, mode)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (kiln.lgamma(c).sum(-1) - kiln.lgamma(a0) - (k - a0) * kiln.digamma(a0)
                - ((c - 1.0) * kiln.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - kiln.lgamma(x.sum(-1))
