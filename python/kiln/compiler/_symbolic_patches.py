"""What a symbolic capture changes in kiln while it runs (Note [Symbolic capture], _symbolic.py):
Tensor.size / .shape / len() / numel() hand out SymInts, and the ops whose C++ forms fold sizes into
literals (linear and matmul on operands of rank > 2, flatten, basic slicing) run as Python compositions that
pass the sizes as SymInts. Installed by ``patched(context)`` on the thread that captures."""

from __future__ import annotations

import contextlib
import sys

from kiln import _C
from kiln._tensor import Tensor
from kiln.compiler import _symbolic
from kiln.compiler._symbolic import SymInt

_TensorBase = _C.TensorBase
_base_size = _TensorBase.size
_base_dim = _TensorBase.dim
_base_getitem = Tensor.__getitem__
_base_linear = _C._functions.linear
_base_matmul = _C._functions.matmul
_base_tensor_matmul = _TensorBase.matmul
_base_flatten = _C._functions.flatten
_PATCHED = ("size", "shape", "__len__", "numel", "__getitem__", "matmul", "__matmul__", "flatten")
_originals = {name: Tensor.__dict__.get(name) for name in _PATCHED}  # None: inherited from TensorBase


class SymbolicShape(tuple):
    """Tensor.shape / size() during a symbolic capture: ints and SymInts."""

    def numel(self):
        n = 1
        for s in self:
            n = n * s
        return n


def _context_for(t):
    ctx = _symbolic.active_context()
    return ctx if ctx is not None and isinstance(t, _TensorBase) else None


def _size(self, dim=None):
    ctx = _context_for(self)
    if ctx is None:
        return _base_size(self) if dim is None else _base_size(self, dim)
    if dim is None:
        return SymbolicShape(ctx.size(self, d) for d in range(_base_dim(self)))
    if isinstance(dim, SymInt):
        dim = int(dim)
    return ctx.size(self, dim)


def _shape(self):
    return _size(self)


def _len(self):
    if _base_dim(self) == 0:
        raise TypeError("len() of a 0-d tensor")
    return _size(self, 0)


def _numel(self):
    ctx = _context_for(self)
    if ctx is None:
        return _TensorBase.numel(self)
    return _size(self).numel()


def _linear(input, weight, bias=None):
    if _symbolic.active_context() is None or not isinstance(input, _TensorBase) or _base_dim(input) <= 2:
        return _base_linear(input, weight, bias)
    # [..., k] -> [rows, k] @ weight^T (+ bias) -> [..., n], the fold's sizes as SymInts.
    shape = _size(input)
    rows = 1
    for s in shape[:-1]:
        rows = rows * s
    folded = input.reshape(rows, shape[-1])
    out = _base_linear(folded, weight, bias)
    return out.reshape(*shape[:-1], _base_size(weight, 0) if _base_dim(weight) == 2 else out.shape[-1])


def _matmul(a, b):
    if (_symbolic.active_context() is None or not isinstance(a, _TensorBase) or not isinstance(b, _TensorBase)
            or _base_dim(a) < 3):
        return _base_matmul(a, b)
    da, db = _base_dim(a), _base_dim(b)
    sa = _size(a)
    if db <= 2:  # fold the batch into rows
        rows = 1
        for s in sa[:-1]:
            rows = rows * s
        flat = _base_matmul(a.reshape(rows, sa[-1]), b)
        return flat.reshape(*sa[:-1], *([_size(b, 1)] if db == 2 else []))
    sb = _size(b)
    if da != db or _base_size(a)[:-2] != _base_size(b)[:-2]:
        return _base_matmul(a, b)  # broadcast batches: the probe run decides (Note [Symbolic capture])
    batch = 1
    for s in sa[:-2]:
        batch = batch * s
    out = _C._functions.bmm(a.reshape(batch, sa[-2], sa[-1]), b.reshape(batch, sb[-2], sb[-1]))
    return out.reshape(*sa[:-2], sa[-2], sb[-1])


def _flatten(input, start_dim=0, end_dim=-1):
    if _symbolic.active_context() is None or not isinstance(input, _TensorBase) or _base_dim(input) == 0:
        return _base_flatten(input, start_dim, end_dim)
    rank = _base_dim(input)
    start = start_dim + rank if start_dim < 0 else start_dim
    end = end_dim + rank if end_dim < 0 else end_dim
    if not 0 <= start <= end < rank:
        return _base_flatten(input, start_dim, end_dim)  # its own error
    if start == end:
        return input
    shape = _size(input)
    merged = 1
    for s in shape[start:end + 1]:
        merged = merged * s
    return input.reshape(*shape[:start], merged, *shape[end + 1:])


def _tensor_matmul(self, other):
    return _matmul(self, other)


def _tensor_matmul_operator(self, other):
    if not isinstance(other, _TensorBase):
        return NotImplemented
    return _matmul(self, other)


def _getitem(self, index):
    ctx = _symbolic.active_context()
    if ctx is not None:
        items = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, slice) and (isinstance(i.start, SymInt) or isinstance(i.stop, SymInt)) for i in items):
            sliced = _symbolic_slices(self, items)
            if sliced is not None:
                return sliced
    return _base_getitem(self, index)


def _symbolic_slices(t, items):
    """t[items] for a tuple of slices (step 1 or None, bounds ints/SymInts >= 0) and at most one Ellipsis,
    as narrows taking SymInt lengths; None for anything else (the ordinary indexing then runs)."""
    if sum(1 for i in items if i is Ellipsis) > 1 or not all(isinstance(i, slice) or i is Ellipsis for i in items):
        return None
    rank = _base_dim(t)
    n = sum(1 for i in items if i is not Ellipsis)
    if n > rank:
        return None
    dims = []
    for i in items:
        if i is Ellipsis:
            dims.extend([slice(None)] * (rank - n))
        else:
            dims.append(i)
    out = t
    for d, s in enumerate(dims):
        if s.step not in (None, 1):
            return None
        for bound in (s.start, s.stop):
            if bound is not None and not isinstance(bound, SymInt) and bound < 0:
                return None
        if s.start is None and s.stop is None:
            continue
        extent = _size(out, d)
        start = 0 if s.start is None else s.start
        stop = extent if s.stop is None else s.stop
        # Python clamps a slice to the extent; narrow does not: a guard keeps the capture's case.
        if stop > extent:
            stop = extent
        if start > stop:
            start = stop
        out = out.narrow(d, start, stop - start)
    return out


@contextlib.contextmanager
def patched(context):
    """Hands out SymInts for ``context`` on this thread while the block runs (Note [Symbolic capture]).
    The class attributes are installed for the block; other threads see them but get plain sizes."""
    kiln = sys.modules["kiln"]
    _symbolic._local.context = context
    replacements = dict(size=_size, shape=property(_shape), __len__=_len, numel=_numel, __getitem__=_getitem,
                        matmul=_tensor_matmul, __matmul__=_tensor_matmul_operator, flatten=_flatten)
    for name, value in replacements.items():
        setattr(Tensor, name, value)
    _C._functions.linear = _linear
    _C._functions.matmul = _matmul
    _C._functions.flatten = _flatten
    kiln.matmul = _matmul
    kiln.flatten = _flatten
    try:
        yield context
    finally:
        _symbolic._local.context = None
        for name, value in _originals.items():
            if value is None:
                delattr(Tensor, name)
            else:
                setattr(Tensor, name, value)
        _C._functions.linear = _base_linear
        _C._functions.matmul = _base_matmul
        _C._functions.flatten = _base_flatten
        kiln.matmul = _base_matmul
        kiln.flatten = _base_flatten
