"""More of torch.nn.functional composed from kiln's ops (their gradients are
those ops'): lp_pool1d/2d/3d, local_response_norm, rrelu, gumbel_softmax,
pdist, multilabel_margin_loss and max_unpool1d/2d/3d. Re-exported by
kiln.nn.functional."""

from __future__ import annotations

import warnings

import numpy as np

from kiln import _C
from kiln.nn._losses import _check_reduction, _legacy_reduction, _reduce
from kiln.nn._ops import ops


def _f():
    return _C._functions


def _F():
    from kiln.nn import functional

    return functional


def _ntuple(value, n: int) -> tuple:
    return (int(value),) * n if isinstance(value, int) else tuple(int(v) for v in value)


# --- power-average pooling ----------------------------------------------------------------------
def _lp_pool(pool, dims: int, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over each window of x^p) ^ (1 / p): the average pool of x^p times the window size."""
    area = int(np.prod(_ntuple(kernel_size, dims)))
    if stride is not None:
        pooled = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        pooled = pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    # sign * relu(abs): the value unchanged, no gradient where a window's power sum is exactly zero.
    return (ops.sign(pooled) * ops.relu(ops.abs(pooled)) * area).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(_F().avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(_F().avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(_F().avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


# --- local response normalisation ---------------------------------------------------------------
def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """x / (k + alpha * mean of x^2 over the ``size`` neighbouring channels) ^ beta (zero padded)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    squares = _F().pad(input * input, [0, 0] * (input.dim() - 2) + [size // 2, (size - 1) // 2])
    total = squares.narrow(1, 0, channels)
    for offset in range(1, size):
        total = total + squares.narrow(1, offset, channels)
    return input / (total * (alpha / size) + k).pow(beta)


# --- activations --------------------------------------------------------------------------------
def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """x for x > 0, else a * x with a ~ U(lower, upper) per element (training) or (lower + upper) / 2."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training and not inplace:
        return _F().leaky_relu(input, (lower + upper) / 2)
    if training:
        noise = _f().empty_like(input).uniform_(lower, upper)
    else:
        noise = _f().full_like(input, (lower + upper) / 2)
    slopes = _f().where(input > 0, _f().ones_like(input), noise)
    return input.mul_(slopes) if inplace else input * slopes


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, True)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """softmax((logits + Gumbel(0, 1) noise) / tau); hard: the one-hot argmax with the soft gradient."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_f().empty_like(logits).exponential_().log()
    soft = _F().softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    one_hot = _f().zeros_like(logits).scatter(dim, index, 1.0)
    return one_hot - soft.detach() + soft


# --- distances ----------------------------------------------------------------------------------
def pdist(input, p: float = 2):
    """The p-norm distances between the rows of an [N, M] input, for i < j in row-major order: [N (N - 1) / 2]."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = np.triu_indices(input.shape[0], 1)
    from kiln._creation import tensor

    first = input.index_select(0, tensor(rows.tolist(), dtype=_C.int64))
    second = input.index_select(0, tensor(cols.tolist(), dtype=_C.int64))
    return ops.linalg_vector_norm(first - second, float(p), [1], False)


# --- losses -------------------------------------------------------------------------------------
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """sum over the target classes j (up to the first -1) and the other classes i of
    max(0, 1 - (x[j] - x[i])), divided by the class count."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or (input.dim() == 1 and input.numel() == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(target.dtype)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input.reshape(-1, input.shape[-1] if input.dim() else 1)
    y = target.reshape(tuple(x.shape))
    classes = x.shape[1]
    if x.numel() and (bool((y < -1).any()) or bool((y >= classes).any())):
        raise RuntimeError("argument #2 'target' is out of range")
    valid = (y >= 0).to(_C.int64).cumprod(1)                          # the targets before the first -1
    labels = y.clamp_min(0)
    is_target = _f().zeros(tuple(x.shape), dtype=_C.int64).scatter_add(1, labels, valid) > 0
    picked = x.gather(1, labels)                                      # [N, T]
    margins = ops.clamp_min(1 - picked.unsqueeze(2) + x.unsqueeze(1), 0)  # [N, T, C]
    keep = (valid > 0).unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = _f().where(keep, margins, margins * 0).sum((1, 2)) / classes
    if input.dim() < 2:
        loss = loss.reshape(())
        return loss if reduction == "none" else _reduce(loss, reduction)
    return _reduce(loss, reduction)


def _scalar_name(dtype) -> str:
    return {_C.float32: "Float", _C.float64: "Double", _C.int32: "Int", _C.float16: "Half", _C.bfloat16: "BFloat16",
            _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte", _C.bool: "Bool"}.get(dtype, str(dtype))


# --- max_unpool ---------------------------------------------------------------------------------
def _unpool_size(input, kernel, stride, padding, output_size, dims: int) -> list:
    """The spatial output size: (in - 1) * stride - 2 * padding + kernel, or output_size within a stride of it."""
    spatial = list(input.shape[input.dim() - dims:])
    default = [(spatial[d] - 1) * stride[d] - 2 * padding[d] + kernel[d] for d in range(dims)]
    if output_size is None:
        return default
    sizes = [int(s) for s in output_size]
    if len(sizes) == dims + 2:
        sizes = sizes[2:]
    if len(sizes) != dims:
        raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} elements, but it has a "
                         f"length of '{len(sizes)}'")
    for d in range(dims):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < sizes[d] < high:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {low} and {high})')
    return sizes


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, dims: int):
    kernel = _ntuple(kernel_size, dims)
    stride = kernel if stride is None else _ntuple(stride, dims)
    padding = _ntuple(padding, dims)
    sizes = _unpool_size(input, kernel, stride, padding, output_size, dims)
    if indices.dtype != _C.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_scalar_name(indices.dtype)}")
    op_dims = max(dims, 2)
    in_dims = input.dim() + (1 if dims == 1 else 0)
    if in_dims not in (op_dims + 1, op_dims + 2):
        raise RuntimeError(f"Input to max_unpooling{op_dims}d should be a {op_dims + 1}d or {op_dims + 2}d Tensor, "
                           f"but got a tensor with {in_dims} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        shape = list(input.shape) + ([1] if dims == 1 else [])
        got = list(indices.shape) + ([1] if dims == 1 else [])
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({shape}) but got "
                           f"indices tensor with shape: {got}")
    lead = tuple(input.shape[:input.dim() - dims])
    volume = int(np.prod(sizes))
    flat_index = indices.reshape(-1, int(np.prod(input.shape[input.dim() - dims:])))
    if flat_index.numel():
        bad = (flat_index < 0) | (flat_index >= volume)
        if bool(bad.any()):
            first = int(flat_index.reshape(-1)[int(bad.reshape(-1).to(_C.int64).argmax())])
            shown = sizes + [1] if dims == 1 else sizes
            raise RuntimeError(f"Found an invalid max index: {first} (output volumes are of size "
                               f"{'x'.join(map(str, shown))})")
    values = input.reshape(tuple(flat_index.shape))
    out = _f().zeros((flat_index.shape[0], volume), dtype=input.dtype).scatter(1, flat_index, values)
    return out.reshape(*lead, *sizes)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value written at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value written at its flat h * W + w index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each value written at its flat (d * H + h) * W + w index."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
