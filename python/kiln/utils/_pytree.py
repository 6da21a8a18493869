"""Pytrees for the function transforms (kiln.func) and activation checkpointing
(kiln.utils.checkpoint): nested tuples, lists, dicts (plain, OrderedDict,
defaultdict), deques and namedtuples, as ``torch.utils._pytree``.

Everything else (tensors, numbers, None, strings) is a leaf. ``TreeSpec``'s
``repr`` and :func:`treespec_pprint` print what torch's print, because the
transforms quote them in their error messages. Dict leaves are in insertion
order, as torch's.
"""

from __future__ import annotations

import collections
from typing import Any, Callable

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_map",
           "treespec_pprint", "broadcast_prefix"]


class namedtuple:  # noqa: N801  (the name torch's TreeSpec prints for every namedtuple type)
    """Marker type of a namedtuple node; the node's context is the namedtuple class."""


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _node_parts(tree) -> tuple[type, Any, list] | None:
    """(node type, context, children) of a container node, or None for a leaf."""
    if _is_namedtuple(tree):
        return namedtuple, type(tree), list(tree)
    kind = type(tree)
    if kind is tuple or kind is list:
        return kind, None, list(tree)
    if kind is collections.defaultdict:
        return kind, [tree.default_factory, list(tree.keys())], list(tree.values())
    if kind is dict or kind is collections.OrderedDict:
        return kind, list(tree.keys()), list(tree.values())
    if kind is collections.deque:
        return kind, tree.maxlen, list(tree)
    return None


def _rebuild(kind, context, children):
    if kind is namedtuple:
        return context(*children)
    if kind is tuple or kind is list:
        return kind(children)
    if kind is collections.defaultdict:
        return collections.defaultdict(context[0], zip(context[1], children))
    if kind is dict or kind is collections.OrderedDict:
        return kind(zip(context, children))
    if kind is collections.deque:
        return collections.deque(children, maxlen=context)
    raise TypeError(f"unknown pytree node type {kind}")


class TreeSpec:
    """The structure of a pytree: a node type, its context (dict keys, the
    namedtuple class) and the specs of its children."""

    def __init__(self, kind: type, context: Any, children: list["TreeSpec"]) -> None:
        self.type = kind
        self.context = context
        self.children_specs = children
        self.num_leaves = sum(c.num_leaves for c in children)
        self.num_children = len(children)

    def is_leaf(self) -> bool:
        return False

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if type(other) is not type(self):
            return False
        return (self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self, indent: int = 0) -> str:
        inner = ""
        if self.children_specs:
            indent += 2
            parts = [self.children_specs[0].__repr__(indent)]
            parts += ["\n" + " " * indent + c.__repr__(indent) for c in self.children_specs[1:]]
            inner = ",".join(parts)
        return f"TreeSpec({self.type.__name__}, {self.context}, [{inner}])"


class LeafSpec(TreeSpec):
    """The structure of a single leaf (printed ``*``)."""

    def __init__(self) -> None:
        super().__init__(type(None), None, [])
        self.num_leaves = 1

    def is_leaf(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, LeafSpec)

    __hash__ = None

    def __repr__(self, indent: int = 0) -> str:
        return "*"


_LEAF = LeafSpec()


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` (depth first, left to right) and its structure."""
    leaves: list = []

    def walk(node) -> TreeSpec:
        parts = _node_parts(node)
        if parts is None:
            leaves.append(node)
            return _LEAF
        kind, context, children = parts
        return TreeSpec(kind, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, spec: TreeSpec):
    """Rebuilds a pytree of structure ``spec`` from its leaves."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to "
                         f"a pytree that holds {spec.num_leaves} items ({spec}).")
    it = iter(leaves)

    def build(s: TreeSpec):
        if s.is_leaf():
            return next(it)
        return _rebuild(s.type, s.context, [build(c) for c in s.children_specs])

    return build(spec)


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_map(fn: Callable, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


class _Asterisk:
    def __repr__(self) -> str:
        return "*"


def treespec_pprint(spec: TreeSpec) -> str:
    """The structure written as the pytree itself with ``*`` for each leaf: ``(*, [*, *])``."""
    return repr(tree_unflatten([_Asterisk()] * spec.num_leaves, spec))


def broadcast_prefix(prefix, spec: TreeSpec) -> list | None:
    """Flattens ``prefix`` against the full structure ``spec``: every leaf of
    ``prefix`` stands for all the leaves of the subtree at its place. None when
    ``prefix`` is not a prefix of ``spec`` (as torch's ``_broadcast_to_and_flatten``)."""
    out: list = []

    def walk(p, s: TreeSpec) -> bool:
        parts = _node_parts(p)
        if parts is None:
            out.extend([p] * s.num_leaves)
            return True
        if s.is_leaf():
            return False
        kind, context, children = parts
        if kind is not s.type or len(children) != s.num_children:
            return False
        if kind in (dict, collections.OrderedDict, collections.defaultdict):
            keys = context[1] if kind is collections.defaultdict else context
            full_keys = s.context[1] if kind is collections.defaultdict else s.context
            if set(keys) != set(full_keys):
                return False
            by_key = dict(zip(keys, children))
            children = [by_key[k] for k in full_keys]
        elif kind is namedtuple and context is not s.context:
            return False
        return all(walk(c, cs) for c, cs in zip(children, s.children_specs))

    return out if walk(prefix, spec) else None
