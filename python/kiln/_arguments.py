"""Argument checks and the ``out=`` step shared by kiln's Python-level functions, with
torch's argument parser's messages: tensor / int / bool argument checks, a declared signature checked
before a call (``checked_signature``), dim wrapping, and writing a result into ``out``."""

from __future__ import annotations

import builtins
import functools
import operator
import re

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


# Note [Declared signatures of Python-level ops]
# A generated binding's arguments are checked by the C++ PythonArgParser before the op runs; an op
# written in Python has no such step, so a wrong kind of value (a dtype where a tensor goes, a float
# where an int goes, None where neither may be) used to reach its body and fail there with whatever
# Python raised: AttributeError ('int' object has no attribute 'dim'), IndexError, KeyError. The
# fuzz target fuzz/python/fuzz_python_functions.py finds those. ``checked_signature`` declares the
# op's signature in torch's schema words and checks every argument given against it first, raising
# the parser's TypeError with its words (argument name, position when given positionally, the kind
# expected, the value's type name). It checks kinds only: values (ranges, shapes, dtypes) stay the
# op's own checks.

def _is_int(value):
    if type(value) is int:  # noqa: E721 - the common case, first
        return -(1 << 63) <= value < 1 << 63 or _overflow()
    if isinstance(value, bool_):
        return False
    try:
        index = operator.index(value)
    except TypeError:
        return False
    return -(1 << 63) <= index < 1 << 63 or _overflow()


def _overflow():
    raise ValueError("Overflow when unpacking long long")  # torch's parser, for an int past int64


def _is_float(value):
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, _C.TensorBase):
        return value.dim() == 0 and not value.is_complex()
    return hasattr(value, "__float__") and not isinstance(value, (str, bytes, complex))


def _is_int_list(value):
    return isinstance(value, (list, tuple)) and all(_is_int(v) for v in value) or (
        isinstance(value, _C.TensorBase) and value.dim() <= 1 and not value.is_floating_point()
        and not value.is_complex())


def _is_tensor_list(value):
    return isinstance(value, (list, tuple)) and all(isinstance(v, _C.TensorBase) for v in value)


def _is_scalar(value):
    if isinstance(value, _C.TensorBase):
        return value.dim() == 0
    return isinstance(value, (int, float, complex)) or (  # a NumPy scalar too
        not isinstance(value, (str, bytes)) and any(hasattr(value, m) for m in ("__index__", "__float__", "__complex__")))


# torch's schema kind -> (accepts a value, the words of its refusal)
_KINDS = {
    "Tensor": (lambda v: isinstance(v, _C.TensorBase), "Tensor"),
    "int": (_is_int, "int"),
    "float": (_is_float, "float"),
    "bool": (lambda v: isinstance(v, bool_), "bool"),
    "str": (lambda v: isinstance(v, str), "str"),
    "Scalar": (_is_scalar, "Number"),
    "ScalarType": (lambda v: isinstance(v, _C.dtype), "torch.dtype"),
    "int[]": (_is_int_list, "tuple of ints"),
    "int[1]": (lambda v: _is_int(v) or _is_int_list(v), "tuple of ints"),
    "Tensor[]": (_is_tensor_list, "tuple of Tensors"),
}


def _parse_signature(signature):
    """[(position or None, name, name in messages, accepts, words, optional)] of
    'name(Kind a, Kind? b=..., *, Kind c=..., Kind d as e)' (torch's schema words: SymInt is int, int[2] an
    int or a list of them; 'as e': torch's message names the argument e). An argument torch's overloads
    take of different kinds is not declared: kiln's own check gives torch's overload-list message."""
    function, _, rest = signature.partition("(")
    parameters = []
    position = 1
    for item in rest.rstrip(")").split(","):
        item = item.strip()
        if item == "*":
            position = None
            continue
        kind, name, *spelled = item.split("=")[0].split()  # 'Tensor A as input': torch's message says input
        optional = kind.endswith("?")
        kind = re.sub(r"\[\d+\]", "[1]", kind.rstrip("?").replace("SymInt", "int"))  # int[2]: an int or a list
        if kind in _KINDS:  # Layout, Device, Generator, ...: not checked
            parameters.append((position, name, spelled[-1] if spelled else name, *_KINDS[kind], optional))
        if position is not None:
            position += 1
    return function, parameters


def _check_arguments(function, parameters, args, kwargs, self_given):
    """Raises torch's parser's TypeError for the first argument `parameters` refuse. A method call
    (``self_given``) numbers its arguments after self, as torch's Tensor methods do."""
    given = len(args)
    for position, name, spelled, accepts, words, optional in parameters:
        if position is not None and position <= given:
            if self_given and position == 1:
                continue
            value = args[position - 1]
        elif name in kwargs:
            value, position = kwargs[name], None
        else:
            continue
        if value is None and optional:
            continue
        if not accepts(value):
            where = "" if position is None else f" (position {position - self_given})"
            raise TypeError(f"{function}(): argument '{spelled}'{where} must be {words}, not {_type_name(value)}")


def checked_signature(signature):
    """Decorator: checks each argument given to the op against ``signature`` (torch's schema words:
    'diagflat(Tensor input, int offset=0)', ``Kind?`` where None is taken, ``*`` before keyword-only
    ones) before the op runs, raising torch's argument parser's TypeError (Note [Declared signatures
    of Python-level ops]). The wrapper's ``as_method`` is the same op as a Tensor method (its first
    argument self, the others numbered from 1), which kiln._tensor_bindings attaches."""
    function, parameters = _parse_signature(signature)

    def decorate(op):
        @functools.wraps(op)
        def checked(*args, **kwargs):
            _check_arguments(function, parameters, args, kwargs, False)
            return op(*args, **kwargs)

        @functools.wraps(op)
        def as_method(*args, **kwargs):
            _check_arguments(function, parameters, args, kwargs, True)
            return op(*args, **kwargs)

        checked.as_method = as_method
        return checked
    return decorate


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
