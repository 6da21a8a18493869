"""Conv1d, Conv2d and Conv3d with torch's signatures, initialisation
(kaiming_uniform_(a=sqrt(5)), bias uniform in +-1/sqrt(fan_in)) and reprs."""

from __future__ import annotations

import math

from kiln.nn import functional as F
from kiln.nn import init
from kiln.nn.modules._factory import empty_parameter, factory_kwargs, pair, single, triple
from kiln.nn.modules.module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        kwargs = factory_kwargs(device, dtype)
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
        if not isinstance(padding, str):
            self._reversed_padding_repeated_twice = [p for p in reversed(padding) for _ in range(2)]
        shape = ((in_channels, out_channels // groups, *kernel_size) if transposed
                 else (out_channels, in_channels // groups, *kernel_size))
        self.weight = empty_parameter(shape, kwargs)
        if bias:
            self.bias = empty_parameter((out_channels,), kwargs)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv(self, fn, input, weight, bias, zero_padding):
        if self.padding_mode != "zeros":
            mode = self.padding_mode
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=mode)
            return fn(padded, weight, bias, self.stride, zero_padding, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, single(kernel_size), single(stride),
                         padding if isinstance(padding, str) else single(padding), single(dilation), False,
                         single(0), groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv(F.conv1d, input, self.weight, self.bias, single(0))


class Conv2d(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, pair(kernel_size), pair(stride),
                         padding if isinstance(padding, str) else pair(padding), pair(dilation), False,
                         pair(0), groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv(F.conv2d, input, self.weight, self.bias, pair(0))


class Conv3d(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, triple(kernel_size), triple(stride),
                         padding if isinstance(padding, str) else triple(padding), triple(dilation), False,
                         triple(0), groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv(F.conv3d, input, self.weight, self.bias, triple(0))


class _ConvTransposeNd(_ConvNd):
    def _output_padding(self, input, output_size, dims: int):
        if output_size is None:
            return self.output_padding
        output_size = list(output_size)[-dims:]
        padding = []
        for d in range(dims):
            smallest = ((input.shape[input.dim() - dims + d] - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            extra = output_size[d] - smallest
            if not 0 <= extra < max(self.stride[d], self.dilation[d]):
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} "
                                 f"to {smallest + max(self.stride[d], self.dilation[d]) - 1} (for an input of "
                                 f"{list(input.shape)[-dims:]})")
            padding.append(extra)
        return tuple(padding)


class ConvTranspose1d(_ConvTransposeNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, single(kernel_size), single(stride), single(padding),
                         single(dilation), True, single(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size, 1), self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, pair(kernel_size), pair(stride), pair(padding), pair(dilation),
                         True, pair(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size, 2), self.groups, self.dilation)
