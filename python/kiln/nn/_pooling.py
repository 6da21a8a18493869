"""The 1-D and 2-D pools of kiln.nn.functional (max, average, adaptive: their C++ ops),
the *_with_indices forms of every max pool, lp_pool1d/2d/3d (the average pool of x^p)
and max_unpool1d/2d/3d (a scatter into zeros). The 3-D pools and the window-table
adaptive max pools are in _pool3d.py, the fractional max pools in _fractional_pool.py.

Imports: kiln._C, kiln.nn._ops and kiln.nn._pool3d only.
"""

from __future__ import annotations

import numpy as np

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature
from kiln.nn import _pool3d
from kiln.nn._ops import _call, _scalar_name, native
from kiln.nn._ops import functions as _functions
from kiln.nn._pool3d import adaptive_max_pool1d, adaptive_max_pool3d, avg_pool3d, max_pool3d


def _stride(stride):
    """A pooling stride as the op takes it: [] (the kernel size) for None, else as given (0 is an error)."""
    return [] if stride is None else stride


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    if return_indices:
        return _functions.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    return _functions.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    if return_indices:
        return _functions.max_pool2d_with_indices(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)
    return _functions.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


@checked_signature("avg_pool1d(Tensor input, int[1] kernel_size, int[1] stride, int[1] padding, bool ceil_mode, "
                   "bool count_include_pad)")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    return _functions.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


@checked_signature("avg_pool2d(Tensor input, int[1] kernel_size, int[1] stride, int[1] padding, bool ceil_mode, "
                   "bool count_include_pad, int? divisor_override)")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None):
    return _functions.avg_pool2d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad,
                 divisor_override)


@checked_signature("adaptive_avg_pool1d(Tensor input, int[1] output_size)")
def adaptive_avg_pool1d(input, output_size):
    return _functions.adaptive_avg_pool1d(input, output_size)


@checked_signature("adaptive_avg_pool2d(Tensor input, int?[2] output_size)", forwarded=True)
def adaptive_avg_pool2d(input, output_size):
    _pool3d.check_output_size_rank(input, output_size)
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size)]
    return _functions.adaptive_avg_pool2d(input, size)


@checked_signature("adaptive_max_pool2d(Tensor input, int?[2] output_size)", forwarded=True)
def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    if native("adaptive_max_pool2d") is None:  # composed: see Note [Pooling through window tables]
        return _pool3d.adaptive_max_pool2d(input, output_size, return_indices)
    _pool3d.check_output_size_rank(input, output_size)
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size)]
    result = _call("adaptive_max_pool2d", input, size)
    return result if return_indices else result[0]


# --- the *_with_indices forms: (values, indices) whatever return_indices says --------------------
@checked_signature("max_pool1d_with_indices(Tensor input, int[1] kernel_size, int[1]? stride, int[1] padding, "
                   "int[1] dilation, bool ceil_mode)", forwarded=True)
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    """F.max_pool1d_with_indices: (values, indices) whatever ``return_indices`` says."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@checked_signature("max_pool2d_with_indices(Tensor input, int[2] kernel_size, int[2]? stride, int[2] padding, "
                   "int[2] dilation, bool ceil_mode)", forwarded=True)
def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    """F.max_pool2d_with_indices: (values, indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@checked_signature("max_pool3d_with_indices(Tensor input, int[3] kernel_size, int[3]? stride, int[3] padding, "
                   "int[3] dilation, bool ceil_mode)", forwarded=True)
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    """F.max_pool3d_with_indices: (values, indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@checked_signature("adaptive_max_pool1d(Tensor input, int[1] output_size)", forwarded=True)
def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):
    """F.adaptive_max_pool1d_with_indices: (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


@checked_signature("adaptive_max_pool2d(Tensor input, int?[2] output_size)", forwarded=True)
def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):
    """F.adaptive_max_pool2d_with_indices: (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


@checked_signature("adaptive_max_pool3d(Tensor input, int?[3] output_size)", forwarded=True)
def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):
    """F.adaptive_max_pool3d_with_indices: (values, indices)."""
    return adaptive_max_pool3d(input, output_size, True)


# --- power-average pooling ----------------------------------------------------------------------
def _ntuple(value, n: int) -> tuple:
    return (int(value),) * n if isinstance(value, int) else tuple(int(v) for v in value)


def _lp_pool(pool, dims: int, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over each window of x^p) ^ (1 / p): the average pool of x^p times the window size."""
    if stride is not None:
        pooled = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        pooled = pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    area = int(np.prod(_ntuple(kernel_size, dims)))  # after the pool, whose parser checks kernel_size
    # sign * relu(abs): the value unchanged, no gradient where a window's power sum is exactly zero.
    return (_functions.sign(pooled) * _functions.relu(_functions.abs(pooled)) * area).pow(1.0 / norm_type)


@checked_signature("lp_pool1d(Tensor input, float norm_type, int[1] kernel_size, int[1]? stride, bool ceil_mode)")
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


@checked_signature("lp_pool2d(Tensor input, float norm_type, int[2] kernel_size, int[2]? stride, bool ceil_mode)")
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


@checked_signature("lp_pool3d(Tensor input, float norm_type, int[3] kernel_size, int[3]? stride, bool ceil_mode)")
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


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
    _require_tensor(indices, f"max_unpool{max(dims, 2)}d", "indices", 2)
    if indices.dtype != _C.int64:  # torch's first check, before the sizes
        raise RuntimeError(f"elements in indices should be type int64 but got: {_scalar_name(indices.dtype)}")
    op_dims = max(dims, 2)  # max_unpool1d runs as max_unpool2d over one more dim, as torch's
    in_dims = input.dim() + (1 if dims == 1 else 0)
    if in_dims not in (op_dims + 1, op_dims + 2):  # before the sizes, which read the spatial dims
        raise RuntimeError(f"Input to max_unpooling{op_dims}d should be a {op_dims + 1}d or {op_dims + 2}d Tensor, "
                           f"but got a tensor with {in_dims} dimensions.")
    kernel = _ntuple(kernel_size, dims)
    stride = kernel if stride is None else _ntuple(stride, dims)
    for name, given in (("kernel_size", kernel), ("stride", stride)):
        if len(given) != dims:
            raise RuntimeError(f"max_unpool{dims}d: {name} must be a single int or a tuple of {dims} ints, but got "
                               f"{len(given)} elements")
    padding = _ntuple(padding, dims)
    sizes = _unpool_size(input, kernel, stride, padding, output_size, dims)
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
    out = _functions.zeros((flat_index.shape[0], volume), dtype=input.dtype).scatter(1, flat_index, values)
    return out.reshape(*lead, *sizes)


@checked_signature("max_unpool1d(Tensor input, Tensor indices, int[1] kernel_size, int[1]? stride, "
                   "int[1] padding, int[]? output_size)")
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value written at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


@checked_signature("max_unpool2d(Tensor input, Tensor indices, int[2] kernel_size, int[2]? stride, "
                   "int[2] padding, int[]? output_size)")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value written at its flat h * W + w index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


@checked_signature("max_unpool3d(Tensor input, Tensor indices, int[3] kernel_size, int[3]? stride, "
                   "int[3] padding, int[]? output_size)")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: each value written at its flat (d * H + h) * W + w index."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)

