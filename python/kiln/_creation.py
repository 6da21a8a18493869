"""Creation functions with PyTorch's signatures: tensor, empty, zeros, ones, full,
arange, linspace and the ``*_like`` forms. Their bodies are in C++ (kiln._C)."""

from __future__ import annotations

from kiln import _C


def _size_from_args(fn: str, size: tuple, kwargs: dict) -> tuple:
    """The size of ``fn(*size, **kwargs)``: varargs ints, one sequence, or ``size=``."""
    size_kw = kwargs.pop("size", None)
    if kwargs:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if size_kw is not None:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        return size_kw
    if not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return size[0]
    return size


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, numbers, arrays, tensors)."""
    return _C._tensor(data, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None, **kwargs):
    """An uninitialised tensor of the given size."""
    return _C._empty(_size_from_args("empty", size, kwargs), dtype, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor filled with 0."""
    return _C._zeros(_size_from_args("zeros", size, kwargs), dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor filled with 1."""
    return _C._ones(_size_from_args("ones", size, kwargs), dtype, device, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, pin_memory=False, requires_grad=False):
    """A tensor filled with ``fill_value``; its dtype follows the value when not given."""
    return _C._full(size, fill_value, dtype, device, requires_grad)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, pin_memory=False,
           requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) spaced by ``step``; ``arange(n)`` counts to n."""
    if end is None:
        start, end = 0, start
    return _C._arange(start, end, step, dtype, device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, pin_memory=False,
             requires_grad=False):
    """``steps`` values evenly spaced from ``start`` to ``end`` inclusive."""
    return _C._linspace(start, end, steps, dtype, device, requires_grad)


# The *_like forms keep the input's memory layout (PyTorch's preserve_format):
# a transposed input gives a transposed-strided result.


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """An uninitialised tensor with ``input``'s shape, dtype, device and layout."""
    return _C._empty_like(input, dtype, device, requires_grad, "empty_like")


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of zeros with ``input``'s shape, dtype, device and layout."""
    return _C._full_like(input, 0, dtype, device, requires_grad, "zeros_like")


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of ones with ``input``'s shape, dtype, device and layout."""
    return _C._full_like(input, 1, dtype, device, requires_grad, "ones_like")


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """A tensor filled with ``fill_value`` with ``input``'s shape, dtype, device and layout."""
    return _C._full_like(input, fill_value, dtype, device, requires_grad, "full_like")
