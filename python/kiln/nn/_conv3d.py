"""F.conv3d composed from kiln's conv2d (re-exported by kiln.nn.functional).

Note [conv3d as one conv2d]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
Output depth position o reads the input depths o * stride + k * dilation for
k < KD. Those KD depth slices are stacked into the channel dimension (inside
each group, so a grouped conv2d still sees one group's channels together) and
the output depths are moved into the batch: one conv2d of batch N * OD over
KD * C channels, with the weight's depth folded into its input channels the
same way. The values and the gradients (of input, weight and bias) are
conv2d's, narrow's, pad's and permute's.
"""

from __future__ import annotations

from kiln import _C
from kiln._arguments import checked_signature
from kiln.nn._complex_conv import complex_conv, involves_complex
from kiln.nn._conv_checks import check_weight_groups
from kiln._padding import pad
from kiln.nn._ops import functions as _functions


def _triple(name: str, value, dims: int = 3) -> list:
    """An int or a 1- or 3-long sequence as a 3-long list, with torch's words otherwise."""
    values = [int(value)] * dims if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} values to match the "
                           f"convolution dimensions, but got {name}={values}")
    return values


def _conv3d_padding(padding, weight, stride, dilation):
    """(before, after) zero padding per spatial dim; 'same' pads the odd extra unit after, as torch."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * 3
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pads = []
        for d in range(3):
            total = dilation[d] * (weight.shape[2 + d] - 1)
            pads.append((total // 2, total - total // 2))
        return pads
    return [(p, p) for p in _triple("padding", padding)]


def _check_dilation(dilation, dtype) -> None:
    # torch's wordings (check_dilation in eager/kernels/cpu/nn/ConvShape.cpp): a negative value fails
    # check_shape_forward; a zero one fails in the backend torch picks, oneDNN for float32
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):
        if dtype == _C.float32:
            raise RuntimeError("non-positive dilation is not supported")
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")


def _check_conv3d(input, weight, bias, stride, pads, dilation, groups) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    _check_dilation(dilation, input.dtype)
    w = list(weight.shape)
    if weight.dim() != input.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight {w}, "
                           f"but got {input.dim()}-dimensional input of size {list(input.shape)} instead")
    check_weight_groups(weight, groups)
    if input.shape[1] != w[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {w}, expected input{list(input.shape)} to have "
                           f"{w[1] * groups} channels, but got {input.shape[1]} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != w[0]):
        raise RuntimeError(f"Given weight of size {w}, expected bias to be 1-dimensional with {w[0]} elements, but "
                           f"got bias of size {list(bias.shape)} instead")
    padded = [input.shape[2 + d] + pads[d][0] + pads[d][1] for d in range(3)]
    kernel = [dilation[d] * (w[2 + d] - 1) + 1 for d in range(3)]
    if any(k > p for k, p in zip(kernel, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual input "
                           "size")


@checked_signature("conv3d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, Any padding, int[1] dilation, "
                   "int groups)")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of a [N, C, D, H, W] (or unbatched [C, D, H, W]) input; see Note [conv3d as one conv2d]."""
    if involves_complex(input, weight, bias):
        return complex_conv(conv3d, input, weight, bias, stride, padding, dilation, groups)
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: "
                           f"{list(input.shape)}")
    if input.dim() == 4:
        return conv3d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    stride = _triple("stride", stride)
    dilation = _triple("dilation", dilation)
    if weight.dim() < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if weight.dim() != 5 and padding == "same":  # torch's _convolution_mode wording (no space before the sizes)
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional "
                           f"weight{list(weight.shape)}, but got 5-dimensional input of size {list(input.shape)} "
                           f"instead")
    if weight.dim() != 5:
        raise RuntimeError(f"expected stride to be a single integer value or a list of {weight.dim() - 2} values to "
                           f"match the convolution dimensions, but got stride={stride}")
    if padding == "same":
        _check_dilation(dilation, input.dtype)
    pads = _conv3d_padding(padding, weight, stride, dilation)
    _check_conv3d(input, weight, bias, stride, pads, dilation, groups)
    if any(before != after for before, after in pads[1:]):  # asymmetric 'same': pad H and W here
        input = pad(input, [pads[2][0], pads[2][1], pads[1][0], pads[1][1]])
        pads = [pads[0], (0, 0), (0, 0)]
    if pads[0] != (0, 0):
        input = pad(input, [0, 0, 0, 0, pads[0][0], pads[0][1]])
    n, c, depth, h, w = input.shape
    out_c, c_per_group, kd = weight.shape[0], weight.shape[1], weight.shape[2]
    sd, dd = stride[0], dilation[0]
    od = (depth - dd * (kd - 1) - 1) // sd + 1
    # [N, C, KD, OD, H, W]: the depth slice each kernel depth reads for every output depth.
    slices = [input.narrow(2, k * dd, sd * (od - 1) + 1) for k in range(kd)]
    if sd > 1:
        slices = [s[:, :, ::sd] for s in slices]
    stacked = _C._functions.stack(slices, 2) if kd > 1 else slices[0].unsqueeze(2)
    stacked = stacked.reshape(n, groups, c_per_group, kd, od, h, w).permute(0, 4, 1, 3, 2, 5, 6)
    stacked = stacked.reshape(n * od, groups * kd * c_per_group, h, w)
    folded = weight.permute(0, 2, 1, 3, 4).reshape(out_c, kd * c_per_group, weight.shape[3], weight.shape[4])
    out = _functions.conv2d(stacked, folded, bias, stride[1:], [pads[1][0], pads[2][0]], dilation[1:], groups)
    return out.reshape(n, od, out_c, out.shape[2], out.shape[3]).permute(0, 2, 1, 3, 4).contiguous()
