"""Argument checks and the ``out=`` step shared by kiln's Python-level functions, with
torch's argument parser's messages: tensor / int / bool argument checks, a declared signature checked
before a call (``checked_signature``), dim wrapping, and writing a result into ``out``."""

from __future__ import annotations

import builtins
import functools
import inspect
import operator
import re
from typing import Callable, NamedTuple, Optional

from kiln import _C
from kiln._layout import layout as _layout

bool_ = builtins.bool


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python
_KILN_VALUE_TYPES = frozenset({"device", "layout", "memory_format", "Size", "finfo", "iinfo"})


def _type_name(value) -> str:
    """The type name torch's argument parser prints (CPython's tp_name): `int`, `list`, a Python
    class's own name, or an extension type's qualified name such as `kiln.dtype`."""
    kind = type(value)
    if kind.__module__ == "kiln" and kind.__name__ in _KILN_VALUE_TYPES:
        return f"kiln.{kind.__name__}"  # torch's parser names its own classes torch.device, torch.layout, ...
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
    if isinstance(value, _C.TensorBase) and (value.dim() != 0 or value.dtype == _C.bool):
        return False  # torch's parser takes a tensor for an int only when it is a 0-dim integer one
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


def _is_one_integer_tensor(value):
    """A tensor torch's parser reads as one int: one element of an integer dtype, any number of dims."""
    return (isinstance(value, _C.TensorBase) and value.numel() == 1 and not value.is_floating_point()
            and not value.is_complex() and value.dtype != _C.bool)


def _is_int_list(value):
    """torch's parser's int[] kind: a list or tuple whose first element is int-like (``_is_int_like``);
    torch checks the kind of that element alone and unpacks the others once every kind matched
    (``_unpack_int_list``). A tensor itself is refused ("must be tuple of ints, not Tensor")."""
    return isinstance(value, (list, tuple)) and (not value or _is_int_like(value[0]))


def _is_int_like(value):
    """torch's parser's is_int_or_symint: a one-element integer (or bool) tensor, or anything with
    ``__index__`` but a bool. An int past int64 is int-like: its overflow is an unpacking error."""
    if isinstance(value, _C.TensorBase):
        return value.numel() == 1 and not value.is_floating_point() and not value.is_complex()
    if isinstance(value, bool_):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _unpack_int_list(value, function, spelled):
    """Raises torch's parser's TypeError for the first int[] element it cannot unpack (1-based "pos"):
    a float, None, str, a tensor of more than one element or of a floating dtype, an int past int64.
    A bool after the first element is taken (as 0 or 1), as torch's unpacking does."""
    for i, element in enumerate(value):
        if isinstance(element, _C.TensorBase):
            if element.numel() == 1 and not element.is_floating_point() and not element.is_complex():
                continue
            error = f"type must be tuple of ints,but got {_type_name(element)}"
        else:
            try:
                index = operator.index(element)
            except TypeError:
                error = f"type must be tuple of ints,but got {_type_name(element)}"
            else:
                if -(1 << 63) <= index < 1 << 63:
                    continue
                error = "Overflow when unpacking long long"
        raise TypeError(f"{function}(): argument '{spelled}' failed to unpack the object at pos {i + 1} with "
                        f"error \"{error}\"")


def _unpack_optional_int_list(value, function, spelled):
    """``_unpack_int_list`` for an output size whose entries may be None (kept from the input)."""
    for i, element in enumerate(value):
        if element is not None:
            try:
                _unpack_int_list((element,), function, spelled)
            except TypeError as error:
                raise TypeError(str(error).replace("at pos 1 ", f"at pos {i + 1} ", 1)) from None


def _is_int_element(value):
    """An element of an output size whose entries may be None: an int (one past int64 refused) or a
    one-element integer tensor."""
    try:
        return _is_int(value) or _is_one_integer_tensor(value)
    except ValueError:
        return False


def _is_sized_int_list(value):
    """torch's parser's int[N]: an int, broadcast (an int past int64 raises ValueError, as ``_is_int``), a
    one-element integer or bool tensor, or an int[] list."""
    return _is_int(value) or _is_int_like(value) or _is_int_list(value)


