"""Helpers shared by kiln.distributions, as torch.distributions.utils.

broadcast_all, logits_to_probs, probs_to_logits, clamp_probs, lazy_property,
tril_matrix_to_vec and vec_to_tril_matrix behave as torch's. The private
helpers (_standard_normal, _sum_rightmost) are the ones the distributions use.
"""

from __future__ import annotations

import functools
import numbers

import kiln

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def _is_number(value) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, kiln.Tensor)


def broadcast_all(*values):
    """Broadcasts tensors and numbers together; numbers take the dtype of the first tensor
    (the default dtype when there is none)."""
    if not all(isinstance(v, kiln.Tensor) or _is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number, kiln.Tensor or objects implementing "
                         "__torch_function__.")
    if not all(isinstance(v, kiln.Tensor) for v in values):
        dtype = kiln.get_default_dtype()
        for value in values:
            if isinstance(value, kiln.Tensor):
                dtype = value.dtype
                break
        values = [v if isinstance(v, kiln.Tensor) else kiln.tensor(v, dtype=dtype) for v in values]
    return kiln.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device=None):
    return kiln.empty(shape, dtype=dtype).normal_()


def _sum_rightmost(value, dim: int):
    """Sums the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Sigmoid of log-odds (binary) or softmax over the last dimension."""
    if is_binary:
        return kiln.sigmoid(logits)
    return kiln.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamps probabilities into [eps, 1 - eps], eps the dtype's machine epsilon."""
    eps = kiln.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Log-odds (binary) or log-probabilities of clamped probabilities."""
    clamped = clamp_probs(probs)
    if is_binary:
        return kiln.log(clamped) - kiln.log1p(-clamped)
    return kiln.log(clamped)


class lazy_property:
    """A non-data descriptor: computes the value on first access (with grad enabled) and
    stores it on the instance under the same name."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with kiln.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: both a lazy_property and a property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n: int, diag: int):
    rows = kiln.arange(n).view(-1, 1)
    return kiln.arange(n) < rows + (diag + 1)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower-triangular entries (below diagonal ``diag``) of a (batched) square matrix, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    mask = _tril_mask(n, diag)
    index = kiln.nonzero(mask.reshape(-1)).reshape(-1)
    return mat.reshape(tuple(mat.shape[:-2]) + (n * n,)).index_select(-1, index)


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of :func:`tril_matrix_to_vec`: a (batched) lower-triangular D x D matrix."""
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = kiln.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag).reshape(-1)
    # Position of each flat matrix entry within vec (entries outside the mask read a zero pad).
    position = kiln.cumsum(mask.to(kiln.int64), 0) - 1
    position = kiln.where(mask, position, kiln.full_like(position, m))
    padded = kiln.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    return padded.index_select(-1, position).reshape(tuple(vec.shape[:-1]) + (n, n))
