"""The 3-D pooling ops (max_pool3d, avg_pool3d, adaptive_avg_pool3d,
adaptive_max_pool3d) and adaptive_max_pool1d, composed from kiln's ops;
re-exported by kiln.nn.functional. Imports: kiln._C, kiln._creation and kiln._padding.

Note [Pooling through window tables]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Every pooling window is a box, so each op is planned per spatial dim: a table
of the input positions each output position reads. The average pools are
separable: along each dim they are a product with an (outputs x inputs)
averaging matrix (divisor included; zero padding simply has no column), so
three matmuls give value and gradient. The max pools gather the windows with
one index_select per dim ([B, O1, K1, O2, K2, O3, K3]), move the kernel
offsets last and take max(-1): the gradient goes to the one element chosen,
first in scan order on ties, as torch's kernels choose. Positions in the
padding are replaced by a valid position of the same window (the same
element twice cannot change a maximum or its index); a window with no valid
position reads a -inf slot appended to the input. The returned indices are
the flat (d * H + h) * W + w positions of the chosen elements, gathered from a
table of those positions the same way.
"""

from __future__ import annotations

import math

import numpy as np

from kiln import _C
from kiln._arguments import _require_tensor, checked_signature
from kiln._creation import tensor
from kiln._padding import pad


def _f():
    return _C._functions


def _tensor(values, dtype):
    return tensor(values, dtype=dtype)


def _parse(value, what: str, default=None) -> list:
    """An int or a 1- or 3-long sequence as 3 ints (None: ``default``); RuntimeError ``what`` otherwise."""
    if value is None and default is not None:
        return list(default)
    values = [int(value)] * 3 if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        values = values * 3
    if len(values) != 3:
        raise RuntimeError(what)
    return values


def _omitted(stride):
    """None for an omitted stride (None or an empty sequence: the kernel size)."""
    return None if stride is None or (not isinstance(stride, int) and len(stride) == 0) else stride


