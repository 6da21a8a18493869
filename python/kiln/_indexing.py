"""The indexing functions whose Python signature is not one op: ``nonzero``
with ``as_tuple`` (the ``nonzero`` and ``nonzero_numpy`` ops underneath)."""

from __future__ import annotations

from kiln import _C


def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the nonzero elements of ``input``: an (n, ndim) int64 tensor,
    or with ``as_tuple=True`` a tuple of ndim 1-D tensors, one per dim (a 0-dim
    input reads as one element, as numpy)."""
    if as_tuple:
        if out is not None:
            raise TypeError("nonzero(): out= cannot be combined with as_tuple=True")
        return _C._functions.nonzero_numpy(input)
    if out is not None:
        return _C._functions.nonzero(input, out=out)
    return _C._functions.nonzero(input)
