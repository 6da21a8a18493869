"""LKJCholesky(dim, concentration): Cholesky factors of LKJ-distributed correlation matrices,
as torch.distributions.LKJCholesky (log_prob as torch's; no rsample, as torch).

Sampling is the onion method (Lewandowski, Kurowicka & Joe 2009, sec. 3.2): row i of the factor
is sqrt(y_i) times a uniform direction in its first i coordinates, y_i ~ Beta(i/2, eta + (d-2)/2 -
(i-1)/2). Knowing difference: torch 2.13 uses Beta(i - 1/2, ...) for rows i >= 2, so its samples
for dim >= 3 are not LKJ-distributed (off-diagonal correlations of later rows are too spread); kiln
uses i/2, under which every correlation has the LKJ marginal (variance 1 / (2 eta + d - 1)).
"""

from __future__ import annotations

import math

import kiln
from kiln.distributions import constraints
from kiln.distributions.beta import Beta
from kiln.distributions.distribution import Distribution
from kiln.distributions.utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution over lower Cholesky factors of dim x dim correlation matrices."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = kiln.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = kiln.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), kiln.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = kiln.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=kiln.Size()):
        with kiln.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = kiln.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
            u = u / u.norm(dim=-1, keepdim=True)
            first_row = kiln.arange(self.dim).view(-1, 1) == 0
            u = kiln.where(first_row, kiln.zeros_like(u), u)  # row 0 is 0/0 above
            w = kiln.sqrt(y) * u
            diag = kiln.clamp(1 - kiln.sum(w ** 2, dim=-1), min=kiln.finfo(w.dtype).tiny).sqrt()
            return w + kiln.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = kiln.arange(2, self.dim + 1)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = kiln.sum(order * diag.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + kiln.mvlgamma(alpha - 0.5, dm1) - kiln.lgamma(alpha) * dm1
        return unnormalized - normalize