def _output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: floor (or ceil) of the window count; a ceil window must start in the input."""
    numerator = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = numerator // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _check_pool3d(name: str, input, k, s, p, d, ceil_mode: bool) -> list:
    """torch's checks, in its order; returns the output sizes."""
    _require_tensor(input, name.split("_out_")[0], "input", 1)
    if input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    spatial = list(input.shape[-3:])
    out = []
    for i in range(3):
        if s[i] == 0:
            raise RuntimeError("stride should not be zero")
        if p[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p[i]}")
        if p[i] > ((k[i] - 1) * d[i] + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
        out.append(_output_size(spatial[i], k[i], s[i], p[i], d[i], ceil_mode))
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: {k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} dW: {s[2]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} dilationH: {d[1]} "
                           f"dilationW: {d[2]}")
    if any(n == 0 for n in input.shape[input.dim() - 4:]):
        raise RuntimeError(f"{name}(): Expected input's non-batch dimensions to have positive length, but input has "
                           f"a shape of {list(input.shape)} and non-batch dimension 0 has length zero!")
    if name == "avg_pool3d" and any(n < kk for n, kk in zip(spatial, k)):
        raise RuntimeError(f"input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller than kernel size "
                           f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if any(pp > kk // 2 for pp, kk in zip(p, k)):
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {k[0]} kW: {k[2]} "
                           f"kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}")
    if min(out) < 1:
        channels = input.shape[-4]
        raise RuntimeError(f"Given input size: ({channels}x{'x'.join(map(str, spatial))}). Calculated output size: "
                           f"({channels}x{'x'.join(map(str, out))}). Output size is too small")
    return out


def _flatten_batch(input):
    """[N, C, D, H, W] or [C, D, H, W] as [B, D, H, W], and the leading shape to restore."""
    lead = tuple(input.shape[:-3])
    return input.reshape(-1, *input.shape[-3:]), lead


# --- window tables ------------------------------------------------------------------------------
def _sliding_table(size: int, out: int, k: int, s: int, p: int, d: int) -> np.ndarray:
    """[out, k] input positions of each window; padding positions -> a valid one of the window, or ``size``
    (the -inf slot) where the window has none."""
    pos = np.arange(out)[:, None] * s - p + np.arange(k)[None, :] * d
    valid = (pos >= 0) & (pos < size)
    first = np.where(valid.any(1), np.where(valid, pos, size).min(1), size)
    last = np.where(valid.any(1), np.where(valid, pos, -1).max(1), size)
    return np.where(valid, pos, np.where(pos < 0, first[:, None], last[:, None]))


def _adaptive_bounds(size: int, out: int):
    o = np.arange(out)
    return (o * size) // out, -((-(o + 1) * size) // out)  # floor(o * L / O), ceil((o + 1) * L / O)


def _adaptive_table(size: int, out: int) -> np.ndarray:
    """[out, kmax] positions of the adaptive windows, short windows repeating their last position."""
    start, end = _adaptive_bounds(size, out)
    kmax = int((end - start).max()) if out > 0 else 1
    pos = start[:, None] + np.arange(kmax)[None, :]
    return np.minimum(pos, (end - 1)[:, None])


def _max_over_tables(input, tables, return_indices: bool):
    """max over the windows the three tables describe; see Note [Pooling through window tables]."""
    x, lead = _flatten_batch(input)
    sizes = list(x.shape[1:])
    if any((t == n).any() for t, n in zip(tables, sizes)):  # a window of padding only: append -inf slots
        x = pad(x, [0, 1, 0, 1, 0, 1], value=-math.inf)
    b = x.shape[0]
    out_sizes = [t.shape[0] for t in tables]
    kernel = [t.shape[1] for t in tables]
    for i, table in enumerate(tables):
        dim = 1 + 2 * i
        x = x.index_select(dim, _tensor(table.reshape(-1).tolist(), _C.int64))
        x = x.reshape(*x.shape[:dim], out_sizes[i], kernel[i], *x.shape[dim + 1:])
    x = x.permute(0, 1, 3, 5, 2, 4, 6).reshape(b, *out_sizes, kernel[0] * kernel[1] * kernel[2])
    values, argmax = x.max(-1)
    values = values.reshape(*lead, *out_sizes)
    if not return_indices:
        return values
    d, h, w = sizes
    flat = ((tables[0][:, None, None, :, None, None] * h + tables[1][None, :, None, None, :, None]) * w
            + tables[2][None, None, :, None, None, :]).reshape(*out_sizes, -1)
    positions = _tensor(flat.tolist(), _C.int64).unsqueeze(0).expand(b, *out_sizes, flat.shape[-1])
    indices = positions.gather(-1, argmax.unsqueeze(-1)).squeeze(-1)
    return values, indices.reshape(*lead, *out_sizes)


def _average_matrix(size: int, out: int, start, end, divisor, dtype):
    """[out, size]: 1 / divisor over each window's positions inside the input."""
    pos = np.arange(size)[None, :]
    inside = (pos >= np.maximum(start, 0)[:, None]) & (pos < np.minimum(end, size)[:, None])
    weights = np.where(inside, 1.0 / np.asarray(divisor, dtype=np.float64)[:, None], 0.0)
    return _tensor(weights.reshape(-1).tolist(), dtype).reshape(out, size)


def _apply_separable(input, matrices):
    """input [..., D, H, W] with matrices [OD, D], [OH, H], [OW, W] applied along its last three dims."""
    x, lead = _flatten_batch(input)
    md, mh, mw = matrices
    b, d, h, _ = x.shape
    x = x.matmul(mw.t())                                            # [B, D, H, OW]
    x = mh.matmul(x)                                                # [B, D, OH, OW]
    oh, ow = x.shape[2], x.shape[3]
    x = md.matmul(x.reshape(b, d, oh * ow)).reshape(b, md.shape[0], oh, ow)
    return x.reshape(*lead, md.shape[0], oh, ow)


def _require_float(name: str, input) -> None:
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"kiln.nn.functional.{name}: {input.dtype} inputs are not supported yet "
                                  "(floating point only)")


