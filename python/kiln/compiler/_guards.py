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
from kiln.compiler._symbolic import SymInt


class Unguardable(Exception):
    """An argument whose value cannot be guarded (not hashable): the call runs eagerly."""


def tensor_meta(t: Tensor) -> tuple:
    return (t.shape, t.stride(), t.dtype, t.device, t.requires_grad)


def flatten(value, tensors: list, path: str = "args"):
    """The structure of ``value`` with each tensor replaced by ("T", index into
    ``tensors``, where the tensor is appended). Tuples, lists and dicts are
    walked; anything else is a ("V", type, value) leaf, hashable or Unguardable
    (whose message names the leaf's path, e.g. ``args[0][1]``)."""
    cls = type(value)
    if cls is Tensor or isinstance(value, Tensor):
        tensors.append(value)
        return ("T", len(tensors) - 1)
    if cls is SymInt:  # a size the function returns: its value, guarded (Note [Symbolic capture])
        return ("V", int, int(value))
    if cls is tuple or cls is list:
        return (cls.__name__, tuple([flatten(v, tensors, path) for v in value]))
    if isinstance(value, (tuple, list)):  # a named tuple or another subclass
        return ("sequence", cls, tuple([flatten(v, tensors, path) for v in value]))
    if isinstance(value, dict):
        return ("dict", tuple([(k, flatten(value[k], tensors, path)) for k in value]))
    try:
        hash(value)
    except TypeError as e:
        raise Unguardable(f"{path} holds an unhashable {cls.__name__}") from e
    return ("V", cls, value)


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


def with_tensors(value, tensors):
    """``value`` rebuilt with its tensors, in flatten's order, taken from the iterator ``tensors``: the
    same structure (tuples, lists, named tuples and dicts, their classes kept where they can be rebuilt
    from their items) and the same other leaves."""
    cls = type(value)
    if cls is Tensor or isinstance(value, Tensor):
        return next(tensors)
    if cls is tuple or cls is list:
        return cls([with_tensors(v, tensors) for v in value])
    if isinstance(value, (tuple, list)):
        items = [with_tensors(v, tensors) for v in value]
        return cls(*items) if hasattr(cls, "_fields") else cls(items)
    if isinstance(value, dict):
        pairs = [(k, with_tensors(value[k], tensors)) for k in value]
        if cls is dict:
            return dict(pairs)
        try:
            return cls(pairs)
        except TypeError:  # a subclass that is not built from its pairs (defaultdict)
            return dict(pairs)
    return value


_FIELDS = ("sizes", "strides", "dtype", "device", "requires_grad")


def guard_key(args_spec, tensors: list, module_state: list, module) -> tuple:
    """The guard key of one call (see the module docstring); first_difference names its parts."""
    if len(tensors) > 1:
        first_index = {}
        aliasing = tuple([first_index.setdefault(id(t), i) for i, t in enumerate(tensors)])
    else:
        aliasing = ()
    metas = tuple([(t.shape, t.stride(), t.dtype, t.device, t.requires_grad) for t in tensors])
    if module is None:
        return (_C.is_grad_enabled(), args_spec, aliasing, metas)
    return (_C.is_grad_enabled(), args_spec, aliasing, metas, tuple([m.training for m in module.modules()]),
            tuple([(name, id(t), tensor_meta(t)) for name, t in module_state]))


def guard_names(key: tuple) -> list:
    """The name of every guard in a key (for explain)."""
    names = ["grad mode", "non-tensor arguments", "argument aliasing"]
    names += [f"tensor argument {i} {field}" for i in range(len(key[3])) for field in _FIELDS]
    if len(key) > 4:
        names.append("training flags")
        names += [f"parameter/buffer {name}" for name, _, _ in key[5]]
    return names


def describe(key: tuple) -> list:
    """Each guard of a key as "name: value" lines (for KILN_LOGS=guards), in guard_names' order."""
    lines = [f"grad mode: {key[0]}", f"non-tensor arguments: {key[1]!r}", f"argument aliasing: {key[2]!r}"]
    for i, meta in enumerate(key[3]):
        lines += [f"tensor argument {i} {field}: {value}" for field, value in zip(_FIELDS, meta)]
    if len(key) > 4:
        lines.append(f"training flags: {key[4]}")
        lines += [f"parameter/buffer {name}: id {ident}, {meta}" for name, ident, meta in key[5]]
    return lines


def first_difference(old: tuple, new: tuple) -> str:
    """The name of the first guard that differs between two keys."""
    for i, name in enumerate(("grad mode", "non-tensor arguments", "argument aliasing")):
        if old[i] != new[i]:
            return name
    if len(old[3]) != len(new[3]):
        return "number of tensor arguments"
    for i, (a, b) in enumerate(zip(old[3], new[3])):
        for field, x, y in zip(_FIELDS, a, b):
            if x != y:
                return f"tensor argument {i} {field}"
    if len(old) > 4 and old[4] != new[4]:
        return "training flags"
    if len(old) > 4:
        for (name, *a), (_, *b) in zip(old[5], new[5]):
            if a != b:
                return f"parameter/buffer {name}"
    return "none"


class ModuleStateGuard:
    """The module part of a guard key (training flags; each parameter's and buffer's identity and
    metadata), checked without walking named_parameters (Note [The cached-call fast path]): a
    ``_C._capture.ModuleGuard`` (C++: python/csrc/CallGuards.h) checks every submodule's training flag and
    the identity of each entry of its _modules, _parameters and _buffers, then the recorded
    parameters'/buffers' metadata. Built only for modules whose classes keep Module's own walks
    (``available``)."""

    __slots__ = ("modules", "tensors", "fast")

    def __init__(self, module, state_tensors: list):
        self.modules = list(module.modules())
        self.tensors = list(state_tensors)
        self.fast = _C._capture.ModuleGuard(self.modules, tuple(state_tensors))

    @staticmethod
    def available(module, module_cls) -> bool:
        walks = ("modules", "named_modules", "named_parameters", "named_buffers", "_named_members")
        return all(getattr(type(m), w) is getattr(module_cls, w) for m in module.modules() for w in walks)

    def check(self) -> bool:
        return self.fast.check()
