"""kiln.nn.functional: torch.nn.functional's functions, signatures and defaults,
over kiln's C++ ops (the losses live in kiln/nn/_losses.py, attention in
kiln/nn/_attention.py; both are re-exported here).

Note [Functional calls the C++ op where one exists]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each function looks its op up in kiln._C._functions when it is called (through
kiln.nn._ops), not at import, so a build that lacks an op still imports and the
function raises NotImplementedError naming the op. Where PyTorch itself composes
a function from other ops (log_softmax and nll_loss into cross_entropy, the
distance functions, normalize, glu, pad's constant mode, multi-head attention),
kiln composes it from kiln ops the same way, so its gradient comes from the
autograd formulas of those ops; where PyTorch has a dedicated kernel (relu,
softmax, layer_norm, conv2d...) kiln calls its own kernel when the build has it
and otherwise falls back to a composite only where that composite is exact in
value and gradient (softmax, log_softmax, layer_norm, rms_norm, group_norm,
batch_norm, embedding, scaled_dot_product_attention over exp/log/sum/amax...).
"""

from __future__ import annotations

import math
import warnings
from numbers import Number
from typing import Optional

from kiln import _C
from kiln._comparison import scalar_type_name
from kiln.autograd.grad_mode import no_grad
from kiln.nn._ops import detached_amax, native, ops, reduce_mean, reduce_sum
from kiln.nn._losses import (  # noqa: F401  (re-exported: F.cross_entropy and friends)
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from kiln.nn._attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: F401
from kiln.nn._conv_transpose import conv_transpose1d, conv_transpose2d  # noqa: F401  (re-exported)
from kiln.nn._conv3d import conv3d  # noqa: F401  (re-exported)
from kiln.nn._pool3d import (  # noqa: F401  (re-exported)
    adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool3d, avg_pool3d, max_pool3d,
)
from kiln.nn import _pool3d
from kiln.nn._grid_sample import affine_grid, grid_sample  # noqa: F401  (re-exported)
from kiln.nn._ctc import ctc_loss  # noqa: F401  (re-exported)
from kiln.nn._nn_more import (  # noqa: F401  (re-exported)
    gumbel_softmax, local_response_norm, lp_pool1d, lp_pool2d, lp_pool3d, max_unpool1d, max_unpool2d, max_unpool3d,
    multilabel_margin_loss, pdist, rrelu, rrelu_,
)
from kiln.nn._embedding_bag import embedding_bag  # noqa: F401  (re-exported)
from kiln.nn._linear_cross_entropy import linear_cross_entropy  # noqa: F401  (re-exported)
from kiln.nn._grouped_mm import grouped_mm  # noqa: F401  (re-exported)
from kiln.nn._losses_more import (  # noqa: F401  (re-exported)
    cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss, multi_margin_loss,
    multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss, triplet_margin_loss,
)
from kiln.nn._complex_conv import complex_conv, involves_complex
from kiln.nn._rearrange_shrink import (  # noqa: F401  (re-exported)
    channel_shuffle, hardshrink, instance_norm, pixel_shuffle, pixel_unshuffle, prelu, softshrink,
)

Tensor = _C.TensorBase


def _call(name: str, *args, **kwargs):
    """kiln._C._functions.<name>(*args), or NotImplementedError naming the op."""
    return getattr(ops, name)(*args, **kwargs)


def _inplace(input, name: str, *args):
    """input.name_(*args): the Tensor method, else the op itself (torch has no Tensor.elu_ or .hardtanh_,
    only the ops)."""
    method = getattr(input, name, None)
    if method is not None:
        return method(*args)
    op = getattr(_C._functions, name, None)
    if op is None:
        raise NotImplementedError(f"kiln.nn.functional needs the in-place op '{name}', "
                                  "which this build of kiln does not have yet")
    return op(input, *args)


# --- linear -------------------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias (the C++ op kiln.linear)."""
    return _C._functions.linear(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1 @ weight[o] @ input2 + bias[o], composed from matmul."""
    dtypes = [input1.dtype, input2.dtype, weight.dtype] + ([bias.dtype] if bias is not None else [])
    if any(d != dtypes[0] for d in dtypes):
        from kiln._numeric_extra import _type_word

        names = ["input1", "input2", "weight", "bias"]
        listed = ", ".join(f"{n}: {_type_word(d)}" for n, d in zip(names, dtypes))
        raise RuntimeError(f"All tensors must have the same dtype, got {listed}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, but got {weight.dim()} dimensions")
    out_features, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input sizes {list(input1.shape)} and {list(input2.shape)} do not match "
                           f"the weight size {list(weight.shape)}")
    batch = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (B, in1) @ (in1, out*in2) -> (B, out, in2), then a batched dot with x2.
    left = x1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2)).reshape(-1, out_features, in2)
    out = left.matmul(x2.unsqueeze(-1)).squeeze(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(*batch, out_features)


# --- activations --------------------------------------------------------------------------------
def relu(input, inplace: bool = False):
    return _inplace(input, "relu_") if inplace else _call("relu", input)


def relu_(input):
    return _inplace(input, "relu_")


def relu6(input, inplace: bool = False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _inplace(input, "hardtanh_", min_val, max_val)
    return _call("hardtanh", input, min_val, max_val)


def gelu(input, approximate: str = "none"):
    return _call("gelu", input, approximate=approximate)


def silu(input, inplace: bool = False):
    return _inplace(input, "silu_") if inplace else _call("silu", input)


def mish(input, inplace: bool = False):
    return _inplace(input, "mish_") if inplace else _call("mish", input)


def sigmoid(input):
    return _call("sigmoid", input)


def tanh(input):
    return _call("tanh", input)


def softplus(input, beta=1, threshold=20):
    return _call("softplus", input, beta, threshold)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    if inplace:
        return _inplace(input, "leaky_relu_", negative_slope)
    return _call("leaky_relu", input, negative_slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    return _inplace(input, "elu_", alpha) if inplace else _call("elu", input, alpha)


def selu(input, inplace: bool = False):
    return _inplace(input, "selu_") if inplace else _call("selu", input)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    return _inplace(input, "celu_", alpha) if inplace else _call("celu", input, alpha)


def hardsigmoid(input, inplace: bool = False):
    return _inplace(input, "hardsigmoid_") if inplace else _call("hardsigmoid", input)


def hardswish(input, inplace: bool = False):
    return _inplace(input, "hardswish_") if inplace else _call("hardswish", input)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x): stable for large |x|, gradient sigmoid(-x) everywhere
    (composed: kiln has no log_sigmoid kernel yet)."""
    fn = native("log_sigmoid")
    if fn is not None:
        return fn(input)
    return -softplus(-input)


def softsign(input):
    return input / (_call("abs", input) + 1)


def tanhshrink(input):
    return input - _call("tanh", input)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    if inplace:
        return _inplace(input, "threshold_", threshold, value)
    return _call("threshold", input, threshold, value)


def glu(input, dim: int = -1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2 != 0:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
                           f"{input.shape[dim]}")
    first, second = input.chunk(2, dim)
    return first * sigmoid(second)


def _softmax_dim(ndim: int, stacklevel: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    fn = native("softmax")
    if fn is not None:
        return fn(input, dim, dtype=dtype) if dtype is not None else fn(input, dim)
    x = _convert(input, dtype)
    shifted = x - detached_amax(x, dim)
    exps = _call("exp", shifted)
    return exps / reduce_sum(exps, dim, True)


def log_softmax(input, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    fn = native("log_softmax")
    if fn is not None:
        return fn(input, dim, dtype=dtype) if dtype is not None else fn(input, dim)
    x = _convert(input, dtype)
    shifted = x - detached_amax(x, dim)
    return shifted - _call("log", reduce_sum(_call("exp", shifted), dim, True))


def softmin(input, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return softmax(input * -1.0, dim, dtype=dtype)


def _convert(input, dtype):
    if dtype is None or input.dtype == dtype:
        return input
    return _call("_to_copy", input, dtype=dtype) if native("_to_copy") else input.to(dtype)


# --- dropout ------------------------------------------------------------------------------------
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    _check_p(p)
    if not training or p == 0.0:
        return input
    fn = native("dropout_" if inplace else "dropout")
    if fn is not None:
        return fn(input, p, training)
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    # Composite: a Bernoulli(1 - p) keep-mask scaled by 1 / (1 - p).
    mask = _C._functions.empty_like(input).bernoulli_(1.0 - p).div_(1.0 - p)
    return input.mul_(mask) if inplace else input * mask


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


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    return _noise_dropout(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    return _noise_dropout(input, p, training, inplace, True, True)


# --- sparse -------------------------------------------------------------------------------------
def embedding(input, weight, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        raise NotImplementedError("kiln.nn.functional.embedding: max_norm is not supported yet")
    if sparse:
        raise NotImplementedError("kiln.nn.functional.embedding: sparse gradients are not supported")
    fn = native("embedding")
    if fn is not None:
        return fn(weight, input, padding_idx, scale_grad_by_freq, sparse)
    if scale_grad_by_freq:
        raise NotImplementedError("kiln.nn.functional.embedding: scale_grad_by_freq needs the 'embedding' op")
    rows = weight.index_select(0, input.reshape(-1))
    out = rows.reshape(*input.shape, weight.shape[1])
    if padding_idx >= 0:
        # Same values; the rows looked up at padding_idx take no gradient.
        keep = (input != padding_idx).unsqueeze(-1)
        out = _C._functions.where(keep, out, out.detach())
    return out


def one_hot(tensor, num_classes: int = -1):
    return _C._functions.one_hot(tensor, num_classes)


# --- normalization ------------------------------------------------------------------------------
def _shape_tuple(shape) -> tuple:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _check_normalized_shape(input, normalized_shape: tuple) -> None:
    n = len(normalized_shape)
    if n == 0 or tuple(input.shape[input.dim() - n:]) != normalized_shape or input.dim() < n:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size{list(input.shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-05):
    normalized_shape = _shape_tuple(normalized_shape)
    fn = native("layer_norm")
    if fn is not None:
        return fn(input, list(normalized_shape), weight, bias, eps)
    _check_normalized_shape(input, normalized_shape)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = reduce_mean(input, dims, True)
    centered = input - mean
    var = reduce_mean(centered * centered, dims, True)
    out = centered * _call("rsqrt", var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input, normalized_shape, weight=None, eps: Optional[float] = None):
    normalized_shape = _shape_tuple(normalized_shape)
    fn = native("rms_norm")
    if fn is not None:
        return fn(input, list(normalized_shape), weight, eps)
    _check_normalized_shape(input, normalized_shape)
    if eps is None:
        eps = _finfo_eps(input.dtype)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    out = input * _call("rsqrt", reduce_mean(input * input, dims, True) + eps)
    return out * weight if weight is not None else out


def _finfo_eps(dtype) -> float:
    return {_C.float64: 2.220446049250313e-16, _C.float16: 0.0009765625,
            _C.bfloat16: 0.0078125}.get(dtype, 1.1920928955078125e-07)


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
    fn = native("group_norm")
    if fn is not None:
        return fn(input, num_groups, weight, bias, eps)
    n = input.shape[0]
    grouped = input.reshape(n, num_groups, -1)
    mean = reduce_mean(grouped, -1, True)
    centered = grouped - mean
    var = reduce_mean(centered * centered, -1, True)
    out = (centered * _call("rsqrt", var + eps)).reshape(tuple(input.shape))
    affine_shape = (1, channels) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(affine_shape)
    if bias is not None:
        out = out + bias.reshape(affine_shape)
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-05):
    if training:
        size = input.numel() // input.shape[1] if input.dim() >= 2 else 1
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{_C.Size(input.shape)}")
    fn = native("batch_norm")
    if fn is not None:
        return fn(input, weight, bias, running_mean, running_var, training, momentum, eps, False)
    channels = input.shape[1]
    dims = (0,) + tuple(range(2, input.dim()))
    shape = (1, channels) + (1,) * (input.dim() - 2)
    if training or running_mean is None:
        mean = reduce_mean(input, dims, True)
        centered = input - mean
        var = reduce_mean(centered * centered, dims, True)
        if training and running_mean is not None:
            count = input.numel() // channels
            with no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach().reshape(-1), alpha=momentum)
                running_var.mul_(1 - momentum).add_(var.detach().reshape(-1) * (count / (count - 1)),
                                                    alpha=momentum)
    else:
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
        centered = input - mean
    out = centered * _call("rsqrt", var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _norm(input, p: float, dim, keepdim: bool):
    """The p-norm over dim, as torch's Tensor.norm: linalg_vector_norm, which accumulates float16 and bfloat16 in
    float32, takes complex values by magnitude and has torch's gradient at a zero vector (0, not nan)."""
    dims = [dim] if isinstance(dim, int) else list(dim)
    return _C._functions.linalg_vector_norm(input, float(p), dims, keepdim)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    denom = _norm(input, p, dim, True).clamp_min(eps).expand_as(input)
    if out is not None:
        return out.copy_(input / denom)
    return input / denom


# --- distances ----------------------------------------------------------------------------------
def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False):
    dim = -1 if max(x1.dim(), x2.dim()) > 0 else 0
    return _norm(x1 - x2 + eps, p, dim, keepdim)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-08):
    """As torch's: the operands broadcast first (a size-1 dim of x2 along `dim` counts once per element of
    x1's), each is divided by its own norm clamped to eps (the clamp outside autograd), then summed."""
    from kiln import result_type

    common = result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{scalar_type_name(common)}")
    # Only integer and bool operands are cast (the norms need floats); a float16 one keeps its precision.
    x1, x2 = (x if x.dtype.is_floating_point else x.to(common) for x in (x1, x2))
    x1, x2 = _C._functions.broadcast_tensors([x1, x2])
    # clones: the in-place clamp must not touch the norms their own backward saved
    n1 = _norm(x1, 2, dim, True).clone()
    n2 = _norm(x2, 2, dim, True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return reduce_sum((x1 / n1) * (x2 / n2), dim, False)


# --- convolution and pooling --------------------------------------------------------------------
def _stride(stride):
    """A pooling stride as the op takes it: [] (the kernel size) for None, else as given (0 is an error)."""
    return [] if stride is None else stride


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if involves_complex(input, weight, bias):
        return complex_conv(conv1d, input, weight, bias, stride, padding, dilation, groups)
    return _call("conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if involves_complex(input, weight, bias):
        return complex_conv(conv2d, input, weight, bias, stride, padding, dilation, groups)
    return _call("conv2d", input, weight, bias, stride, padding, dilation, groups)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    if return_indices:
        return _call("max_pool1d_with_indices", input, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    return _call("max_pool1d", input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    if return_indices:
        return _call("max_pool2d_with_indices", input, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    return _call("max_pool2d", input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    return _call("avg_pool1d", input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None):
    return _call("avg_pool2d", input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad,
                 divisor_override)


def adaptive_avg_pool1d(input, output_size):
    return _call("adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input, output_size):
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size)]
    return _call("adaptive_avg_pool2d", input, size)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    if native("adaptive_max_pool2d") is None:  # composed: see Note [Pooling through window tables]
        return _pool3d.adaptive_max_pool2d(input, output_size, return_indices)
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size)]
    result = _call("adaptive_max_pool2d", input, size)
    return result if return_indices else result[0]


def _pair(value):
    """An int as (value, value); a sequence as a tuple (its length is the op's to check)."""
    return (value, value) if isinstance(value, int) else tuple(value)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a [C, H, W] or [N, C, H, W] input as columns: [(N,) C * KH * KW, L]."""
    return _call("im2col", input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of unfold: columns [(N,) C * KH * KW, L] summed back into [(N,) C, H, W]."""
    return _call("col2im", input, _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding),
                 _pair(stride))


# --- padding ------------------------------------------------------------------------------------
_PAD_OPS = {"reflect": "reflection_pad", "replicate": "replication_pad", "circular": "_pad_circular"}


def _check_pad_dims(input, length: int) -> None:
    """torch's supported (input dims, padding length) pairs for the non-constant modes."""
    k = length // 2
    if input.dim() not in (k + 1, k + 2) or k > 3:
        raise NotImplementedError(
            f"Padding size {length} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _check_pad_nonempty(input, k: int) -> None:
    """reflect and replicate need every dim but the batch dim non-empty (torch's check and words)."""
    sizes = list(input.shape)
    if 0 in (sizes[1:] if input.dim() == k + 2 else sizes):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {sizes}")


def _pad_by_index(input, pad: list, mode: str):
    """reflect / replicate / circular padding as one index_select per padded dim
    (exact in value and gradient: index_select's backward accumulates with index_add)."""
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        n = out.shape[dim]
        if mode == "reflect":
            if before >= n or after >= n:
                raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({before}, {after}) at dimension {dim} of input "
                                   f"{list(input.shape)}")
            index = [-j if j < 0 else (2 * (n - 1) - j if j >= n else j) for j in range(-before, n + after)]
        elif mode == "replicate":
            if n == 0 and before + after > 0:
                raise RuntimeError(f"padding of an empty dimension {dim} of input {list(input.shape)} with mode "
                                   "'replicate'")
            index = [min(max(j, 0), n - 1) for j in range(-before, n + after)]
        else:  # circular: crop the negative pads first, then wrap around the cropped length
            if before > n or after > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            start, stop = max(-before, 0), n - max(-after, 0)
            m = stop - start
            index = [start + j % m for j in range(-max(before, 0), m + max(after, 0))] if m > 0 else []
        out = out.index_select(dim, _index_tensor(index))
    return out


def _index_tensor(values: list):
    from kiln._creation import tensor

    return tensor(values, dtype=_C.int64)


def pad(input, pad: list, mode: str = "constant", value: Optional[float] = None):
    """Constant padding composed from narrow (negative pads) and cat (positive pads);
    the other modes need their ops."""
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode != "constant":
        if mode not in _PAD_OPS:
            raise NotImplementedError(f"Unrecognised padding mode {mode}")
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        _check_pad_dims(input, len(pad))
        if mode != "circular":
            _check_pad_nonempty(input, len(pad) // 2)
        op = f"{_PAD_OPS[mode]}{len(pad) // 2}d"
        fn = native(op)
        if fn is not None:
            return fn(input, list(pad))
        return _pad_by_index(input, [int(p) for p in pad], mode)
    fill = 0.0 if value is None else value
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        before, after = int(pad[2 * i]), int(pad[2 * i + 1])
        if before < 0:
            out = out.narrow(dim, -before, out.shape[dim] + before)
        if after < 0:
            out = out.narrow(dim, 0, out.shape[dim] + after)
        pieces = []
        for amount in (before, after):
            shape = list(out.shape)
            shape[dim] = max(amount, 0)
            pieces.append(_C._functions.full(tuple(shape), fill, dtype=out.dtype))
        if before > 0 or after > 0:
            out = _C._functions.cat([pieces[0], out, pieces[1]], dim)
    return out


# --- interpolate --------------------------------------------------------------------------------
# Every interpolate mode lives in kiln/nn/_interpolate.py (see Note [Interpolation as per-dim plans]).
from kiln.nn._interpolate import interpolate, upsample  # noqa: E402,F401  (re-exported)


__all__ = [name for name in dir() if not name.startswith("_") and name not in
           ("annotations", "math", "warnings", "Number", "Optional", "native", "ops", "Tensor", "no_grad", "detached_amax", "reduce_mean", "reduce_sum")]
