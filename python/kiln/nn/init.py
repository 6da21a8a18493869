"""kiln.nn.init: torch.nn.init's initialisers, in place, under no_grad, each
drawing from ``generator=`` (default: kiln's default generator).

kiln's generators are Philox streams of their own, so the values differ from
torch's for the same seed; the distributions (bounds, means, stds) are torch's.
orthogonal_ draws its Gaussian matrix with kiln and factors it with numpy's QR
(numpy.linalg.qr on the tensor's memory), kiln having no QR of its own yet.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from kiln import _C
from kiln.autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity, param=None) -> float:
    """The recommended gain for a nonlinearity (torch's table)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _gen_kwargs(generator) -> dict:
    return {} if generator is None else {"generator": generator}


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, **_gen_kwargs(generator))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, **_gen_kwargs(generator))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Normal(mean, std) truncated to [a, b], by inverse-CDF sampling as torch does
    when kiln has erfinv_, else by redrawing the values that fall outside [a, b]."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        if hasattr(tensor, "erfinv_"):
            def norm_cdf(x):
                return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

            low, high = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
            tensor.uniform_(2 * low - 1, 2 * high - 1, **_gen_kwargs(generator))
            tensor.erfinv_()
            tensor.mul_(std * math.sqrt(2.0))
            tensor.add_(mean)
            return tensor.clamp_(min=a, max=b)
        tensor.normal_(mean, std, **_gen_kwargs(generator))
        while True:
            outside = (tensor < a).logical_or(tensor > b)
            count = int(outside.nonzero().shape[0])
            if count == 0:
                return tensor
            fresh = _C._functions.empty(count, dtype=tensor.dtype).normal_(mean, std, **_gen_kwargs(generator))
            tensor.masked_scatter_(outside, fresh)


def constant_(tensor, val: float):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(_C._functions.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity) -> float:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return 0.0
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if tensor.numel() == 0:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if tensor.numel() == 0:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain: float = 1, generator=None):
    """A (semi-)orthogonal matrix: the Q of a Gaussian matrix's QR, its columns'
    signs fixed by R's diagonal so the result is Haar-distributed (as torch)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        gaussian = _C._functions.empty((rows, cols), dtype=_C.float64).normal_(0.0, 1.0, **_gen_kwargs(generator))
        matrix = gaussian.numpy()
        if rows < cols:
            matrix = matrix.T
        q, r = np.linalg.qr(matrix)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        values = _C.from_numpy(np.ascontiguousarray(q * gain, dtype=np.float64))
        tensor.copy_(values.reshape(tuple(tensor.shape)))
    return tensor


# --- torch.nn.init's remaining names: dirac_, sparse_, the no_grad helpers and the deprecated aliases ---


def dirac_(tensor, groups: int = 1):
    """The Dirac delta for a 3-, 4- or 5-d convolution weight: in each of the ``groups``, output
    channel d passes input channel d through at the kernel's centre (as many as the smaller
    channel count allows); everything else zero."""
    dimensions = tensor.dim()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_group = sizes[0] // groups
    min_dim = min(out_chans_per_group, sizes[1])
    centre = tuple(size // 2 for size in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_chans_per_group + d, d, *centre)] = 1
    return tensor


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """A 2-d sparse matrix: Normal(0, std) values (drawn from ``generator``), then in every column
    ceil(sparsity * rows) entries, at rows of a random permutation, set to zero. As in torch, the
    permutations come from the default generator, not ``generator``."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, **_gen_kwargs(generator))
        for col in range(cols):
            zero_rows = _C._functions.randperm(rows)[:num_zeros]
            tensor[zero_rows, col] = 0
    return tensor


# torch's private helpers, which some libraries call directly (timm's trunc_normal_ used to).
def _no_grad_uniform_(tensor, a, b, generator=None):
    return uniform_(tensor, a, b, generator)


def _no_grad_normal_(tensor, mean, std, generator=None):
    return normal_(tensor, mean, std, generator)


def _no_grad_trunc_normal_(tensor, mean, std, a, b, generator=None):
    return trunc_normal_(tensor, mean, std, a, b, generator)


def _no_grad_fill_(tensor, val):
    return constant_(tensor, val)


def _no_grad_zero_(tensor):
    return zeros_(tensor)


def _make_deprecate(method):
    """The old spelling of an in-place initialiser (no trailing underscore): FutureWarning, then the new one."""
    new_name = method.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"{old_name}(...): deprecated in favor of kiln.nn.init.{new_name}."
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)

__all__ += ["dirac_", "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
            "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]

# torch.nn.init's annotation types for the ``mode`` and ``nonlinearity`` arguments.
from typing import Literal as _Literal  # noqa: E402

_FanMode = _Literal["fan_in", "fan_out"]
_NonlinearityType = _Literal["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                             "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]
