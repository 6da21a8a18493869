"""The rest of torch.nn.functional that kiln lacked, composed from kiln ops (their
gradients are those ops'): fractional_max_pool2d/3d (and _with_indices), the
max_pool*_with_indices / adaptive_max_pool*_with_indices wrappers, the
deprecated upsample_nearest / upsample_bilinear, conv_transpose3d, conv_tbc,
triplet_margin_with_distance_loss, the in-place activations elu_ / celu_ /
selu_ / hardtanh_ / leaky_relu_ / threshold_, and native_channel_shuffle.

``install`` (called last by kiln/__init__.py) puts them on kiln.nn.functional
and, through kiln/nn/_nn_extra2.py, the torch.* spellings of the nn ops
(torch.kl_div, torch.convolution, torch.lstm, ...) on the kiln namespace; it
only fills names that are missing.

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
"""

from __future__ import annotations

import warnings

import numpy as np

from kiln import _C

_NEW_FUNCTIONAL = [
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "upsample_nearest", "upsample_bilinear", "conv_transpose3d", "conv_tbc",
    "triplet_margin_with_distance_loss", "elu_", "celu_", "selu_", "hardtanh_", "leaky_relu_", "threshold_",
    "native_channel_shuffle",
]


def _f():
    return _C._functions


def _F():
    from kiln.nn import functional

    return functional


def _tensor(values, dtype):
    from kiln._creation import tensor

    return tensor(values, dtype=dtype)


# --- fractional max pooling ---------------------------------------------------------------------
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
        from kiln._comparison import scalar_type_name

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


# --- the *_with_indices wrappers ----------------------------------------------------------------
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    """F.max_pool1d_with_indices: (values, indices) whatever ``return_indices`` says."""
    return _F().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    """F.max_pool2d_with_indices: (values, indices)."""
    return _F().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False):
    """F.max_pool3d_with_indices: (values, indices)."""
    return _F().max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):
    """F.adaptive_max_pool1d_with_indices: (values, indices)."""
    return _F().adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):
    """F.adaptive_max_pool2d_with_indices: (values, indices)."""
    return _F().adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):
    """F.adaptive_max_pool3d_with_indices: (values, indices)."""
    return _F().adaptive_max_pool3d(input, output_size, True)


# --- deprecated upsampling ----------------------------------------------------------------------
def upsample_nearest(input, size=None, scale_factor=None):
    """F.upsample_nearest: interpolate(mode='nearest'), with torch's deprecation warning."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return _F().interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """F.upsample_bilinear: interpolate(mode='bilinear', align_corners=True), with the deprecation warning."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return _F().interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- convolutions -------------------------------------------------------------------------------
def _dilate(x, dim: int, stride: int):
    """x with stride - 1 zeros between neighbours along ``dim`` (differentiable: stack and narrow)."""
    if stride == 1 or x.shape[dim] == 0:
        return x
    zeros = x * 0
    stacked = _f().stack([x] + [zeros] * (stride - 1), dim + 1)
    shape = list(x.shape)
    shape[dim] = shape[dim] * stride
    return stacked.reshape(shape).narrow(dim, 0, (x.shape[dim] - 1) * stride + 1)


