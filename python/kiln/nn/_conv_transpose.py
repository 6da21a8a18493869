"""conv_transpose1d and conv_transpose2d: the gradient of a convolution with
respect to its input, which is what a transposed convolution computes. They
run on the _conv2d_backward_input op (eager/ops/conv.yaml), whose derivative
formulas give their gradients (a convolution for the input, the weight
gradient of one for the weight). conv_transpose3d is composed as torch defines it: the
input dilated by the stride and padded, then conv3d with the flipped, group-transposed
weight. Re-exported by kiln.nn.functional.

Imports: kiln._C, kiln.nn._complex_conv, _conv3d, _conv_checks and _padding only."""

from __future__ import annotations

from kiln import _C
from kiln._arguments import checked_signature
from kiln.nn._complex_conv import complex_conv, involves_complex
from kiln.nn._conv3d import conv3d
from kiln.nn._conv_checks import check_weight_groups
from kiln._padding import pad


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _pad_to_forward_size(x, weight, size, stride, padding, dilation):
    """x zero-padded at the end of each spatial dim to the size a convolution of an input of ``size`` gives.

    Note [output_padding at least the stride]: output_padding may reach the stride when it stays below
    the dilation; the output then grows by more than the stride, and a convolution of that output is one
    or more positions longer than x. The transposed convolution is the backward of that convolution,
    whose grad_output holds zeros at the extra positions (no input position maps there)."""
    extra = []
    for i in range(2):
        forward = (size[2 + i] + 2 * padding[i] - dilation[i] * (weight.shape[2 + i] - 1) - 1) // stride[i] + 1
        extra.append(max(forward - x.shape[2 + i], 0))
    if not any(extra):
        return x
    return pad(x, [0, extra[1], 0, extra[0]])


@checked_signature("conv_transpose2d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, int[1] padding, "
                   "int[1] output_padding, int groups, int[1] dilation)")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution: input (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out / groups, kH, kW)."""
    if involves_complex(input, weight, bias):
        return complex_conv(conv_transpose2d, input, weight, bias, stride, padding, output_padding, groups, dilation)
    unbatched = input.dim() == 3
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: "
                           f"{list(input.shape)}")
    x = input.unsqueeze(0) if unbatched else input
    stride, padding = _tuple(stride, 2), _tuple(padding, 2)
    output_padding, dilation = _tuple(output_padding, 2), _tuple(dilation, 2)
    if weight.dim() != 4:
        raise RuntimeError(f"weight should have 4 dimensions for a 2-D transposed convolution, got {weight.dim()}")
    check_weight_groups(weight, groups)
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} to "
                           f"have {weight.shape[0]} channels, but got {x.shape[1]} channels instead")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {output_padding[0]} output_padding_width: {output_padding[1]} "
                               f"stride_height: {stride[0]} stride_width: {stride[1]} dilation_height: {dilation[0]} "
                               f"dilation_width: {dilation[1]}")
    if x.numel() == 0 and x.shape[0] != 0 and x.shape[1] != 0:  # as torch's backend choice, before any size
        raise RuntimeError("Only zero batch or zero channel inputs are supported, but got input shape: "
                           f"{list(x.shape)}")
    out_channels = weight.shape[1] * groups
    size = [x.shape[0], out_channels]
    for i in range(2):
        size.append((x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (weight.shape[2 + i] - 1)
                    + output_padding[i] + 1)
    if min(size[2:]) < 1:
        raise RuntimeError(f"Given input size per channel: ({x.shape[2]} x {x.shape[3]}). Calculated output size per "
                           f"channel: ({size[2]} x {size[3]}). Output size is too small")
    x = _pad_to_forward_size(x, weight, size, stride, padding, dilation)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):  # integers: exact in float64 below 2**53
        out = _C._functions._conv2d_backward_input(x.double(), weight.double(), size, list(stride), list(padding),
                                                   list(dilation), groups)
        out = out.to(x.dtype)
    else:
        out = _C._functions._conv2d_backward_input(x, weight, size, list(stride), list(padding), list(dilation),
                                                   groups)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.squeeze(0) if unbatched else out


@checked_signature("conv_transpose1d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, int[1] padding, "
                   "int[1] output_padding, int groups, int[1] dilation)")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution: input (N, C_in, L) or (C_in, L), weight (C_in, C_out / groups, k)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: "
                           f"{list(input.shape)}")
    if weight.dim() != 3:
        raise RuntimeError(f"weight should have 3 dimensions for a 1-D transposed convolution, got {weight.dim()}")
    check_weight_groups(weight, groups)  # before the 2-D form, so the message shows the 3-D weight
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _tuple(stride, 1)[0]),
                           (0, _tuple(padding, 1)[0]), (0, _tuple(output_padding, 1)[0]), groups,
                           (1, _tuple(dilation, 1)[0]))
    return out.squeeze(-2)


# --- 3-D: composed as torch defines it -----------------------------------------------------------
def _dilate(x, dim: int, stride: int):
    """x with stride - 1 zeros between neighbours along ``dim`` (differentiable: stack and narrow)."""
    if stride == 1 or x.shape[dim] == 0:
        return x
    zeros = x * 0
    stacked = _C._functions.stack([x] + [zeros] * (stride - 1), dim + 1)
    shape = list(x.shape)
    shape[dim] = shape[dim] * stride
    return stacked.reshape(shape).narrow(dim, 0, (x.shape[dim] - 1) * stride + 1)


def _triple(value) -> list:
    values = [int(value)] * 3 if isinstance(value, int) else [int(v) for v in value]
    return values * 3 if len(values) == 1 else values


@checked_signature("conv_transpose3d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, int[1] padding, "
                   "int[1] output_padding, int groups, int[1] dilation)")
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
    x = pad(x, pads)
    c_in, c_out_g = weight.shape[0], weight.shape[1]
    kernel = list(weight.shape[2:])
    w = weight.reshape(groups, c_in // groups, c_out_g, *kernel).transpose(1, 2)
    w = w.reshape(groups * c_out_g, c_in // groups, *kernel).flip([2, 3, 4])
    return conv3d(x, w, bias, 1, 0, dilation, groups)

