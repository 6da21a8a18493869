"""The activation functions of kiln.nn.functional (re-exported there): relu and its
relatives, their in-place forms, the softmax family, glu, rrelu, gumbel_softmax, prelu,
hardshrink and softshrink. Each calls its C++ op (kiln._C._functions) directly; logsigmoid,
softsign, tanhshrink, glu, rrelu, gumbel_softmax, prelu and the shrinks are composed from
ops as torch composes them.

Imports: kiln.nn._ops and kiln._comparison only.
"""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from kiln._arguments import _require_tensor, checked_signature
from kiln._comparison import scalar_type_name
from kiln.nn._ops import functions as _functions


def _inplace(input, name: str, *args):
    """input.name_(*args): the Tensor method, else the op itself (torch has no Tensor.elu_ or .hardtanh_,
    only the ops)."""
    method = getattr(input, name, None)
    if method is not None:
        return method(*args)
    op = getattr(_functions, name, None)
    if op is None:
        raise NotImplementedError(f"kiln.nn.functional needs the in-place op '{name}', "
                                  "which this build of kiln does not have yet")
    return op(input, *args)


@checked_signature("relu(Tensor input)")
def relu(input, inplace: bool = False):
    return _inplace(input, "relu_") if inplace else _functions.relu(input)


@checked_signature("relu_(Tensor input)")
def relu_(input):
    return _inplace(input, "relu_")


@checked_signature("relu6(Tensor input)")
def relu6(input, inplace: bool = False):
    return hardtanh(input, 0.0, 6.0, inplace)


@checked_signature("hardtanh(Tensor input)")
def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _inplace(input, "hardtanh_", min_val, max_val)
    return _functions.hardtanh(input, min_val, max_val)


@checked_signature("gelu(Tensor input)")
def gelu(input, approximate: str = "none"):
    return _functions.gelu(input, approximate=approximate)


@checked_signature("silu(Tensor input)")
def silu(input, inplace: bool = False):
    return _inplace(input, "silu_") if inplace else _functions.silu(input)


@checked_signature("mish(Tensor input)")
def mish(input, inplace: bool = False):
    return _inplace(input, "mish_") if inplace else _functions.mish(input)


@checked_signature("sigmoid(Tensor input)")
def sigmoid(input):
    return _functions.sigmoid(input)


@checked_signature("tanh(Tensor input)")
def tanh(input):
    return _functions.tanh(input)


@checked_signature("softplus(Tensor input, Scalar beta, Scalar threshold)")
def softplus(input, beta=1, threshold=20):
    return _functions.softplus(input, beta, threshold)


@checked_signature("leaky_relu(Tensor input)")
def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    if inplace:
        return _inplace(input, "leaky_relu_", negative_slope)
    return _functions.leaky_relu(input, negative_slope)


@checked_signature("elu(Tensor input)")
def elu(input, alpha: float = 1.0, inplace: bool = False):
    return _inplace(input, "elu_", alpha) if inplace else _functions.elu(input, alpha)


@checked_signature("selu(Tensor input)")
def selu(input, inplace: bool = False):
    return _inplace(input, "selu_") if inplace else _functions.selu(input)


@checked_signature("celu(Tensor input)")
def celu(input, alpha: float = 1.0, inplace: bool = False):
    return _inplace(input, "celu_", alpha) if inplace else _functions.celu(input, alpha)


@checked_signature("hardsigmoid(Tensor input)")
def hardsigmoid(input, inplace: bool = False):
    return _inplace(input, "hardsigmoid_") if inplace else _functions.hardsigmoid(input)


@checked_signature("hardswish(Tensor input)")
def hardswish(input, inplace: bool = False):
    return _inplace(input, "hardswish_") if inplace else _functions.hardswish(input)


def logsigmoid(input):
    """log(sigmoid(x)) = -softplus(-x): stable for large |x|, gradient sigmoid(-x) everywhere
    (composed: kiln has no log_sigmoid kernel yet)."""
    return -softplus(-input)


@checked_signature("softsign(Tensor input)")
def softsign(input):
    return input / (_functions.abs(input) + 1)


@checked_signature("tanhshrink(Tensor input)")
def tanhshrink(input):
    return input - _functions.tanh(input)


@checked_signature("threshold(Tensor input)")
def threshold(input, threshold: float, value: float, inplace: bool = False):
    if inplace:
        return _inplace(input, "threshold_", threshold, value)
    return _functions.threshold(input, threshold, value)


