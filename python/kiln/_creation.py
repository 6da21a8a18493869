"""The creation functions that are not ops: ``tensor(data)`` (parses nested
Python data) and the ``*_like`` forms. empty, zeros, ones, full, arange and
linspace are ops in eager/ops/ops.yaml with generated bindings."""

from __future__ import annotations

from kiln import _C


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, numbers, arrays, tensors)."""
    return _C._tensor(data, dtype, device, requires_grad)


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
