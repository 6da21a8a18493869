"""F.fractional_max_pool2d / 3d and their *_with_indices forms, composed from kiln ops
(their gradients are gather's).

Note [Fractional max pooling as one gather]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each (sample, plane) has its own pseudo-random window starts along each
spatial dim, drawn from its ``_random_samples`` row u (one number per dim):
start[i] = int((i + u) * alpha) - int(u * alpha) with alpha = (in - k) /
(out - 1), the last start being in - k. The starts are computed in numpy in
the input's precision, as torch computes them (float16 / bfloat16 rounding
after every operation, as their C++ types do), so both pick the same windows. The windows' flat input
positions make one int64 table [B, C, O..., K...]; one gather of the
flattened input reads every window, max over the kernel offsets picks the
value (the first maximum in scan order, as torch's kernel does) and the same
table gives its flat index. The gradient is gather's: each output's gradient
goes to the element it picked.

Imports: kiln._C, kiln._comparison and kiln._creation only.
"""

from __future__ import annotations

import numpy as np

from kiln import _C
from kiln._arguments import checked_signature
from kiln._comparison import scalar_type_name
from kiln._creation import tensor


def _f():
    return _C._functions


def _tensor(values, dtype):
    return tensor(values, dtype=dtype)


def _sizes(value, dims: int, message: str) -> list:
    """An int or a 1- or ``dims``-long sequence as ``dims`` ints; RuntimeError ``message`` otherwise."""
    values = [int(value)] * dims if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        raise RuntimeError(message)
    return values


def _rounding(dtype):
    """(numpy compute type, rounding after each operation) that reproduce arithmetic in ``dtype``:
    float16 / bfloat16 compute in float32 and round every result back, as their C++ types do."""
    if dtype == _C.float64:
        return np.float64, lambda x: x
    if dtype == _C.float16:
        return np.float32, lambda x: np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)
    if dtype == _C.bfloat16:
        def to_bfloat16(x):
            bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
            return bits.astype(np.uint32).view(np.float32)
        return np.float32, to_bfloat16
    return np.float32, lambda x: x


