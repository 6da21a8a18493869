"""kiln.library: define operators from Python, as ``torch.library`` does.

``custom_op`` turns a Python function into a dispatcher operator: its schema is
inferred from the type annotations, it is called as ``kiln.ops.ns.name(...)``
(or through the returned object), and it rides the same dispatcher path as the
built-in ops. ``register_fake`` (a shape and dtype function, for capture) and
``register_autograd`` (a backward formula, for autograd) are stored on the op
for those layers to use.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import typing
from collections.abc import Sequence
from typing import Any, Callable, Iterable

from kiln import _C
from kiln._tensor import Tensor

__all__ = ["Library", "custom_op", "CustomOpDef", "infer_schema", "get_custom_op"]

_BACKEND_KEYS = ("CPU", "CUDA")
_custom_ops: dict[str, "CustomOpDef"] = {}


class Library:
    """A set of registrations in one namespace, undone when the object is
    deleted (or ``_destroy()`` is called). ``kind`` is "DEF", "FRAGMENT" or "IMPL"."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("DEF", "FRAGMENT", "IMPL"):
            raise ValueError(f"Unsupported kind: {kind!r}; expected 'DEF', 'FRAGMENT' or 'IMPL'")
        self.ns = ns
        self.kind = kind
        self._handle = _C._Library(kind, ns, dispatch_key or None)

    def define(self, schema: str, alias_analysis: str = "", *, tags: Iterable[str] = ()) -> str:
        """Defines an op from a schema string; returns its name."""
        self._handle.define(schema, [str(t) for t in tags])
        return schema.split("(", 1)[0]

    def impl(self, op_name: str, fn: Callable, dispatch_key: str = "CPU") -> None:
        """Registers ``fn`` (called with the op's arguments) as the op's kernel for ``dispatch_key``."""
        self._handle.impl(op_name, dispatch_key, fn)

    def _destroy(self) -> None:
        self._handle._destroy()


def _type_to_schema(annotation: Any, where: str) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is Tensor or annotation is _C.TensorBase:
        return "Tensor"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation is bool:
        return "bool"
    if annotation is str:
        return "str"
    if annotation is _C.dtype:
        return "ScalarType"
    if annotation is _C.device:
        return "Device"
    if annotation is numbers.Number:
        return "Scalar"
    if origin is typing.Union or (origin is not None and str(origin) == "types.UnionType"):
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1 and len(args) == 2:
            return _type_to_schema(non_none[0], where) + "?"
        if set(non_none) <= {int, float, bool}:
            return "Scalar" + ("?" if len(non_none) < len(args) else "")
    if origin in (list, Sequence, typing.Sequence, tuple) and args:
        element = args[0]
        return _type_to_schema(element, where) + "[]"
    raise ValueError(f"infer_schema(func): {where} has unsupported type {annotation!r}.")


