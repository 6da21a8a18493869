"""The lazy layers of torch.nn: LazyLinear, LazyConv1d/2d/3d,
LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d, LazyInstanceNorm1d/2d/3d.

Each is built as its concrete layer with zero input size (no parameters to
initialise), then holds placeholders (kiln.nn.UninitializedParameter /
UninitializedBuffer) until the first forward infers ``in_features`` /
``in_channels`` / ``num_features`` from the input (kiln/nn/modules/lazy.py);
after it the instance is of the concrete class. Constructor signatures and
defaults are torch's, including LazyInstanceNorm's affine=True and
track_running_stats=True (unlike InstanceNorm's), and the norms' inference of
``num_features`` from ``input.shape[1]`` even for unbatched input (as torch)."""

from __future__ import annotations

from kiln import _C
from kiln.nn.modules._factory import factory_kwargs
from kiln.nn.parameter import UninitializedBuffer, UninitializedParameter
from kiln.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from kiln.nn.modules.conv_transpose3d import ConvTranspose3d
from kiln.nn.modules.lazy import LazyModuleMixin
from kiln.nn.modules.linear import Linear
from kiln.nn.modules.module import _no_grad
from kiln.nn.modules.normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
)

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose ``in_features`` is ``input.shape[-1]`` of the first forward."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        kwargs = factory_kwargs(device, dtype)
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**kwargs)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**kwargs)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with _no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # materialized by load_state_dict: in_features from the weight, checked
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvMixin(LazyModuleMixin):
    """The lazy convolutions' shared part: ``in_channels`` from the channel dim of the first input."""

    _spatial_dims = 2

    def _lazy_setup(self, out_channels: int, bias: bool, device, dtype) -> None:
        kwargs = factory_kwargs(device, dtype)
        self.weight = UninitializedParameter(**kwargs)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**kwargs)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input) -> int:
        unbatched = self._spatial_dims + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            with _no_grad():
                self.weight.materialize(shape)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class LazyConv1d(_LazyConvMixin, Conv1d):
    cls_to_become = Conv1d
    _spatial_dims = 1

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConv2d(_LazyConvMixin, Conv2d):
    cls_to_become = Conv2d
    _spatial_dims = 2

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConv3d(_LazyConvMixin, Conv3d):
    cls_to_become = Conv3d
    _spatial_dims = 3

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups: int = 1,
                 bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConvTranspose1d(_LazyConvMixin, ConvTranspose1d):
    cls_to_become = ConvTranspose1d
    _spatial_dims = 1

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConvTranspose2d(_LazyConvMixin, ConvTranspose2d):
    cls_to_become = ConvTranspose2d
    _spatial_dims = 2

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._lazy_setup(out_channels, bias, device, dtype)


class LazyConvTranspose3d(_LazyConvMixin, ConvTranspose3d):
    cls_to_become = ConvTranspose3d
    _spatial_dims = 3

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, groups: int = 1,
                 bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._lazy_setup(out_channels, bias, device, dtype)


class _LazyNormMixin(LazyModuleMixin):
    """The lazy norms' shared part: ``num_features`` from ``input.shape[1]`` of the first input."""

    def _lazy_setup(self, affine: bool, track_running_stats: bool, bias: bool, device, dtype) -> None:
        kwargs = factory_kwargs(device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(**kwargs)
            if bias:
                self.bias = UninitializedParameter(**kwargs)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**kwargs)
            self.running_var = UninitializedBuffer(**kwargs)
            self.num_batches_tracked = _C._functions.zeros((), dtype=_C.int64)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with _no_grad():
                if self.affine:
                    self.weight.materialize((self.num_features,))
                    if self.bias is not None:
                        self.bias.materialize((self.num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((self.num_features,))
                    self.running_var.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(name: str, concrete: type, doc: str) -> type:
    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super(cls, self).__init__(0, eps, momentum, False, False, device, dtype)
        self._lazy_setup(affine, track_running_stats, bias, device, dtype)

    cls = type(name, (_LazyNormMixin, concrete), {"__init__": __init__, "cls_to_become": concrete, "__doc__": doc,
                                                   "__module__": __name__})
    return cls


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, "BatchNorm1d with num_features inferred.")
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, "BatchNorm2d with num_features inferred.")
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, "BatchNorm3d with num_features inferred.")
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, "InstanceNorm1d with num_features inferred.")
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, "InstanceNorm2d with num_features inferred.")
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, "InstanceNorm3d with num_features inferred.")