def _window_starts(samples: np.ndarray, in_size: int, out_size: int, pool: int, dtype) -> np.ndarray:
    """[B, C, out] window starts along one dim; see Note [Fractional max pooling as one gather]."""
    np_type, rnd = _rounding(dtype)
    starts = np.zeros(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = rnd(rnd(np_type(in_size - pool)) / rnd(np_type(out_size - 1)))
        steps = rnd(np.arange(out_size - 1).astype(np_type))
        u = rnd(samples.astype(np_type))
        scaled = rnd(rnd(steps + u[..., None]) * alpha).astype(np.int64)
        starts[..., :-1] = scaled - rnd(u * alpha).astype(np.int64)[..., None]
    if out_size > 0:
        starts[..., -1] = in_size - pool
    return starts


def _check_fractional(name: str, input, kernel, out, samples, dims: int, prefix: str) -> None:
    """torch's checks of fractional_max_pool{2,3}d, in its order."""
    names = ["time", "height", "width"][3 - dims:]
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{prefix}: Expected {dims + 1}D or {dims + 2}D tensor, but got: {list(input.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{prefix}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(input.shape)} with dimension {i} being empty.")
    spatial = list(input.shape[-dims:])
    for i in range(dims):
        if out[i] + kernel[i] - 1 > spatial[i]:
            raise RuntimeError(f"{prefix}: pool {names[i]} {kernel[i]} too large relative to input {names[i]} "
                               f"{spatial[i]}")
    if min(out) < 0:
        shape = list(input.shape[:-dims]) + out
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {shape}")
    if samples.requires_grad:
        raise RuntimeError(f"The function '{name}' is not differentiable with respect to argument 'random_samples'. "
                           "This input cannot have requires_grad True.")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch = input.shape[0] if input.dim() == dims + 2 else 1
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-dims - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got {samples.shape[2]}.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}_out_frame" not implemented for \'{scalar_type_name(input.dtype)}\'')


def _fractional_pool(name: str, dims: int, prefix: str, input, kernel_size, output_size, output_ratio,
                     samples):
    """(values, indices) of fractional max pooling over the last ``dims`` dims."""
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if dims == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = (output_ratio,) * dims if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        output_size = [int(input.size(i - dims) * ratio[i]) for i in range(dims)]
    word = "Ints" if dims == 2 else "three Ints"
    kernel = _sizes(kernel_size, dims, f"{name}: kernel_size must either be a single Int or tuple of {word}")
    out = _sizes(output_size, dims, f"{name}: output_size must either be a single Int or tuple of {word}")
    if samples is None:
        batch = 1 if input.dim() == dims + 1 else input.size(0)
        samples = _f().rand(batch, input.size(-dims - 1), dims, dtype=input.dtype)
    _check_fractional(name, input, kernel, out, samples, dims, prefix)
    unbatched = input.dim() == dims + 1
    x = input.unsqueeze(0) if unbatched else input
    b, c = x.shape[0], x.shape[1]
    spatial = list(x.shape[2:])
    u = np.asarray(samples.detach()[:b].to(_C.float64).tolist(), dtype=np.float64).reshape(b, c, dims)
    u = u[..., ::-1] if dims == 2 else u  # 2-D samples are (width, height); 3-D ones (time, height, width)
    flat = np.zeros((b, c) + (1,) * (2 * dims), dtype=np.int64)
    for i in range(dims):
        starts = _window_starts(u[..., i], spatial[i], out[i], kernel[i], input.dtype)  # [B, C, O_i]
        pos = starts[..., :, None] + np.arange(max(kernel[i], 1))[None, :]          # [B, C, O_i, K_i]
        shape = [b, c] + [1] * (2 * dims)
        shape[2 + i], shape[2 + dims + i] = out[i], max(kernel[i], 1)
        stride = int(np.prod(spatial[i + 1:])) if i + 1 < dims else 1
        flat = flat + pos.reshape(shape) * stride
    windows = int(np.prod([max(k, 1) for k in kernel]))
    flat = np.broadcast_to(flat, (b, c, *out, *[max(k, 1) for k in kernel]))
    table = flat.reshape(b, c, int(np.prod(out)) * windows)
    index = _tensor(table.tolist(), _C.int64) if table.size else _f().zeros(tuple(table.shape), dtype=_C.int64)
    gathered = x.reshape(b, c, int(np.prod(spatial))).gather(-1, index).reshape(b, c, *out, windows)
    if min(kernel) <= 0:  # empty windows: -inf at each window's start, as torch's kernel leaves them
        values = _f().full((b, c, *out), float("-inf"), dtype=input.dtype) + gathered.sum(-1) * 0
        indices = index.reshape(b, c, *out, windows)[..., 0]
    else:
        values, argmax = gathered.max(-1)
        indices = index.reshape(b, c, *out, windows).gather(-1, argmax.unsqueeze(-1)).squeeze(-1)
    if unbatched:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


@checked_signature("fractional_max_pool2d_with_indices(Tensor input)")
def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """F.fractional_max_pool2d_with_indices: (values, indices) always; see Note [Fractional max pooling as
    one gather]."""
    return _fractional_pool("fractional_max_pool2d", 2, "fractional_max_pool2d()", input, kernel_size, output_size,
                            output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None):
    """F.fractional_max_pool2d: ``_random_samples`` [N, C, 2] (width, height) in [0, 1) fixes the windows."""
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                                _random_samples)
    return result if return_indices else result[0]


@checked_signature("fractional_max_pool3d_with_indices(Tensor input)")
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    """F.fractional_max_pool3d_with_indices: (values, indices) always."""
    return _fractional_pool("fractional_max_pool3d", 3, "fractional_max_pool3d_out()", input, kernel_size,
                            output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                          _random_samples=None):
    """F.fractional_max_pool3d: ``_random_samples`` [N, C, 3] (time, height, width) in [0, 1)."""
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                                _random_samples)
    return result if return_indices else result[0]