# --- the ops ------------------------------------------------------------------------------------
@checked_signature("max_pool3d(Tensor input, int[3] kernel_size, int[3]? stride, int[3] padding, int[3] dilation, "
                   "bool ceil_mode)", forwarded=True)
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Max over [kD, kH, kW] windows of a [N, C, D, H, W] or [C, D, H, W] input (and the flat indices)."""
    k = _parse(kernel_size, "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
    s = _parse(_omitted(stride), "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints",
               default=k)
    p = _parse(padding, "max_pool3d: padding must either be a single int, or a tuple of three ints")
    d = _parse(dilation, "max_pool3d: dilation must be either a single int, or a tuple of three ints")
    out = _check_pool3d("max_pool3d_with_indices_out_cpu_template", input, k, s, p, d, ceil_mode)
    tables = [_sliding_table(n, o, kk, ss, pp, dd) for n, o, kk, ss, pp, dd in zip(input.shape[-3:], out, k, s, p, d)]
    return _max_over_tables(input, tables, return_indices)


def _integer_avg_pool3d(input, out, k, s, p, count_include_pad, divisor_override):
    """avg_pool3d of integers as torch's CPU kernel: each window's sum divided by its divisor in
    integer arithmetic (truncated toward zero). Sums are exact in float64 below 2**53."""
    ones, divisors = [], []
    for i, n in enumerate(input.shape[-3:]):
        start = np.arange(out[i]) * s[i] - p[i]
        end = np.minimum(start + k[i], n + p[i])
        ones.append(_average_matrix(n, out[i], start, end, np.full(out[i], 1.0), _C.float64))
        divisors.append(end - start if count_include_pad else np.minimum(end, n) - np.maximum(start, 0))
    sums = _apply_separable(input.to(_C.float64), ones)
    if divisor_override is not None:
        divisor = float(divisor_override)
    else:
        grid = divisors[0][:, None, None] * divisors[1][None, :, None] * divisors[2][None, None, :]
        divisor = _tensor(grid.astype(np.float64).reshape(-1).tolist(), _C.float64).reshape(*out)
    return (sums / divisor).trunc().to(input.dtype)


@checked_signature("avg_pool3d(Tensor input, int[1] kernel_size, int[1] stride, int[1] padding, bool ceil_mode, "
                   "bool count_include_pad, int? divisor_override)")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override=None):
    """Mean over [kD, kH, kW] windows (zero padding counted when count_include_pad; or / divisor_override)."""
    k = _parse(kernel_size, "avg_pool3d: kernel_size must be a single int, or a tuple of three ints")
    s = _parse(_omitted(stride), "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints",
               default=k)
    p = _parse(padding, "avg_pool3d: padding must be a single int, or a tuple of three ints")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out = _check_pool3d("avg_pool3d", input, k, s, p, [1, 1, 1], ceil_mode)
    if input.dtype != _C.bool and not input.dtype.is_floating_point and not input.dtype.is_complex:
        return _integer_avg_pool3d(input, out, k, s, p, count_include_pad, divisor_override)
    _require_float("avg_pool3d", input)
    matrices = []
    for i, n in enumerate(input.shape[-3:]):
        start = np.arange(out[i]) * s[i] - p[i]
        end = np.minimum(start + k[i], n + p[i])
        if divisor_override is not None:
            divisor = np.full(out[i], 1.0)
        elif count_include_pad:
            divisor = end - start
        else:
            divisor = np.minimum(end, n) - np.maximum(start, 0)
        matrices.append(_average_matrix(n, out[i], start, end, divisor, input.dtype))
    result = _apply_separable(input, matrices)
    return result / divisor_override if divisor_override is not None else result


def check_output_size_rank(input, output_size) -> None:
    """torch.nn.functional's own check of a list output_size (modules/utils.py _list_with_default):
    the input must have more dims than the list has entries, a ValueError before the op's checks."""
    if output_size is not None and not isinstance(output_size, int) and input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _adaptive_sizes(name: str, input, output_size, spatial: int, message: str) -> list:
    """The output sizes (None: the input's size), after torch's checks."""
    _require_tensor(input, name, "input", 1)
    check_output_size_rank(input, output_size)
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{name}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but "
                           f"got{':' if 'max' in name else ''} {list(input.shape)}")
    sizes = [output_size] * spatial if isinstance(output_size, int) or output_size is None else list(output_size)
    if len(sizes) != spatial:
        raise RuntimeError(message)
    sizes = [input.shape[input.dim() - spatial + i] if v is None else int(v) for i, v in enumerate(sizes)]
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {i} being empty")
    return sizes


