"""ConvTranspose3d with torch's signature, initialisation (that of the other
transposed convolutions, kiln/nn/modules/conv.py) and repr, over F.conv_transpose3d."""

from __future__ import annotations

from kiln.nn import functional as F
from kiln.nn.modules._factory import triple
from kiln.nn.modules.conv import _ConvTransposeNd

__all__ = ["ConvTranspose3d"]


class ConvTranspose3d(_ConvTransposeNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, triple(kernel_size), triple(stride), triple(padding),
                         triple(dilation), True, triple(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size, 3), self.groups, self.dilation)
