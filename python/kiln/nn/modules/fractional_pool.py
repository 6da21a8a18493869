"""FractionalMaxPool2d / FractionalMaxPool3d over F.fractional_max_pool2d/3d,
with torch's arguments, checks and (empty) repr. ``_random_samples``, when
given, is a buffer (so it shows in the state_dict, as in torch)."""

from __future__ import annotations

from kiln.nn import functional as F
from kiln.nn.modules._factory import pair, triple
from kiln.nn.modules.module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _tuple = staticmethod(pair)
    _functional = "fractional_max_pool2d"  # forward calls F.<this> at call time, as torch's modules do

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        self.kernel_size = self._tuple(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = self._tuple(output_size) if output_size is not None else None
        self.output_ratio = self._tuple(output_ratio) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return getattr(F, self._functional)(input, self.kernel_size, self.output_size, self.output_ratio,
                                            self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over the last two dims (Graham, 2014)."""


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over the last three dims."""

    _tuple = staticmethod(triple)
    _functional = "fractional_max_pool3d"
