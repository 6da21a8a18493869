"""Creation functions with PyTorch's signatures: tensor, empty, zeros, ones, full,
arange, linspace and the ``*_like`` forms. Their bodies are in C++ (kiln._C)."""

from __future__ import annotations

from kiln import _C


def _size_from_args(fn: str, size: tuple, size_kw) -> tuple:
    if size_kw is not None:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (size_kw,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return size


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, numbers, arrays, tensors)."""
    return _C._tensor(data, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, pin_memory=False, memory_format=None, **kwargs):
    """An uninitialised tensor of the given size."""
    return _C._empty(_size_from_args("empty", size, kwargs.pop("size", None)), dtype, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor filled with 0."""
    return _C._zeros(_size_from_args("zeros", size, kwargs.pop("size", None)), dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor filled with 1."""
    return _C._ones(_size_from_args("ones", size, kwargs.pop("size", None)), dtype, device, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor filled with ``fill_value``; its dtype follows the value when not given."""
    return _C._full(tuple(size), fill_value, dtype, device, requires_grad)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) spaced by ``step``; ``arange(n)`` counts to n."""
    if end is None:
        start, end = 0, start
    return _C._arange(start, end, step, dtype, device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values evenly spaced from ``start`` to ``end`` inclusive."""
    return _C._linspace(start, end, steps, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return empty(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return zeros(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return ones(input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return full(
        input.shape, fill_value, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad
    )
