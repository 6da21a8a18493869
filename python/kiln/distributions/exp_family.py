"""ExponentialFamily, as torch.distributions.ExponentialFamily: entropy from the log normalizer
(a Bregman divergence, with autograd) for subclasses that give _natural_params,
_log_normalizer and _mean_carrier_measure."""

from __future__ import annotations

import kiln
from kiln.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of the exponential-family distributions."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """Entropy as F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with kiln.enable_grad():
            normalizer = self._log_normalizer(*params)
            grads = kiln.autograd.grad(normalizer.sum(), params, create_graph=True)
        result = result + normalizer
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
