"""convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format,
as torch.nn.utils.memory_format: the (transposed) convolutions' weights, found
recursively, restrided to ``memory_format`` (e.g. kiln.channels_last).

Knowing difference: torch swaps the weight's storage in place through
``weight.data``; kiln has no ``.data`` setter, so each weight is replaced by a
new Parameter (same values, requires_grad and grad): an optimizer built before
the conversion keeps the old tensors, so convert before building it."""

from __future__ import annotations

from kiln.nn.modules.conv import Conv2d, ConvTranspose2d
from kiln.nn.modules.conv import Conv3d
from kiln.nn.modules.conv_transpose3d import ConvTranspose3d
from kiln.nn.parameter import Parameter

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _restride(module, memory_format) -> None:
    weight = module.weight
    new = Parameter(weight.detach().clone(memory_format=memory_format), weight.requires_grad)
    if weight.grad is not None:
        new.grad = weight.grad
    module.weight = new


def convert_conv2d_weight_memory_format(module, memory_format):
    """Every Conv2d / ConvTranspose2d weight in ``module`` in ``memory_format``; returns the module."""
    if isinstance(module, (Conv2d, ConvTranspose2d)):
        _restride(module, memory_format)
    for child in module.children():
        convert_conv2d_weight_memory_format(child, memory_format)
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """Every Conv3d / ConvTranspose3d weight in ``module`` in ``memory_format``; returns the module."""
    if isinstance(module, (Conv3d, ConvTranspose3d)):
        _restride(module, memory_format)
    for child in module.children():
        convert_conv3d_weight_memory_format(child, memory_format)
    return module
