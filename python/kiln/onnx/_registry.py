"""The table of op converters: ``converts(kind, "arg names in schema order")``
registers a function ``convert(cx, a) -> output name(s)`` for a captured op
kind (``kiln::add.Tensor``). ``cx`` is the Context (the ONNX builder, dtypes
and sizes of kiln values); ``a`` the node's arguments by schema name."""

from __future__ import annotations

from kiln.onnx.errors import UnsupportedOperatorError
from kiln.onnx._symbolic import SymInt

CONVERTERS: dict = {}


def converts(*kinds: str, args: str):
    names = args.split()

    def register(fn):
        for kind in kinds:
            CONVERTERS[kind] = (fn, names)
        return fn

    return register


class Tensor(str):
    """An ONNX tensor name standing for a kiln tensor value (as opposed to a string literal)."""


class Args:
    """A node's arguments by schema name: positional values fill the first names, keywords the rest."""

    def __init__(self, node, names: list, resolve, cx):
        self.node = node
        self._cx = cx
        self._items: dict = {}
        for name, item in zip(names, node.positional):
            self._items[name] = item
        self._items.update(node.keyword)
        self._resolve = resolve

    def item(self, name: str):
        """The argument as recorded (a ValueRef or a literal), unresolved."""
        return self._items.get(name)

    def has(self, name: str) -> bool:
        return name in self._items and self.value(name) is not None

    def value(self, name: str, default=None):
        """The argument's Python value: a literal, a list (of literals, SymInts or Tensors), or a Tensor."""
        if name not in self._items:
            return default
        return self._resolve(self._items[name])

    def tensor(self, name: str) -> Tensor:
        v = self.value(name)
        if not isinstance(v, Tensor):
            raise UnsupportedOperatorError(f"kiln.onnx.export: {self.node.kind}: argument {name} is not a tensor "
                                           f"({v!r})")
        return v

    def optional_tensor(self, name: str):
        v = self.value(name)
        return v if isinstance(v, Tensor) else None

    def int(self, name: str, default=None) -> int:
        v = self.value(name, default)
        if isinstance(v, SymInt):
            raise UnsupportedOperatorError(f"kiln.onnx.export: {self.node.kind}: argument {name} depends on a "
                                           "dynamic axis, which this op's ONNX form needs as a constant")
        return v

    def ints(self, name: str) -> list:
        v = self.value(name)
        return [v] if isinstance(v, (int, SymInt)) else list(v)

    def static_ints(self, name: str) -> list:
        v = self.ints(name)
        if any(isinstance(x, SymInt) for x in v):
            raise UnsupportedOperatorError(f"kiln.onnx.export: {self.node.kind}: argument {name} depends on a "
                                           "dynamic axis, which this op's ONNX form needs as a constant")
        return v

    # The kiln types of the node's values.
    def dtype(self, name: str):
        return self._cx.dtype_of(self._items[name])

    def rank(self, name: str):
        return self._cx.rank_of(self._items[name])

    def sizes(self, name: str):
        return self._cx.sizes_of(self._items[name])

    def out_dtype(self, k: int = 0):
        return self.node.outputs[k][1].dtype

    def out_rank(self, k: int = 0):
        sizes = self.node.outputs[k][1].sizes
        return None if sizes is None else len(sizes)
