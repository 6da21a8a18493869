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