def _is_optional_int_list(value):
    """An output size whose entries may be None (kept from the input), as F.adaptive_*_pool's."""
    return _is_sized_int_list(value) or isinstance(value, (list, tuple)) and all(
        v is None or _is_int_element(v) for v in value)


def _is_float_list(value):
    """torch's parser's float[]: a list or tuple of Python numbers (not tensors)."""
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool_) for v in value)


def _is_device(value):
    """torch's parser's Device: a kiln.device, a device string (parsed after every argument's kind is
    checked: ``_parse_device_string``) or an int (a CUDA ordinal)."""
    return isinstance(value, (str, _C.device)) or (type(value) is int and value >= 0)  # noqa: E721


def _parse_device_string(value):
    """A device string parsed as torch's parser does once the kinds match, so a malformed one raises
    the device parser's RuntimeError before the op does any work."""
    if isinstance(value, str):
        _C.device(value)


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
    "ScalarType": (lambda v: isinstance(v, _C.dtype) or v is float or v is int or v is bool or v is complex,
                   "kiln.dtype"),  # a Python type names its default dtype, as in torch
    "int[]": (_is_int_list, "tuple of ints"),
    "int[1]": (_is_sized_int_list, "tuple of ints"),
    "int?[1]": (_is_optional_int_list, "tuple of ints"),
    "float[]": (_is_float_list, "tuple of floats"),
    "Tensor[]": (_is_tensor_list, "tuple of Tensors"),
    "Device": (_is_device, "kiln.device"),
    "Layout": (lambda v: isinstance(v, _layout), "kiln.layout"),
    "MemoryFormat": (lambda v: isinstance(v, _C.memory_format), "kiln.memory_format"),
    "Generator": (lambda v: isinstance(v, _C.Generator), "kiln.Generator"),
}


class _Parameter(NamedTuple):
    position: Optional[int]  # 1-based; None for keyword-only
    name: str  # the Python parameter's name
    spelled: str  # the name torch's message gives it
    accepts: Callable  # value -> bool (may raise ValueError for an int past int64)
    words: str  # the kind, in the refusal's words
    overloaded: bool  # refused with the "invalid combination" message
    optional: bool  # None is taken
    parse: Optional[Callable]  # checks the value once every kind matched (a device string)
    unpack: Optional[Callable]  # (value, function, spelled): an int[]'s elements, unpacked once every kind matched
    forwarded: bool = False  # the op passes it on positionally: torch's message gives its position even for a keyword


def _parameter(position, name, spelled, kind, optional):
    """The declared parameter of schema kind `kind`; 'A|B' (an argument torch's overloads take as
    either kind) accepts either, and its refusal is the overload-list message."""
    kinds = [_KINDS[k] for k in kind.split("|")]
    parse = _parse_device_string if "Device" in kind.split("|") else None
    kinds_named = kind.split("|")
    unpack = (_unpack_int_list if any(k in ("int[]", "int[1]") for k in kinds_named) else
              _unpack_optional_int_list if "int?[1]" in kinds_named else None)
    if len(kinds) == 1:
        return _Parameter(position, name, spelled, *kinds[0], False, optional, parse, unpack)
    return _Parameter(position, name, spelled, lambda v: any(accepts(v) for accepts, _ in kinds),
                      " or ".join(w for _, w in kinds), True, optional, parse, unpack)


def _parse_signature(signature):
    """(function name, [_Parameter]) of 'name(Kind a, Kind? b=..., *, Kind c=..., Kind d as e)'
    (torch's schema words: SymInt is int, int[2] an int or a list of them, 'A|B' either kind; 'as e':
    torch's message names the argument e). Kinds outside _KINDS (Any, Dimname, ...) are not checked."""
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
        if all(k in _KINDS for k in kind.split("|")):
            parameters.append(_parameter(position, name, spelled[-1] if spelled else name, kind, optional))
        if position is not None:
            position += 1
    return function, parameters


