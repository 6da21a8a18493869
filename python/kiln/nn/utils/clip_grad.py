"""Gradient clipping: clip_grad_norm_ (any norm_type, error_if_nonfinite),
clip_grad_value_, and the get_total_norm / clip_grads_with_norm_ halves of
clip_grad_norm_, as torch.nn.utils. Every update is in place, under no_grad;
foreach= is accepted for compatibility (kiln loops over the gradients)."""

from __future__ import annotations

import math
from typing import Iterable, Union

from kiln import _C
from kiln.autograd.grad_mode import no_grad
from kiln.nn._ops import native, ops

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]

_Tensors = Union["_C.TensorBase", Iterable["_C.TensorBase"]]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, _C.TensorBase) else list(tensors)


def _vector_norm(t, norm_type: float):
    """The norm of ``t`` flattened: kiln's linalg_vector_norm where the build has it,
    else composed (p=2 as a dot product of the flattened tensor with itself)."""
    fn = native("linalg_vector_norm")
    if fn is not None:
        return fn(t, norm_type)
    flat = t.reshape(-1)
    if norm_type == 2.0:
        return flat.dot(flat).pow(0.5)
    magnitude = flat.maximum(flat * -1.0)  # |flat|, over ops every build has
    if norm_type == math.inf:
        return ops.amax(magnitude)
    if norm_type == -math.inf:
        return ops.amin(magnitude)
    if norm_type == 0.0:
        return (magnitude != 0).to(t.dtype).dot(_C._functions.ones_like(flat))
    if norm_type == 1.0:
        return magnitude.dot(_C._functions.ones_like(flat))
    return magnitude.pow(norm_type).dot(_C._functions.ones_like(flat)).pow(1.0 / norm_type)


@no_grad()
def get_total_norm(tensors: _Tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None):
    """The norm of the norms of ``tensors`` (a 0-dim tensor)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _C._functions.zeros(())
    norms = _C._functions.stack([_vector_norm(t, norm_type) for t in tensors])
    total_norm = _vector_norm(norms, norm_type)
    if error_if_nonfinite and not math.isfinite(float(total_norm.item())):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return total_norm


@no_grad()
def clip_grads_with_norm_(parameters: _Tensors, max_norm: float, total_norm, foreach: bool | None = None) -> None:
    """Scales the gradients by min(1, max_norm / (total_norm + 1e-6))."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    clip_coef = (float(max_norm) / (total_norm + 1e-6)).clamp_max(1.0)
    for g in grads:
        g.mul_(clip_coef)


@no_grad()
def clip_grad_norm_(parameters: _Tensors, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None):
    """Clips the gradients' total norm to ``max_norm``; returns the norm before clipping."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


@no_grad()
def clip_grad_value_(parameters: _Tensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamps every gradient into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