def _adaptive_max(input, sizes: list, return_indices: bool):
    """adaptive max pooling over the last len(sizes) (1 to 3) dims, through 3-D window tables."""
    spatial = len(sizes)
    if min(sizes) < 0:
        shape = list(input.shape[:input.dim() - spatial]) + sizes
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {shape}")
    lead = tuple(input.shape[:input.dim() - spatial])
    if min(sizes) == 0:
        empty = _f().zeros((*lead, *sizes), dtype=input.dtype)
        values = empty + input.sum() * 0 if input.requires_grad else empty
        return (values, _f().zeros(tuple(empty.shape), dtype=_C.int64)) if return_indices else values
    inner = tuple(input.shape[input.dim() - spatial:])
    x = input.reshape(*lead, *((1,) * (3 - spatial)), *inner)
    tables = [np.zeros((1, 1), dtype=np.int64)] * (3 - spatial) + [_adaptive_table(n, o) for n, o in
                                                                    zip(inner, sizes)]
    result = _max_over_tables(x, tables, return_indices)
    if return_indices:
        return result[0].reshape(*lead, *sizes), result[1].reshape(*lead, *sizes)
    return result.reshape(*lead, *sizes)


@checked_signature("adaptive_avg_pool3d(Tensor input, int?[3] output_size)", forwarded=True)
def adaptive_avg_pool3d(input, output_size):
    """Mean over the windows [floor(o * L / O), ceil((o + 1) * L / O)) of each spatial dim."""
    sizes = _adaptive_sizes("adaptive_avg_pool3d", input, output_size, 3, "adaptive_avg_pool3d: output_size must be 3")
    if min(sizes) < 0:
        raise RuntimeError(f"adaptive_avg_pool3d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{sizes[0]}, {sizes[1]},{sizes[2]}}}")
    _require_float("adaptive_avg_pool3d", input)
    matrices = []
    for n, o in zip(input.shape[-3:], sizes):
        start, end = _adaptive_bounds(n, o)
        matrices.append(_average_matrix(n, o, start, end, end - start, input.dtype))
    return _apply_separable(input, matrices)


@checked_signature("adaptive_max_pool3d(Tensor input, int?[3] output_size)", forwarded=True)
def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    """Max over the adaptive windows (see adaptive_avg_pool3d), and the flat indices when return_indices."""
    sizes = _adaptive_sizes("adaptive_max_pool3d", input, output_size, 3,
                            "adaptive_max_pool3d(): internal error: output_size.size() must be 3")
    return _adaptive_max(input, sizes, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    """The composite adaptive_max_pool2d (kiln.nn.functional uses it where the build lacks the op)."""
    sizes = _adaptive_sizes("adaptive_max_pool2d", input, output_size, 2,
                            "adaptive_max_pool2d(): internal error: output_size.size() must be 2")
    return _adaptive_max(input, sizes, return_indices)


@checked_signature("adaptive_max_pool1d(Tensor input, int[1] output_size)", forwarded=True)
def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    """Max over the adaptive windows of the last dim of a [N, C, L] or [C, L] input (indices along L)."""
    _require_tensor(input, "adaptive_max_pool1d", "input", 1)
    if not isinstance(output_size, int):
        if output_size is None:
            raise TypeError("adaptive_max_pool1d(): argument 'output_size' (position 2) must be tuple of ints, not "
                            "NoneType")
        if len(output_size) != 1:
            raise RuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int (got "
                               f"{len(output_size)})")
        output_size = output_size[0]
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for adaptive_max_pool1d)")
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"adaptive_max_pool1d(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with dimension {i} being empty")
    if output_size < 0:
        shape = list(input.shape[:-1]) + [1, output_size]
        raise RuntimeError(f"Trying to create tensor with negative dimension {output_size}: {shape}")
    return _adaptive_max(input, [int(output_size)], return_indices)
