"""Convolutions of complex tensors (torch.nn.functional.conv1d/2d/3d and conv_transpose1d/2d
with a complex input, weight or bias), as four real convolutions of the parts:

    (xr + i xi) * (wr + i wi) = (xr * wr - xi * wi) + i (xr * wi + xi * wr),

bias.real joining the first product and bias.imag the third. Each convolution is a real
one, so values and gradients (through the real/imag views and kiln.complex) are the real
kernels'. As in torch, every operand must have the same dtype: a real one meeting a complex
one is a RuntimeError, not a promotion."""

from __future__ import annotations

from kiln import _complex
from kiln._arguments import _require_tensor
from kiln._comparison import scalar_type_name


def involves_complex(input, weight, bias) -> bool:
    return input.dtype.is_complex or weight.dtype.is_complex or (bias is not None and bias.dtype.is_complex)


def _check_same_dtype(input, weight, bias) -> None:
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"Input type ({scalar_type_name(input.dtype)}) and {name} type "
                               f"({scalar_type_name(t.dtype)}) should be the same")


def complex_conv(conv, input, weight, bias, *args):
    """conv(input, weight, bias, *args) for complex operands, from four calls of the real `conv`."""
    _require_tensor(input, "complex_conv", "input", 1)
    _require_tensor(weight, "complex_conv", "weight", 2)
    if bias is not None:
        _require_tensor(bias, "complex_conv", "bias", 3)
    _check_same_dtype(input, weight, bias)
    xr, xi, wr, wi = input.real, input.imag, weight.real, weight.imag
    real = conv(xr, wr, None if bias is None else bias.real, *args) - conv(xi, wi, None, *args)
    imag = conv(xr, wi, None if bias is None else bias.imag, *args) + conv(xi, wr, None, *args)
    return _complex.complex(real, imag)
