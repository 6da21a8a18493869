"""Argument checks the Python convolutions share (conv3d, conv_transpose1d/2d), with
torch's words; the C++ conv1d/conv2d make the same checks in ConvShape.cpp."""

from __future__ import annotations


def check_weight_groups(weight, groups: int) -> None:
    """The weight's first dim holds at least `groups` filters, a whole number per group (torch's divisibility
    message prints the size in two brackets)."""
    shape = list(weight.shape)
    if shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {shape} instead")
    if groups and shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{shape}] instead")
