"""Argument checks and the ``out=`` step shared by kiln's Python-level functions, with
torch's argument parser's messages: a tensor / bool argument check, dim wrapping, and
writing a result into ``out``."""

from __future__ import annotations

import builtins
import operator

from kiln import _C

bool_ = builtins.bool


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


def _type_name(value) -> str:
    """The type name torch's argument parser prints (CPython's tp_name): `int`, `list`, a Python
    class's own name, or an extension type's qualified name such as `kiln.dtype`."""
    kind = type(value)
    if kind.__module__ == "builtins" or kind.__flags__ & _HEAP_TYPE:
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


def _require_tensor(value, function, argument="input", position=1):
    """torch's argument parser's TypeError for a non-tensor (``position=None`` for an argument
    torch names without one)."""
    if not isinstance(value, _C.TensorBase):
        where = f" (position {position})" if position is not None else ""
        raise TypeError(f"{function}(): argument '{argument}'{where} must be Tensor, not {_type_name(value)}")


def _require_int(value, function, argument, position=None):
    """torch's argument parser's TypeError for a non-int (a bool is refused, an integer 0-dim
    tensor or anything with ``__index__`` taken)."""
    if not isinstance(value, bool_):
        try:
            operator.index(value)
            return
        except TypeError:
            pass
    where = f" (position {position})" if position is not None else ""
    raise TypeError(f"{function}(): argument '{argument}'{where} must be int, not {_type_name(value)}")


def _require_bool(value, function, argument, position=None):
    """torch's argument parser's TypeError for a non-bool."""
    if not isinstance(value, bool_):
        where = f" (position {position})" if position is not None else ""
        raise TypeError(f"{function}(): argument '{argument}'{where} must be bool, not {type(value).__name__}")


def _check_tensor(op, position, argument, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{op}(): argument '{argument}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


def _wrap_dim(dim, ndim, wrap_scalar=True):
    """dim in [0, ndim) as torch's maybe_wrap_dim (a 0-d tensor takes -1 and 0 if wrap_scalar)."""
    if ndim == 0 and not wrap_scalar:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _write_out(result, out):
    """``result`` itself, or copied into ``out`` when one is given (torch's resize warning and cast check)."""
    if out is None:
        return result
    if isinstance(result, (list, tuple)):
        if len(out) != len(result):
            raise RuntimeError(f"expected {len(result)} out tensors, but got {len(out)}")
        for target, value in zip(out, result):
            _write_out(value, target)
        return None
    return _C._functions._copy_to_out(result, out)
