"""Flatten and Unflatten: reshape a range of dimensions, as torch.nn's."""

from __future__ import annotations

from kiln.nn.modules.module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise NotImplementedError("Unflatten: named dimensions are not supported in kiln")
        if not isinstance(dim, int):
            raise TypeError("invalid argument type for dim parameter")
        _require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _require_tuple_int(size) -> None:
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(size).__name__}")
    for idx, elem in enumerate(size):
        if not isinstance(elem, int):
            raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                            f"{type(elem).__name__} at pos {idx}")