def _check_arguments(function, parameters, args, kwargs, self_given):
    """Raises torch's parser's TypeError for the first argument `parameters` refuse, then parses
    what needs parsing (device strings). A method call (``self_given``) numbers its arguments after
    self, as torch's Tensor methods do. On every call of a declared op: one loop, tuples unpacked."""
    given = len(args)
    overflow = None  # torch's parser unpacks ints after matching kinds: a later kind's refusal comes first
    to_parse = None
    for position, name, spelled, accepts, words, overloaded, optional, parse, unpack, forwarded in parameters:
        if position is not None and position <= given:
            if self_given and position == 1:
                continue
            value = args[position - 1]
        elif kwargs and name in kwargs:
            value = kwargs[name]
            if not forwarded:
                position = None
        else:
            continue
        if value is None and optional:
            continue
        try:
            accepted = accepts(value)
        except ValueError as error:  # an int past int64: raised once every kind matched
            overflow = overflow or error
            continue
        if not accepted:
            # torch's parser names the one argument when only one overload takes this many arguments; one
            # argument given is the case that holds for every overloaded op declared here
            if overloaded and len(args) - self_given + len(kwargs) > 1:
                raise TypeError(_invalid_combination(function, args, kwargs, self_given, spelled, words))
            where = "" if position is None else f" (position {position - self_given})"
            if words == "tuple of ints" and isinstance(value, (list, tuple)) and value and value[0] is not None:  # its first element refused
                raise TypeError(f"{function}(): argument '{spelled}'{where} must be {words}, but found element of "
                                f"type {_type_name(value[0])} at pos 0")
            raise TypeError(f"{function}(): argument '{spelled}'{where} must be {words}, not {_type_name(value)}")
        if unpack is not None and overflow is None and isinstance(value, (list, tuple)):
            try:
                unpack(value, function, spelled)
            except TypeError as error:
                overflow = error
        if parse is not None:
            to_parse = to_parse or []
            to_parse.append((parse, value))
    if overflow is not None:
        raise overflow
    if to_parse:
        for parse, value in to_parse:
            parse(value)


def _invalid_combination(function, args, kwargs, self_given, spelled, words):
    """torch's parser's refusal when no overload matches: the kinds given, and the one that fit none."""
    given = [_type_name(a) if not isinstance(a, _C.TensorBase) else "Tensor" for a in args[self_given:]]
    given += [f"{k}={_type_name(v) if not isinstance(v, _C.TensorBase) else 'Tensor'}" for k, v in kwargs.items()]
    return (f"{function}() received an invalid combination of arguments - got ({', '.join(given)}), but expected "
            f"one of: argument '{spelled}' as {words}")


def check_positional_call(function, args, overloads, keywords=None):
    """The argument parser's step of a call a Python-level op makes to one of torch's overloaded ops
    (torch.stft calls its op with nine positional arguments; torch.ctc_loss is called as given).
    ``overloads``: (text, kinds) for each, in torch's order: the text its refusal lists, and the schema
    kinds of its parameters (``Kind?`` where None is taken). Returns the index of the first overload whose
    kinds take the arguments; if none does, raises the parser's "invalid combination" TypeError listing
    them all. Once an overload's kinds matched, an int past int64 raises its ValueError and an int[]
    element that does not unpack its TypeError."""
    keywords = keywords or {}
    for index, (text, kinds) in enumerate(overloads):
        names = [_listed_name(text, i) for i in range(len(kinds))]
        if len(args) > len(kinds) or any(k not in names[len(args):] for k in keywords):
            continue
        overflow = None
        for position, (name, kind) in enumerate(zip(names, kinds)):
            if position < len(args):
                value = args[position]
            elif name in keywords:
                value = keywords[name]
            else:
                continue
            if value is None and kind.endswith("?"):
                continue
            try:
                if not _KINDS[kind.rstrip("?")][0](value):
                    break
            except ValueError as error:
                overflow = overflow or error
            if kind in ("int[]", "int[1]") and overflow is None and isinstance(value, (list, tuple)):
                try:
                    _unpack_int_list(value, function, name)
                except TypeError as error:
                    overflow = error
        else:
            if overflow is not None:
                raise overflow
            return index
    raise TypeError(_invalid_combination_listing(function, args, keywords, [text for text, _ in overloads]))


def _listed_name(overload, position):
    """The name of an overload text's parameter at 0-based `position` ('tuple of ints input_lengths')."""
    return overload[1:-1].split(", ")[position].split(" = ")[0].split()[-1]


def _argument_type_name(value):
    return "Tensor" if isinstance(value, _C.TensorBase) else _type_name(value)


