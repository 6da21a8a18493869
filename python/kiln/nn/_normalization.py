"""The normalisation functions of kiln.nn.functional: layer_norm, rms_norm, group_norm and
batch_norm (their C++ ops, after torch's Python-side checks), instance_norm (batch_norm over
the batch folded into channels, as PyTorch's own instance_norm), local_response_norm and
normalize (composed from ops).

Imports: kiln._C, kiln._padding and kiln.nn._ops only.
"""

from __future__ import annotations

import math
from typing import Optional

from kiln import _C
from kiln._arguments import _is_scalar, _require_tensor, _type_name, checked_signature
from kiln.nn._ops import functions as _functions
from kiln._padding import pad


def _shape_tuple(shape) -> tuple:
    return (shape,) if isinstance(shape, int) else tuple(shape)


@checked_signature("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps)")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-05):
    normalized_shape = _shape_tuple(normalized_shape)
    return _functions.layer_norm(input, list(normalized_shape), weight, bias, eps)


@checked_signature("rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float? eps)", forwarded=True)
def rms_norm(input, normalized_shape, weight=None, eps: Optional[float] = None):
    normalized_shape = _shape_tuple(normalized_shape)
    return _functions.rms_norm(input, list(normalized_shape), weight, eps)


@checked_signature("group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, float eps)")
def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-05):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    # torch's _verify_batch_size over [N * C // G, G, *spatial]: a group of one value cannot be normalized
    grouped_size = [input.shape[0] * input.shape[1] // num_groups, num_groups] + list(input.shape[2:])
    if math.prod(grouped_size[:1] + grouped_size[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {grouped_size}")
    channels = input.shape[1]
    if channels % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input "
                           f"of shape {list(input.shape)} and num_groups={num_groups}")
    return _functions.group_norm(input, num_groups, weight, bias, eps)


@checked_signature("batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight, Tensor? bias, "
                   "bool training, float momentum, float eps)")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-05):
    if training:  # torch's _verify_batch_size: values per channel, N * prod(spatial dims)
        size = input.shape[0] * math.prod(input.shape[2:]) if input.dim() >= 2 else 1
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{_C.Size(input.shape)}")
    return _functions.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def _norm(input, p: float, dim, keepdim: bool):
    """The p-norm over dim, as torch's Tensor.norm: linalg_vector_norm, which accumulates float16 and bfloat16 in
    float32, takes complex values by magnitude and has torch's gradient at a zero vector (0, not nan)."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    return _functions.linalg_vector_norm(input, float(p), dims, keepdim)


@checked_signature("normalize(Tensor input)")
def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    if out is not None:
        _require_tensor(out, "normalize", "out", None)
    if not _is_scalar(p):  # torch's Tensor.norm passes p on as linalg.vector_norm's ord
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {_type_name(p)}")
    denom = _norm(input, p, dim, True).clamp_min(eps).expand_as(input)
    if out is not None:
        return out.copy_(input / denom)
    return input / denom


@checked_signature("instance_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight, "
                   "Tensor? bias, bool use_input_stats, float momentum, float eps)")
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5):
    """Normalises each (sample, channel) slice over its spatial dims: batch_norm of the
    input seen as one sample of N*C channels (running stats averaged back over the batch)."""
    for position, name, value in ((2, "running_mean", running_mean), (3, "running_var", running_var),
                                  (4, "weight", weight), (5, "bias", bias)):
        if value is not None:
            _require_tensor(value, "instance_norm", name, position)
    if use_input_stats and math.prod(input.shape[2:]) == 1:  # torch's _verify_spatial_size
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {_C.Size(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    folded = input.reshape([1, n * c] + list(input.shape[2:]))
    mean = running_mean.repeat(n) if running_mean is not None else None
    var = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    out = batch_norm(folded, mean, var, w, b, training=use_input_stats, momentum=momentum, eps=eps)
    if running_mean is not None and use_input_stats:
        running_mean.copy_(mean.reshape(n, c).mean(0))
    if running_var is not None and use_input_stats:
        running_var.copy_(var.reshape(n, c).mean(0))
    return out.reshape(input.shape)


@checked_signature("local_response_norm(Tensor input, int size, float alpha, float beta, float k)")
def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """x / (k + alpha * mean of x^2 over the ``size`` neighbouring channels) ^ beta (zero padded)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    # As torch's: the mean of the squares is an average pool over the zero-padded channels (so an
    # integer input's mean truncates, as torch's avg_pool of integers does), then scaled.
    sizes = input.shape
    squares = (input * input).reshape(sizes[0], 1, sizes[1], -1)
    squares = pad(squares, [0, 0, size // 2, (size - 1) // 2])
    mean = _functions.avg_pool2d(squares, [size, 1], stride=1).reshape(sizes)
    return input / mean.mul(alpha).add(k).pow(beta)

