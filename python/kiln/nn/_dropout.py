"""The dropout functions of kiln.nn.functional: dropout (the C++ dropout / dropout_ ops),
dropout1d/2d/3d (channel-wise), alpha_dropout and feature_alpha_dropout (composed as ATen
composes them).

Imports: kiln._C and kiln.nn._ops only.
"""

from __future__ import annotations

import math
import warnings

from kiln import _C
from kiln._arguments import checked_signature
from kiln.nn._ops import functions as _functions


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


@checked_signature("dropout(Tensor input)")
def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _functions.dropout_(input, p, training) if inplace else _functions.dropout(input, p, training)


# Channel-wise (feature) dropout and alpha dropout, composed as ATen composes them: one
# Bernoulli(1 - p) draw per (sample, channel) broadcast over the spatial dims; alpha dropout
# sets dropped elements to SELU's negative saturation and rescales so that a zero-mean,
# unit-variance input keeps its mean and variance.
_SELU_ALPHA = 1.7580993408473766


def _noise_dropout(input, p: float, training: bool, inplace: bool, feature: bool, alpha: bool):
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    noise = _C._functions.empty(shape, dtype=input.dtype).bernoulli_(1.0 - p)
    if not alpha:
        noise = noise.div_(1.0 - p)
        return input.mul_(noise) if inplace else input * noise
    a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
    shift = (noise - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    noise = noise * a
    return input.mul_(noise).add_(shift) if inplace else input * noise + shift


def _channel_dropout(name: str, spatial: int, input, p: float, training: bool, inplace: bool):
    """dropout1d/2d/3d: unbatched inputs (spatial + 1 dims) get a batch dim for the draw."""
    _check_p(p)
    dims = input.dim()
    batched = spatial + 2
    if spatial == 1 and dims not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {dims}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if spatial == 2 and dims == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=3)
        return _noise_dropout(input, p, training, inplace, True, False)
    if spatial > 1 and dims not in (batched - 1, batched):
        warnings.warn(f"{name}: Received a {dims}-D input to {name}, which is deprecated and will result in an error "
                      f"in a future release. To retain the behavior and silence this warning, please use dropout "
                      f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {spatial} "
                      f"spatial dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{batched - 1}D or {batched}D inputs).", stacklevel=3)
    if dims == batched - 1:
        x = input.unsqueeze(0)
        out = _noise_dropout(x, p, training, inplace, True, False)
        return input if inplace else out.squeeze(0)
    return _noise_dropout(input, p, training, inplace, True, False)


@checked_signature("dropout1d(Tensor input)")
def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


@checked_signature("dropout2d(Tensor input)")
def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


@checked_signature("dropout3d(Tensor input)")
def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)


@checked_signature("alpha_dropout(Tensor input)")
def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    return _noise_dropout(input, p, training, inplace, False, True)


@checked_signature("feature_alpha_dropout(Tensor input)")
def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    return _noise_dropout(input, p, training, inplace, True, True)


