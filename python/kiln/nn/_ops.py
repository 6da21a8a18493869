"""kiln.nn's access to the C++ ops (the bottom layer of kiln.nn: it imports only kiln._C).

``native`` and ``has_op`` ask whether this build has an op (for the few ops kiln may still lack:
see Note [Functional calls the C++ op where one exists] in kiln/nn/functional.py); ``ops.<name>``
calls kiln._C._functions.<name> or raises NotImplementedError naming the op; ``functions`` is
kiln._C._functions itself, for the ops every build has.
"""

from __future__ import annotations

from kiln import _C

__all__ = ["native", "has_op", "ops", "functions", "reduce_sum", "reduce_mean", "detached_amax"]

functions = _C._functions


def native(*names: str):
    """The first of ``names`` that kiln._C._functions has, or None."""
    for name in names:
        fn = getattr(functions, name, None)
        if fn is not None:
            return fn
    return None


def has_op(*names: str) -> bool:
    """True when every one of ``names`` is a kiln op in this build."""
    return all(getattr(functions, name, None) is not None for name in names)


class _Ops:
    """``ops.exp(x)`` calls kiln._C._functions.exp, or raises NotImplementedError
    naming the op when this build does not have it yet."""

    def __getattr__(self, name: str):
        fn = getattr(functions, name, None)
        if fn is None:
            raise NotImplementedError(f"kiln.nn needs the op '{name}', which this build of kiln does not have yet")
        return fn


ops = _Ops()


def _call(name: str, *args, **kwargs):
    """kiln._C._functions.<name>(*args), or NotImplementedError naming the op."""
    return getattr(ops, name)(*args, **kwargs)


def reduce_sum(x, dim=None, keepdim: bool = False):
    """x summed over ``dim`` (all dims when None): the sum op."""
    if dim is None:
        return functions.sum(x) if not keepdim else functions.sum(x, tuple(range(x.dim())), keepdim)
    return functions.sum(x, dim, keepdim)


def reduce_mean(x, dim=None, keepdim: bool = False):
    """x averaged over ``dim`` (all dims when None): the mean op."""
    if dim is None:
        return functions.mean(x) if not keepdim else functions.mean(x, tuple(range(x.dim())), keepdim)
    return functions.mean(x, dim, keepdim)


def detached_amax(x, dim, keepdim: bool = True):
    """The maxima of x over ``dim``, detached (a stabilising shift that takes no gradient)."""
    return functions.amax(x, dim, keepdim).detach()


def _scalar_name(dtype) -> str:
    """torch's C++ name of a dtype (Float, Long, ...) as its messages spell it."""
    return {_C.float32: "Float", _C.float64: "Double", _C.int32: "Int", _C.float16: "Half", _C.bfloat16: "BFloat16",
            _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte", _C.bool: "Bool"}.get(dtype, str(dtype))
