"""Guards: what a cached graph assumes about a call.

A call's guard key is a tuple of (name, value) pairs: each tensor argument's
sizes, strides, dtype, device and requires_grad, which arguments are the same
tensor object, every non-tensor argument by value, grad mode, and for a module
its submodules' training flags and each parameter's and buffer's identity and
metadata. Two calls with equal keys replay the same graph. See README.md.
"""

from __future__ import annotations

from kiln import _C
from kiln._tensor import Tensor


class Unguardable(Exception):
    """An argument whose value cannot be guarded (not hashable): the call runs eagerly."""


def tensor_meta(t: Tensor) -> tuple:
    return (tuple(t.shape), t.stride(), t.dtype, t.device, t.requires_grad)


def flatten(value, tensors: list, path: str = "args"):
    """The structure of ``value`` with each tensor replaced by ("T", index into
    ``tensors``, where the tensor is appended). Tuples, lists and dicts are
    walked; anything else is a ("V", type, value) leaf, hashable or Unguardable."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return ("T", len(tensors) - 1)
    if isinstance(value, (tuple, list)):
        items = tuple(flatten(v, tensors, f"{path}[{i}]") for i, v in enumerate(value))
        if type(value) in (tuple, list):
            return (type(value).__name__, items)
        return ("sequence", type(value), items)  # a named tuple or another subclass
    if isinstance(value, dict):
        return ("dict", tuple((k, flatten(value[k], tensors, f"{path}[{k!r}]")) for k in value))
    try:
        hash(value)
    except TypeError as e:
        raise Unguardable(f"{path} is an unhashable {type(value).__name__}") from e
    return ("V", type(value), value)


def unflatten(spec, tensors: list):
    """The inverse of flatten: rebuilds the structure from ``tensors``."""
    kind = spec[0]
    if kind == "T":
        return tensors[spec[1]]
    if kind == "V":
        return spec[2]
    if kind == "tuple":
        return tuple(unflatten(s, tensors) for s in spec[1])
    if kind == "list":
        return [unflatten(s, tensors) for s in spec[1]]
    if kind == "dict":
        return {k: unflatten(s, tensors) for k, s in spec[1]}
    if kind == "sequence":
        cls, items = spec[1], [unflatten(s, tensors) for s in spec[2]]
        return cls(*items) if hasattr(cls, "_fields") else cls(items)
    raise TypeError(f"kiln.compile: cannot rebuild an output of kind {kind}")


def guard_key(args_spec, tensors: list, module_state: list, module) -> tuple:
    """The guard key of one call (see the module docstring)."""
    first_index = {}
    aliasing = tuple(first_index.setdefault(id(t), i) for i, t in enumerate(tensors))
    key = [("grad mode", _C.is_grad_enabled()), ("non-tensor arguments", args_spec), ("argument aliasing", aliasing)]
    key.extend((f"tensor argument {i}", tensor_meta(t)) for i, t in enumerate(tensors))
    if module is not None:
        key.append(("training flags", tuple(m.training for m in module.modules())))
        key.extend((f"parameter/buffer {name}", (id(t), tensor_meta(t))) for name, t in module_state)
    return tuple(key)


def first_difference(old: tuple, new: tuple) -> str:
    """The name of the first guard that differs between two keys."""
    if len(old) != len(new):
        return "number of tensors"
    for (name, a), (_, b) in zip(old, new):
        if a != b:
            return name
    return "none"
