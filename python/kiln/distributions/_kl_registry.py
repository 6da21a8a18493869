"""The KL registry and dispatch, as torch.distributions.kl's: register_kl, kl_divergence and the
helpers the registered pairs share. The pairs themselves are registered by kl.py (same-family)
and _kl_cross.py (cross-family); kiln.distributions.kl re-exports register_kl and kl_divergence.

Dispatch is torch's: the most specific registered (type_p, type_q) pair wins, ambiguity warns
(RuntimeWarning, "Ambiguous kl_divergence(...)") and results are memoized per type pair.

Imports: kiln (kiln.full_like, kiln.where, kiln.special: looked up per call) and
kiln.distributions.distribution only.
"""

from __future__ import annotations

import functools
import math
import warnings

import kiln
from kiln.distributions.distribution import Distribution

_KL_REGISTRY = {}  # the registered (type_p, type_q) -> function pairs
_KL_MEMOIZE = {}  # resolved lookups for concrete type pairs


def register_kl(type_p, type_q):
    """Decorator registering ``fun(p, q)`` as KL(p || q) for p of type_p and q of type_q."""
    if not isinstance(type_p, type) and issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) and issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@functools.total_ordering
class _Match:
    """Orders type tuples lexicographically by subclassing (more specific is smaller)."""

    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    if left_fun is not _KL_REGISTRY[right_p, right_q]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please "
                      f"register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning, stacklevel=2)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q), batched over the batch shape; NotImplementedError for unregistered pairs."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


def _infinite_like(tensor):
    return kiln.full_like(tensor, math.inf)


def _set_where(mask, values, fill):
    """``values`` with ``fill`` where ``mask`` (the index assignments torch does in place)."""
    return kiln.where(mask, kiln.full_like(values, fill), values)


def _x_log_x(tensor):
    return kiln.special.xlogy(tensor, tensor)
