"""The shape functions PyTorch writes in Python (torch/functional.py): they take
varargs or a union type, so they are not generated from ops.yaml but call the
generated ops."""

from __future__ import annotations

from kiln import _C


def split(tensor, split_size_or_sections, dim=0):
    """Splits ``tensor`` into chunks of ``split_size_or_sections`` (an int) or of the listed sizes, along ``dim``.
    Each chunk is a view of ``tensor``."""
    return tensor.split(split_size_or_sections, dim)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views, no copies)."""
    return _C._functions.broadcast_tensors(tensors)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to, as a ``kiln.Size``; RuntimeError when they do not."""
    result: list[int] = []
    for index, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        for size in shape:
            if not isinstance(size, int) or isinstance(size, bool):
                raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
            if size < 0:
                raise ValueError("Attempting to broadcast a dimension with negative length!")
        if len(shape) > len(result):
            result = [1] * (len(shape) - len(result)) + result
        for i in range(-1, -len(shape) - 1, -1):
            if shape[i] == 1 or shape[i] == result[i]:
                continue
            if result[i] != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching argument at index "
                    f"{index} had {shape}; but expected shape should be broadcastable to {result}"
                )
            result[i] = shape[i]
    return _C.Size(result)
