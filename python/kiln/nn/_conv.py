"""The 1-D and 2-D convolutions of kiln.nn.functional (conv1d, conv2d: their C++ ops, complex
operands through _complex_conv), unfold / fold (the im2col / col2im ops) and conv_tbc.
conv3d is in _conv3d.py, the transposed convolutions in _conv_transpose.py.

Imports: kiln._padding, kiln.nn._ops and kiln.nn._complex_conv only.
"""

from __future__ import annotations

from kiln._arguments import checked_signature
from kiln.nn._complex_conv import complex_conv, involves_complex
from kiln.nn._ops import functions as _functions
from kiln import _padding


@checked_signature("conv1d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, Any padding, int[1] dilation, "
                   "int groups)")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if involves_complex(input, weight, bias):
        return complex_conv(conv1d, input, weight, bias, stride, padding, dilation, groups)
    return _functions.conv1d(input, weight, bias, stride, padding, dilation, groups)


@checked_signature("conv2d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, Any padding, int[1] dilation, "
                   "int groups)")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if involves_complex(input, weight, bias):
        return complex_conv(conv2d, input, weight, bias, stride, padding, dilation, groups)
    return _functions.conv2d(input, weight, bias, stride, padding, dilation, groups)


def _pair(value):
    """An int as (value, value); a sequence as a tuple (its length is the op's to check)."""
    return (value, value) if isinstance(value, int) else tuple(value)


@checked_signature("unfold(Tensor input)")
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a [C, H, W] or [N, C, H, W] input as columns: [(N,) C * KH * KW, L]."""
    return _functions.im2col(input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


@checked_signature("fold(Tensor input)")
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of unfold: columns [(N,) C * KH * KW, L] summed back into [(N,) C, H, W]."""
    return _functions.col2im(input, _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding),
                 _pair(stride))


@checked_signature("conv_tbc(Tensor input, Tensor weight, Tensor bias, int pad)")
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
    x = _padding.pad(input.permute(1, 2, 0), [pad, pad])                   # (B, C_in, T + 2 pad)
    out = conv1d(x, weight.permute(2, 1, 0), bias)                 # (B, C_out, T')
    return out.permute(2, 0, 1)

