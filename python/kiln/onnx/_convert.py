"""The statement walk: each captured statement through the converter table
(prim statements handled here), values kept by name, unused statements
skipped, in-place writes followed (Note [In-place writes in a captured graph])."""

from __future__ import annotations

from kiln.onnx import _ops_math, _ops_nn, _ops_rnn, _ops_shape  # noqa: F401  (they fill the converter table)
from kiln.onnx._builder import Builder
from kiln.onnx._graph_text import TensorType, ValueRef
from kiln.onnx._registry import CONVERTERS, Args, Tensor
from kiln.onnx.errors import OnnxExporterError, UnsupportedOperatorError


class Converter:
    """Walks the captured statements, filling ``env`` (kiln value name -> Tensor / literal / list)."""

    def __init__(self, builder: Builder, graph, where=lambda index: None):
        self.b = builder
        self.graph = graph
        self.where = where  # node index -> the submodule that recorded it, or None
        self.env: dict = {}
        self._lists: dict = {}  # ListConstruct output -> its recorded elements
        self.full_views: dict = {}  # value -> the value it views whole (as_strided over all of a contiguous base)
        self.types: dict = {name: t for name, t in graph.inputs}
        self.producers: dict = {}  # value -> the kind of the statement that made it
        for n in graph.nodes:
            self.types.update({name: t for name, t in n.outputs})
            self.producers.update({name: n.kind for name, _ in n.outputs})

    def resolve(self, item):
        if isinstance(item, ValueRef):
            if item.name not in self.env:
                raise OnnxExporterError(f"kiln.onnx.export: value %{item.name} has no ONNX form")
            return self.env[item.name]
        if isinstance(item, list):
            return [self.resolve(x) for x in item]
        return item

    def _type(self, item):
        return self.types.get(item.name) if isinstance(item, ValueRef) else None

    def dtype_of(self, item):
        t = self._type(item)
        return t.dtype if isinstance(t, TensorType) else None

    def sizes_of(self, item):
        t = self._type(item)
        return t.sizes if isinstance(t, TensorType) else None

    def rank_of(self, item):
        sizes = self.sizes_of(item)
        return None if sizes is None else len(sizes)

    def list_elements(self, item) -> list:
        """The recorded elements (ValueRefs or literals) of a list argument: a literal list, or a ListConstruct's."""
        if isinstance(item, list):
            return item
        return self._lists.get(getattr(item, "name", None), [])

    def run(self):
        live = _live_nodes(self.graph)
        for index, node in enumerate(self.graph.nodes):
            if not live[index]:
                continue
            try:
                self.convert(node)
            except UnsupportedOperatorError as e:
                module = self.where(index)
                if module is None:
                    raise
                raise UnsupportedOperatorError(f"{e} (called in {module})") from None

    def convert(self, node):
        names = [name for name, _ in node.outputs]
        if node.kind == "prim::Constant":
            self.env[names[0]] = self.resolve(node.keyword.get("value"))
            return
        if node.kind == "prim::ListConstruct":
            self.env[names[0]] = [self.resolve(x) for x in node.positional]
            self._lists[names[0]] = list(node.positional)
            return
        if node.kind == "prim::ListUnpack":
            items = self.resolve(node.positional[0])
            for name, item in zip(names, items):
                self.env[name] = item
            return
        entry = CONVERTERS.get(node.kind)
        if entry is None:
            op = node.kind.split("::", 1)[-1]
            raise UnsupportedOperatorError(
                f"kiln.onnx.export: the op {op} ({node.kind}) has no ONNX mapping in kiln.onnx; it was recorded "
                f"by the model's forward as: {node.line}")
        fn, arg_names = entry
        if _writes_in_place(node):
            written = node.positional[0].name
            if _op_name(self.producers.get(written, "")) in _VIEW_OPS and written not in self.full_views:
                raise UnsupportedOperatorError(
                    f"kiln.onnx.export: {node.kind} writes in place into a view ({self.producers[written]}) of "
                    f"another value, which ONNX cannot express; statement: {node.line}")
        result = fn(self, Args(node, arg_names, self.resolve, self))
        results = [result] if len(names) == 1 else list(result)
        for name, value in zip(names, results):
            if value is None:
                continue
            self.env[name] = _as_tensors(value)
        if _writes_in_place(node) and names and node.outputs[0][0] in self.env:
            self._rebind_written(node.positional[0].name, self.env[names[0]])

    def _rebind_written(self, written: str, value) -> None:
        """After an in-place op, later uses of the written value (and of the base it fully views) read the new
        value: Note [In-place writes in a captured graph]."""
        self.env[written] = value
        base = self.full_views.get(written)
        if base is not None:
            self._rebind_written(base, Tensor(self.b.op("Reshape", [value, self.b.op("Shape", [self.env[base]])])))


# Note [In-place writes in a captured graph]
# A captured graph is functional except where an in-place op has no functional form or writes
# through a view (kiln/compiler/README.md): ``full_like`` records ``empty_strided``, a flat
# ``as_strided`` view of it, and ``fill_`` on the view, and returns the base. ONNX values are
# immutable, so an in-place op's result becomes the value of what it wrote (its first argument),
# and when that is a view of a whole contiguous base (as_strided, offset 0, same element count:
# ``full_views``), the base's value too (the result reshaped to the base's shape). Other aliasing
# writes are not followed.


def _live_nodes(graph) -> list:
    """Which statements the outputs need (a statement's value may be unused: max_pool's indices, a loss's total
    weight). An in-place write keeps its statement live when what it writes is live."""
    needed = set(graph.outputs)
    views = {name: n.positional[0].name for n in graph.nodes
             if _op_name(n.kind) in _VIEW_OPS and n.positional and isinstance(n.positional[0], ValueRef)
             for name, _ in n.outputs}

    def writes_needed(node) -> bool:
        if not _writes_in_place(node):
            return False
        written = node.positional[0].name
        while written not in needed and written in views:
            written = views[written]
        return written in needed

    live = [False] * len(graph.nodes)
    for index in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[index]
        outputs = {name for name, _ in node.outputs}
        if not outputs & needed and not writes_needed(node):
            continue
        live[index] = True
        for item in list(node.positional) + list(node.keyword.values()):
            for ref in _refs(item):
                needed.add(ref)
    return live


def _refs(item):
    if isinstance(item, ValueRef):
        yield item.name
    elif isinstance(item, list):
        for x in item:
            yield from _refs(x)


# The ops whose result shares its input's storage (ops.yaml's ``Tensor(a)`` returns).
_VIEW_OPS = frozenset({"view", "_unsafe_view", "reshape", "_reshape_alias", "transpose", "t", "permute", "select",
                       "slice", "squeeze", "unsqueeze", "expand", "expand_as", "split", "split_with_sizes",
                       "unbind", "chunk", "narrow", "detach", "alias", "flatten", "unflatten", "movedim",
                       "as_strided", "diagonal", "contiguous", "view_as", "unfold", "numpy_T"})


def _op_name(kind: str) -> str:
    """``kiln::select.int`` -> ``select``."""
    return kind.split("::", 1)[-1].split(".", 1)[0]


def _writes_in_place(node) -> bool:
    op = _op_name(node.kind)
    return op.endswith("_") and not op.startswith("_") and bool(node.positional) and isinstance(
        node.positional[0], ValueRef)


def _as_tensors(value):
    """A converter's output: an ONNX name becomes a Tensor, a list (an op returning Tensor[]) a list of them."""
    if isinstance(value, list):
        return [_as_tensors(v) for v in value]
    return Tensor(value) if isinstance(value, str) else value