def _default_to_schema(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_default_to_schema(v) for v in value) + "]"
    raise ValueError(f"infer_schema(func): unsupported default value {value!r}")


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema string of ``prototype_function`` from its annotations, as
    ``torch.library.infer_schema`` writes it: "(Tensor x, int n) -> Tensor"
    (prefixed with ``op_name`` when given)."""
    sig = inspect.signature(prototype_function)
    hints = typing.get_type_hints(prototype_function)
    if mutates_args != "unknown":
        mutates = set(mutates_args)
        unknown = mutates - set(sig.parameters)
        if unknown:
            raise ValueError(f"infer_schema(func): {sorted(unknown)} in mutates_args are not parameters of the function")
    else:
        mutates = set()
    params = []
    kw_only_started = False
    alias = iter("abcdefghijklmnopqrstuvwxyz")
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): Parameter {name} cannot be *args or **kwargs.")
        if name not in hints:
            raise ValueError(f"infer_schema(func): Parameter {name} must have a type annotation.")
        type_str = _type_to_schema(hints[name], f"Parameter {name}")
        if name in mutates:
            if not type_str.startswith("Tensor"):
                raise ValueError(f"infer_schema(func): mutated parameter {name} must be a Tensor")
            type_str = type_str.replace("Tensor", f"Tensor({next(alias)}!)", 1)
        if p.kind == p.KEYWORD_ONLY and not kw_only_started:
            params.append("*")
            kw_only_started = True
        text = f"{type_str} {name}"
        if p.default is not inspect.Parameter.empty:
            text += "=" + _default_to_schema(p.default)
        params.append(text)
    ret = hints.get("return", inspect.Signature.empty)
    if ret is inspect.Signature.empty:
        raise ValueError("infer_schema(func): No return type annotation was provided. Please add one.")
    if ret is None or ret is type(None):
        ret_str = "()"
    elif typing.get_origin(ret) is tuple:
        ret_str = "(" + ", ".join(_type_to_schema(a, "return") for a in typing.get_args(ret)) + ")"
    else:
        ret_str = _type_to_schema(ret, "return")
    schema = f"({', '.join(params)}) -> {ret_str}"
    return f"{op_name}{schema}" if op_name else schema


class CustomOpDef:
    """What ``custom_op`` returns: callable like the function it wraps, but every
    call goes through the dispatcher as the op ``ns::name``."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, device_types):
        self._namespace = namespace
        self._name = name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema
        self._init_fn = fn
        self._lib = Library(namespace, "FRAGMENT")
        self._lib.define(name + schema)
        for key in device_types:
            self._lib.impl(name, fn, key)
        self._fake_fn: Callable | None = None
        self._backward_fn: Callable | None = None
        self._setup_context_fn: Callable | None = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return _C._call_op(self._qualname, args, kwargs)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    @property
    def schema(self) -> str:
        return self._name + self._schema

    def register_kernel(self, device_types, fn: Callable | None = None):
        """Registers a device-specific kernel (``"cpu"`` or ``"cuda"``) for the op."""
        keys = [device_types] if isinstance(device_types, str) else list(device_types)

        def register(f):
            for key in keys:
                self._lib.impl(self._name, f, key.upper().split(":")[0])
            return f

        return register(fn) if fn is not None else register

    def register_fake(self, fn: Callable) -> Callable:
        """Stores a function computing the output's shape and dtype from the
        inputs' (used by capture, which records without running kernels)."""
        self._fake_fn = fn
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """Stores ``backward(ctx, *grads)`` and ``setup_context(ctx, inputs, output)``
        for the autograd layer."""
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    def _destroy(self) -> None:
        self._lib._destroy()
        _custom_ops.pop(self._qualname, None)


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None, schema: str | None = None):
    """Wraps a function into a custom operator ``ns::name``, like ``torch.library.custom_op``.

    Example::

        @kiln.library.custom_op("mylib::scale", mutates_args=())
        def scale(x: kiln.Tensor, factor: float) -> kiln.Tensor:
            return kiln.tensor(x.numpy() * factor)

        kiln.ops.mylib.scale(x, 2.0)
    """
    if "::" not in name:
        raise ValueError(f"custom_op: expected a qualified name 'namespace::name', got {name!r}")
    namespace, opname = name.split("::", 1)
    if mutates_args is None or isinstance(mutates_args, str) and mutates_args != "unknown":
        raise ValueError("custom_op: mutates_args must be a tuple of parameter names (or 'unknown')")
    keys = _BACKEND_KEYS if device_types is None else tuple(
        d.upper().split(":")[0] for d in ([device_types] if isinstance(device_types, str) else device_types)
    )

    def wrap(f: Callable) -> CustomOpDef:
        op_schema = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        op = CustomOpDef(namespace, opname, op_schema, f, keys)
        _custom_ops[op._qualname] = op
        return op

    return wrap(fn) if fn is not None else wrap


def get_custom_op(qualname: str) -> CustomOpDef | None:
    """The CustomOpDef registered for ``ns::name`` (with its fake and autograd functions)."""
    return _custom_ops.get(qualname)
