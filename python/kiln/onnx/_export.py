"""kiln.onnx.export: capture, make dynamic sizes symbolic, convert each
statement through the converter table, write the ModelProto."""

from __future__ import annotations

import os

import onnx
from onnx import helper

import kiln
from kiln._version import __version__

from kiln.onnx import _capture, _symbolic
from kiln.onnx import _ops_math, _ops_nn, _ops_rnn, _ops_shape  # noqa: F401  (they fill the converter table)
from kiln.onnx._builder import Builder, value_info
from kiln.onnx.errors import OnnxExporterError, UnsupportedOperatorError
from kiln.onnx._mode import TrainingMode, _exporting
from kiln.onnx._graph_text import TensorType, ValueRef
from kiln.onnx._registry import CONVERTERS, Args, Tensor

DEFAULT_OPSET = 17
SUPPORTED_OPSETS = range(17, 22)

class _Converter:
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


def _parse_dynamic_axes(dynamic_axes) -> dict:
    """{input or output name: {axis: symbol name}}, torch's auto names for lists of axes."""
    result = {}
    for key, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            result[key] = {int(a): str(n) for a, n in axes.items()}
        else:
            result[key] = {int(a): f"{key}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
    return result


def _default_names(prefix: str, count: int, given) -> list:
    given = list(given or [])
    if len(given) > count:
        raise ValueError(f"kiln.onnx.export: {len(given)} {prefix} names given for {count} {prefix}s")
    return given + [prefix if count == 1 else f"{prefix}_{i}" for i in range(len(given), count)]


def _resized(t, axis_sizes: list):
    """``t`` with each (axis, size) narrowed or extended (repeating its first slice), contiguous."""
    for axis, size in axis_sizes:
        n = t.shape[axis]
        if size < n:
            t = t.narrow(axis, 0, size)
        elif size > n:
            t = kiln.cat([t] + [t.narrow(axis, 0, 1)] * (size - n), axis)
    return t.contiguous()


def _map_tensors(value, fn, counter):
    if isinstance(value, kiln.Tensor):
        counter[0] += 1
        return fn(counter[0] - 1, value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_map_tensors(v, fn, counter) for v in value)
    if isinstance(value, list):
        return [_map_tensors(v, fn, counter) for v in value]
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn, counter) for k, v in value.items()}
    return value


def _symbols_of(input_names: list, arg_tensors: list, axes_of: dict) -> tuple[dict, dict]:
    """({symbol: size}, {symbol: [(input position, axis)]}) of the inputs' dynamic axes."""
    sizes, places = {}, {}
    for i, name in enumerate(input_names):
        for axis, symbol in axes_of.get(name, {}).items():
            rank = arg_tensors[i].dim()
            if not -rank <= axis < rank:
                raise ValueError(f"kiln.onnx.export: dynamic_axes: input {name!r} has no axis {axis}")
            axis %= rank
            n = arg_tensors[i].shape[axis]
            if sizes.setdefault(symbol, n) != n:
                raise ValueError(f"kiln.onnx.export: dynamic_axes: axes named {symbol!r} have different sizes "
                                 f"({sizes[symbol]} and {n})")
            places.setdefault(symbol, []).append((i, axis))
    return sizes, places


def _capture_at(model, args, kwargs, training, places, sizes: dict):
    """The capture of ``model`` with each symbol's input axes resized to ``sizes[symbol]``."""
    by_input: dict = {}
    for symbol, size in sizes.items():
        for i, axis in places[symbol]:
            by_input.setdefault(i, []).append((axis, size))
    call = _map_tensors((args, kwargs), lambda i, t: _resized(t, by_input[i]) if i in by_input else t, [0])
    try:
        return _capture.capture(model, call[0], call[1], training=training)
    except UnsupportedOperatorError:
        raise
    except Exception as e:
        raise OnnxExporterError(
            f"kiln.onnx.export: dynamic_axes: the model fails when its dynamic axes have the sizes {sizes} "
            f"({type(e).__name__}: {e}); every input axis that must change with another needs the same name in "
            "dynamic_axes") from e


def _capture_dynamic(model, args, kwargs, training, export_sizes: dict, places) -> tuple:
    """(base capture, its sizes, {symbol: variant graph}, {symbol: the variant's sizes}) (Note [Dynamic axes by
    recapture]). The base uses the example's sizes, except that a size of 1 becomes 2 (a size-1 axis records
    differently: broadcasts, views that need no copy); each variant moves one symbol by one, never to 1."""
    base_sizes = {s: max(n, 2) for s, n in export_sizes.items()}
    variant_sizes = {s: {**base_sizes, s: n - 1 if n >= 3 else n + 1} for s, n in base_sizes.items()}
    for attempt in range(2):
        base = _capture_at(model, args, kwargs, training, places, base_sizes)
        variants = {s: _capture_at(model, args, kwargs, training, places, sizes).graph
                    for s, sizes in variant_sizes.items()}
        # A mismatch on the first round may come from the first call changing what later calls record (a
        # forward that caches a mask on the module the first time): the second round starts from that state.
        if _symbolic.same_statements(base.graph, variants):
            break
    return base, base_sizes, variants, variant_sizes


def _numpy(t):
    return t.detach().cpu().contiguous().numpy()