def _marked_type_name(value):
    """An argument as torch's refusal describes it under an overload: a list or tuple with its elements'
    types ('list of [int, float]', 'tuple of (int,)')."""
    if isinstance(value, list):
        return f"list of [{', '.join(_argument_type_name(v) for v in value)}]"
    if isinstance(value, tuple):
        return f"tuple of ({', '.join(_argument_type_name(v) for v in value)}{',' if len(value) == 1 else ''})"
    return _argument_type_name(value)


def _matches_listed_type(value, declared):
    """torch's invalid_arguments.cpp match of a value against one argument of an overload's text: by type
    name only ('float' takes an int too); a declaration with a default ('int hop_length = None') names no
    type it can match, so such an argument is always marked."""
    kind = declared.rsplit(" ", 1)[0]
    name = _argument_type_name(value)
    return name in {"float": ("float", "int"), "int": ("int",)}.get(kind, (kind,))


def _invalid_combination_listing(function, args, keywords, overloads):
    """torch's parser's refusal of a call no overload takes, as its format_invalid_args writes it: the
    types given, each overload's text, and under an overload of as many parameters as arguments given
    either the keywords it does not know (its text names a parameter with a default by the default's
    last word, so a keyword for one is never known) or the types again, the ones it refuses marked !so!."""
    given = [_argument_type_name(a) for a in args] + [f"{k}={_argument_type_name(v)}" for k, v in keywords.items()]
    message = (f"{function}() received an invalid combination of arguments - got ({', '.join(given)}), but "
               f"expected one of:\n")
    for overload in overloads:
        message += f" * {overload}\n"
        declared = overload[1:-1].split(", ")
        if len(declared) != len(args) + len(keywords):
            continue
        listed_names = [d.split()[-1] for d in declared[len(declared) - len(keywords):]]
        unknown = [k for k in keywords if k not in listed_names]
        if unknown:
            message += f"      didn't match because some of the keywords were incorrect: {', '.join(unknown)}\n"
            continue
        values = list(args) + [keywords[d.split()[-1]] for d in declared[len(args):]]
        marked = []
        for i, (value, text) in enumerate(zip(values, declared)):
            shown = ("" if i < len(args) else f"{text.split()[-1]}=") + _marked_type_name(value)
            marked.append(shown if _matches_listed_type(value, text) else f"!{shown}!")
        message += f"      didn't match because some of the arguments have invalid types: ({', '.join(marked)})\n"
    return message


def _refusal_of_the_call(op, function, error, args, kwargs):
    """The error a refused call raises: Python's own TypeError when the call does not even bind to
    the op's parameters (missing or extra arguments, which torch's parser reports first), else
    `error`. Runs only on the error path."""
    try:
        inspect.signature(op).bind(*args, **kwargs)
    except TypeError as binding:
        return TypeError(f"{function}() {binding}")
    return error


def checked_signature(signature, overloaded=False, forwarded=False):
    """Decorator: checks each argument given to the op against ``signature`` (torch's schema words:
    'diagflat(Tensor input, int offset=0)', ``Kind?`` where None is taken, ``*`` before keyword-only
    ones) before the op runs, raising torch's argument parser's TypeError (Note [Declared signatures
    of Python-level ops]). The wrapper's ``as_method`` is the same op as a Tensor method (its first
    argument self, the others numbered from 1), which kiln._tensor_bindings attaches. ``overloaded``:
    torch has several overloads of the op, so a refusal is its "invalid combination of arguments"
    TypeError. As torch's parser, an int past int64 is refused (ValueError) only once every kind matched.
    ``forwarded``: the op is an F-level function that passes its arguments on positionally to torch's op,
    so a refusal names the position even of an argument given by keyword."""
    function, parameters = _parse_signature(signature)
    if overloaded:
        parameters = [p._replace(overloaded=True) for p in parameters]
    if forwarded:
        parameters = [p._replace(forwarded=p.position is not None) for p in parameters]

    def decorate(op):
        def wrapper(self_given):
            @functools.wraps(op)
            def call(*args, **kwargs):
                try:
                    _check_arguments(function, parameters, args, kwargs, self_given)
                except (TypeError, ValueError, RuntimeError) as error:
                    raise _refusal_of_the_call(op, function, error, args, kwargs) from None
                return op(*args, **kwargs)
            return call

        checked, as_method = wrapper(False), wrapper(True)
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