def _triple(value) -> list:
    values = [int(value)] * 3 if isinstance(value, int) else [int(v) for v in value]
    return values * 3 if len(values) == 1 else values


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """F.conv_transpose3d: input (N, C_in, D, H, W) or unbatched, weight (C_in, C_out / groups, kD, kH, kW).
    Composed as torch defines it: the input dilated by the stride, zero padded by dilation * (k - 1) -
    padding (+ output_padding after), then conv3d with the spatially flipped, group-transposed weight."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of "
                           f"size: {list(input.shape)}")
    if input.dim() == 4:
        return conv_transpose3d(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                                dilation).squeeze(0)
    if weight.dim() != 5:
        raise RuntimeError(f"weight should have 5 dimensions for a 3-D transposed convolution, got {weight.dim()}")
    stride, padding = _triple(stride), _triple(padding)
    output_padding, dilation = _triple(output_padding), _triple(dilation)
    if input.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got {input.shape[1]} "
                           "channels instead")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_depth: {output_padding[0]} output_padding_height: "
                               f"{output_padding[1]} output_padding_width: {output_padding[2]} stride_depth: "
                               f"{stride[0]} stride_height: {stride[1]} stride_width: {stride[2]} dilation_depth: "
                               f"{dilation[0]} dilation_height: {dilation[1]} dilation_width: {dilation[2]}")
    x = input
    for i in range(3):
        x = _dilate(x, 2 + i, stride[i])
    pads = []
    for i in reversed(range(3)):
        edge = dilation[i] * (weight.shape[2 + i] - 1) - padding[i]
        pads += [edge, edge + output_padding[i]]
    x = _F().pad(x, pads)
    c_in, c_out_g = weight.shape[0], weight.shape[1]
    kernel = list(weight.shape[2:])
    w = weight.reshape(groups, c_in // groups, c_out_g, *kernel).transpose(1, 2)
    w = w.reshape(groups * c_out_g, c_in // groups, *kernel).flip([2, 3, 4])
    return _F().conv3d(x, w, bias, 1, 0, dilation, groups)


def conv_tbc(input, weight, bias, pad: int = 0):
    """F.conv_tbc: a 1-D convolution of a (time, batch, channels) input with a (kernel, in, out) weight,
    zero padded by ``pad`` steps on both ends (a negative pad crops); conv1d underneath."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    steps = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if steps < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {steps}: "
                           f"[{steps}, {input.shape[1]}, {weight.shape[2]}]")
    x = _F().pad(input.permute(1, 2, 0), [pad, pad])                   # (B, C_in, T + 2 pad)
    out = _F().conv1d(x, weight.permute(2, 1, 0), bias)                 # (B, C_out, T')
    return out.permute(2, 0, 1)


# --- losses -------------------------------------------------------------------------------------
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """F.triplet_margin_with_distance_loss: max(margin + d(a, p) - d(a, n), 0), d pairwise_distance by default."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs")
    distance = distance_function if distance_function is not None else _F().pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = _f().minimum(dist_neg, distance(positive, negative))
    loss = (dist_pos + margin - dist_neg).clamp_min(0)
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if reduction == "mean" else loss


# --- in-place activations -----------------------------------------------------------------------
def elu_(input, alpha: float = 1.0):
    """F.elu_: elu in place (the C++ op elu_)."""
    return _f().elu_(input, alpha)


def celu_(input, alpha: float = 1.0):
    """F.celu_: celu in place."""
    return _f().celu_(input, alpha)


def selu_(input):
    """F.selu_: selu in place."""
    return _f().selu_(input)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """F.hardtanh_: hardtanh in place (like torch's, without F.hardtanh's min_val <= max_val check)."""
    return _f().hardtanh_(input, min_val, max_val)


def leaky_relu_(input, negative_slope: float = 0.01):
    """F.leaky_relu_: leaky_relu in place."""
    return _f().leaky_relu_(input, negative_slope)


def threshold_(input, threshold: float, value: float):
    """F.threshold_: x where x > threshold, else value, in place."""
    return _f().threshold_(input, threshold, value)


def native_channel_shuffle(input, groups: int):
    """F.native_channel_shuffle / torch.native_channel_shuffle: channel_shuffle's values."""
    return _F().channel_shuffle(input, groups)


def install(functional, kiln_namespace):
    """Adds this module's functions to kiln.nn.functional and the torch.* aliases to the kiln namespace
    (only names that are missing)."""
    module = globals()
    for name in _NEW_FUNCTIONAL:
        if not hasattr(functional, name):
            setattr(functional, name, module[name])
            if name not in getattr(functional, "__all__", [name]):
                functional.__all__.append(name)
    from kiln.nn import _nn_extra2

    _nn_extra2.install(functional, kiln_namespace)