def export_model(model, args, f, *, kwargs, verbose, input_names, output_names, opset_version, dynamic_shapes,
                 export_params, keep_initializers_as_inputs, dynamic_axes, training):
    """kiln.onnx.export (see its doc); needs the onnx package."""
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if opset not in SUPPORTED_OPSETS:
        raise ValueError(f"kiln.onnx.export: opset_version {opset} is not supported (supported: "
                         f"{SUPPORTED_OPSETS.start} to {SUPPORTED_OPSETS.stop - 1})")
    if dynamic_shapes is not None:
        raise NotImplementedError("kiln.onnx.export: dynamic_shapes is not supported; use dynamic_axes")
    if f is None:
        raise ValueError("kiln.onnx.export: f (a file path or a binary file object) is required")
    call_args, call_kwargs = _capture.split_args(args)
    call_kwargs.update(kwargs or {})
    mode = TrainingMode(training) if training is not None else TrainingMode.EVAL
    train = mode == TrainingMode.TRAINING or (mode == TrainingMode.PRESERVE and getattr(model, "training", False))
    _exporting[0] = True
    try:
        base = _capture.capture(model, call_args, call_kwargs, training=train)
        names_in = _default_names("input", len(base.arg_tensors), input_names)
        names_out = _default_names("output", len(base.graph.outputs), output_names)
        axes_of = _parse_dynamic_axes(dynamic_axes)
        unknown = set(axes_of) - set(names_in) - set(names_out)
        if unknown:
            raise ValueError(f"kiln.onnx.export: dynamic_axes names {sorted(unknown)}, which are neither input "
                             f"names {names_in} nor output names {names_out}")
        symbol_sizes, places = _symbols_of(names_in, base.arg_tensors, axes_of)
        variants, variant_sizes = {}, {}
        if symbol_sizes:
            base, symbol_sizes, variants, variant_sizes = _capture_dynamic(model, call_args, call_kwargs, train,
                                                                          symbol_sizes, places)
    finally:
        _exporting[0] = False
    _symbolic.symbolize(base.graph, symbol_sizes, variants, variant_sizes)
    output_dims = _symbolic.dynamic_output_dims(base.graph, variants)
    _symbolic.forget_dynamic_sizes(base.graph, variants)
    proto = _build_model(base, opset, names_in, names_out, axes_of, places, output_dims, export_params,
                         keep_initializers_as_inputs)
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if isinstance(f, (str, os.PathLike)):
        onnx.save_model(proto, os.fspath(f))
    else:
        f.write(proto.SerializeToString())
    return None


def _used_values(graph) -> set:
    used = set(graph.outputs)

    def walk(item):
        if isinstance(item, ValueRef):
            used.add(item.name)
        elif isinstance(item, list):
            for x in item:
                walk(x)

    for n in graph.nodes:
        for item in list(n.positional) + list(n.keyword.values()):
            walk(item)
    return used


def _build_model(base, opset, names_in, names_out, axes_of, places, output_dims, export_params,
                 keep_initializers_as_inputs):
    graph = base.graph
    b = Builder(opset)
    cv = _Converter(b, graph, base.module_of)
    used = _used_values(graph)
    inputs, initializers_as_inputs = [], []
    for symbol, where in places.items():
        i, axis = where[0]
        b.symbols[symbol] = (names_in[i], axis)
    for (value, t), role in zip(graph.inputs, base.roles):
        if role[0] == "arg":
            name = b.reserve(names_in[role[1]])
            sizes = list(t.sizes)
            for axis, symbol in axes_of.get(name, {}).items():
                sizes[axis % len(sizes)] = symbol
            inputs.append(value_info(name, t.dtype, sizes))
            cv.env[value] = Tensor(name)
            continue
        if role[0] == "rng" or value not in used:
            continue
        name = b.reserve(role[1] if role[0] == "state" else f"lifted_{role[1]}")
        if export_params or role[0] == "lifted":
            b.add_initializer(name, _numpy(role[2]))
            if keep_initializers_as_inputs:
                initializers_as_inputs.append(value_info(name, t.dtype, t.sizes))
        else:
            inputs.append(value_info(name, t.dtype, t.sizes))
        cv.env[value] = Tensor(name)
    cv.run()
    outputs = []
    for k, value in enumerate(graph.outputs):
        name = b.reserve(names_out[k])
        produced = cv.env.get(value)
        if not isinstance(produced, Tensor):
            raise OnnxExporterError(f"kiln.onnx.export: output {k} is not a tensor the graph computes")
        b.op("Identity", [produced], outputs=[name])
        t = cv.types[value]
        sizes = list(t.sizes) if t.sizes is not None else None
        if sizes is not None:
            for axis, symbols in output_dims.get(k, {}).items():
                sizes[axis] = next(iter(symbols)) if len(symbols) == 1 else f"{name}_dim_{axis}"
            for axis, symbol in axes_of.get(name, {}).items():
                sizes[axis % len(sizes)] = symbol
        outputs.append(value_info(name, t.dtype, sizes))
    onnx_graph = helper.make_graph(b.nodes, "kiln_graph", inputs + initializers_as_inputs, outputs,
                                   initializer=b.initializers)
    model = helper.make_model_gen_version(onnx_graph, opset_imports=[helper.make_opsetid("", opset)],
                                          producer_name="kiln", producer_version=__version__)
    return model