@checked_signature("glu(Tensor input)")
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


@checked_signature("softmax(Tensor input)")
def softmax(input, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return _functions.softmax(input, dim, dtype=dtype) if dtype is not None else _functions.softmax(input, dim)


@checked_signature("log_softmax(Tensor input)")
def log_softmax(input, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    if dtype is not None:
        return _functions.log_softmax(input, dim, dtype=dtype)
    return _functions.log_softmax(input, dim)


@checked_signature("softmin(Tensor input)")
def softmin(input, dim: Optional[int] = None, _stacklevel: int = 3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim(), _stacklevel)
    return softmax(input * -1.0, dim, dtype=dtype)


# --- in-place forms torch.nn.functional spells with a trailing underscore -------------------------
@checked_signature("elu_(Tensor input, Scalar alpha)")
def elu_(input, alpha: float = 1.0):
    """F.elu_: elu in place (the C++ op elu_)."""
    return _functions.elu_(input, alpha)


@checked_signature("celu_(Tensor input, Scalar alpha)")
def celu_(input, alpha: float = 1.0):
    """F.celu_: celu in place."""
    return _functions.celu_(input, alpha)


@checked_signature("selu_(Tensor input)")
def selu_(input):
    """F.selu_: selu in place."""
    return _functions.selu_(input)


@checked_signature("hardtanh_(Tensor input, Scalar min_val, Scalar max_val)")
def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """F.hardtanh_: hardtanh in place (like torch's, without F.hardtanh's min_val <= max_val check)."""
    return _functions.hardtanh_(input, min_val, max_val)


@checked_signature("leaky_relu_(Tensor input, Scalar negative_slope)")
def leaky_relu_(input, negative_slope: float = 0.01):
    """F.leaky_relu_: leaky_relu in place."""
    return _functions.leaky_relu_(input, negative_slope)


@checked_signature("threshold_(Tensor input, Scalar threshold, Scalar value)")
def threshold_(input, threshold: float, value: float):
    """F.threshold_: x where x > threshold, else value, in place."""
    return _functions.threshold_(input, threshold, value)


# --- randomized activations -------------------------------------------------------------------
@checked_signature("rrelu(Tensor input)")
def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """x for x > 0, else a * x with a ~ U(lower, upper) per element (training) or (lower + upper) / 2."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training and not inplace:
        return leaky_relu(input, (lower + upper) / 2)
    if training:
        noise = _functions.empty_like(input).uniform_(lower, upper)
    else:
        noise = _functions.full_like(input, (lower + upper) / 2)
    slopes = _functions.where(input > 0, _functions.ones_like(input), noise)
    return input.mul_(slopes) if inplace else input * slopes


@checked_signature("rrelu_(Tensor input, Scalar lower, Scalar upper, bool training)")
def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, True)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """softmax((logits + Gumbel(0, 1) noise) / tau); hard: the one-hot argmax with the soft gradient."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_functions.empty_like(logits).exponential_().log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    one_hot = _functions.zeros_like(logits).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft


# --- prelu, hardshrink, softshrink (composed from where and pointwise ops) ---------------------------------

@checked_signature("prelu(Tensor input, Tensor weight)")
def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight one value or one per channel (dim 1)."""
    _require_tensor(input, "prelu", "input", 1)
    _require_tensor(weight, "prelu", "weight", 2)
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.numel() == 1:
        weight = weight.reshape(())  # one value broadcasts without adding a dim (a 0-d input stays 0-d)
    else:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape([channels] + [1] * (input.dim() - 2))
    return _functions.where(input > 0, input, input * weight)

@checked_signature("hardshrink(Tensor input, Scalar lambd)")
def hardshrink(input, lambd: float = 0.5):
    """x where |x| > lambd, else 0."""
    return _functions.where((input > lambd) | (input < -lambd), input, input * 0)

@checked_signature("softshrink(Tensor input, Scalar lambd)")
def softshrink(input, lambd: float = 0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        dtype = str(input.dtype).removeprefix("kiln.")
        largest = float(np.finfo(np.float32 if dtype == "bfloat16" else dtype).max) if input.dtype.is_floating_point \
            else float(np.iinfo(dtype).max)
        raise RuntimeError(f"lambda must be in range [0, {largest:g}] for input dtype {scalar_type_name(input.dtype)}, "
                           f"but found {lambd:g}")
    return _functions.where(input > lambd, input - lambd, _functions.where(input < -lambd, input + lambd, input * 0))
