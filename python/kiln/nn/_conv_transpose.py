"""conv_transpose1d and conv_transpose2d: the gradient of a convolution with
respect to its input, which is what a transposed convolution computes. They
run on the _conv2d_backward_input op (eager/ops/conv.yaml), whose derivative
formulas give their gradients (a convolution for the input, the weight
gradient of one for the weight). Re-exported by kiln.nn.functional."""

from __future__ import annotations

from kiln import _C
from kiln.nn._conv_checks import check_weight_groups


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution: input (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out / groups, kH, kW)."""
    from kiln.nn._complex_conv import complex_conv, involves_complex

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
    out = _C._functions._conv2d_backward_input(x, weight, size, list(stride), list(padding), list(dilation), groups)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.squeeze(0) if unbatched else out


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
