"""kiln.tensor(data): the one creation function that is not an op (it parses
nested Python data). The factories (empty, zeros, ones, full, arange, linspace,
logspace, eye, rand, ...) and the *_like forms are ops in eager/ops/*.yaml with
generated bindings."""

from __future__ import annotations

from kiln import _C


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, numbers, arrays, tensors)."""
    return _C._tensor(data, dtype, device, requires_grad)
