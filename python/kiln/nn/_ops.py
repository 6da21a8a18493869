"""Late-bound access to kiln's C++ ops for kiln.nn: an op missing from this build
raises NotImplementedError naming it instead of an AttributeError at import.

See Note [Functional calls the C++ op where one exists] in kiln/nn/functional.py.
"""

from __future__ import annotations

from kiln import _C

__all__ = ["native", "has_op", "ops"]


def native(*names: str):
    """The first of ``names`` that kiln._C._functions has, or None."""
    functions = _C._functions
    for name in names:
        fn = getattr(functions, name, None)
        if fn is not None:
            return fn
    return None


def has_op(*names: str) -> bool:
    """True when every one of ``names`` is a kiln op in this build."""
    return all(getattr(_C._functions, name, None) is not None for name in names)


class _Ops:
    """``ops.exp(x)`` calls kiln._C._functions.exp, or raises NotImplementedError
    naming the op when this build does not have it yet."""

    def __getattr__(self, name: str):
        fn = getattr(_C._functions, name, None)
        if fn is None:
            raise NotImplementedError(f"kiln.nn needs the op '{name}', which this build of kiln does not have yet")
        return fn


ops = _Ops()


# Note [Reductions before the reduction ops]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# sum and mean are kiln ops of their own (eager/ops/reduction.yaml); a build
# without them still trains: the sum over a dimension is a product with a ones
# vector (matmul, whose gradient broadcasts the incoming gradient back, exactly
# sum's), and the detached row maxima that softmax subtracts for stability are
# taken in numpy (no gradient flows through them). Once the ops exist these
# helpers call them.

def _dims(x, dim) -> tuple:
    if dim is None:
        return tuple(range(x.dim()))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted(d % max(x.dim(), 1) for d in dims))


def reduce_sum(x, dim=None, keepdim: bool = False):
    """x summed over ``dim`` (all dims when None)."""
    fn = native("sum")
    if fn is not None:
        return fn(x) if dim is None and not keepdim else fn(x, dim if dim is not None else _dims(x, None), keepdim)
    dims = _dims(x, dim)
    if x.dim() == 0:
        return x.clone()
    kept = [d for d in range(x.dim()) if d not in dims]
    moved = x.permute(*kept, *dims)
    rows = moved.reshape(-1, _numel([x.shape[d] for d in dims]))
    ones = _C._functions.ones((rows.shape[1], 1), dtype=x.dtype)
    out = rows.matmul(ones).reshape(tuple(x.shape[d] for d in kept))
    if keepdim:
        out = out.reshape(tuple(1 if d in dims else x.shape[d] for d in range(x.dim())))
    return out


def reduce_mean(x, dim=None, keepdim: bool = False):
    """x averaged over ``dim`` (all dims when None)."""
    fn = native("mean")
    if fn is not None:
        return fn(x) if dim is None and not keepdim else fn(x, dim if dim is not None else _dims(x, None), keepdim)
    count = _numel([x.shape[d] for d in _dims(x, dim)]) if x.dim() else 1
    return reduce_sum(x, dim, keepdim) / count


def detached_amax(x, dim, keepdim: bool = True):
    """The maxima of x over ``dim``, detached (a stabilising shift that takes no gradient)."""
    fn = native("amax")
    if fn is not None:
        return fn(x, dim, keepdim).detach()
    import numpy as np

    values = x.detach().numpy().max(axis=dim, keepdims=keepdim)
    return _C.from_numpy(np.ascontiguousarray(values))


def _numel(sizes) -> int:
    total = 1
    for s in sizes:
        total *= s
    return total
