"""kiln.onnx.export: capture, make dynamic sizes symbolic, convert each
statement through the converter table, write the ModelProto."""

from __future__ import annotations

import os

import onnx
from onnx import helper

from kiln._version import __version__
from kiln.onnx import _capture, _dynamic, _symbolic
from kiln.onnx._builder import Builder, value_info
from kiln.onnx._graph_text import ValueRef
from kiln.onnx._convert import Converter
from kiln.onnx._mode import TrainingMode, _exporting
from kiln.onnx._registry import Tensor
from kiln.onnx.errors import OnnxExporterError

DEFAULT_OPSET = 17
SUPPORTED_OPSETS = range(17, 22)


def _default_names(prefix: str, count: int, given) -> list:
    given = list(given or [])
    if len(given) > count:
        raise ValueError(f"kiln.onnx.export: {len(given)} {prefix} names given for {count} {prefix}s")
    return given + [prefix if count == 1 else f"{prefix}_{i}" for i in range(len(given), count)]


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
        axes_of = _dynamic.parse_dynamic_axes(dynamic_axes)
        unknown = set(axes_of) - set(names_in) - set(names_out)
        if unknown:
            raise ValueError(f"kiln.onnx.export: dynamic_axes names {sorted(unknown)}, which are neither input "
                             f"names {names_in} nor output names {names_out}")
        symbol_sizes, places = _dynamic.symbols_of(names_in, base.arg_tensors, axes_of)
        variants, variant_sizes = {}, {}
        if symbol_sizes:
            base, symbol_sizes, variants, variant_sizes = _dynamic.capture_dynamic(model, call_args, call_kwargs, train,
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
    cv = Converter(b, graph, base.module_of)
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
