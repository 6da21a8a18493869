"""dynamic_axes: the axes' symbols, and the captures at other sizes that
Note [Dynamic axes by recapture] (_symbolic.py) compares."""

from __future__ import annotations

import kiln
from kiln.onnx import _capture, _symbolic
from kiln.onnx.errors import OnnxExporterError, UnsupportedOperatorError


def parse_dynamic_axes(dynamic_axes) -> dict:
    """{input or output name: {axis: symbol name}}, torch's auto names for lists of axes."""
    result = {}
    for key, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            result[key] = {int(a): str(n) for a, n in axes.items()}
        else:
            result[key] = {int(a): f"{key}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
    return result


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


def symbols_of(input_names: list, arg_tensors: list, axes_of: dict) -> tuple[dict, dict]:
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


def capture_dynamic(model, args, kwargs, training, export_sizes: dict, places) -> tuple:
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
