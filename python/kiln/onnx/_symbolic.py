"""Dynamic axes: which int literals of a captured graph are sizes of a dynamic
axis, found by capturing again with that axis a different size.

Note [Dynamic axes by recapture]
kiln's capture specialises every shape: ``x.view(x.size(0), -1)`` records
``view(size=[2, 200])``. To export ``dynamic_axes``, the model is captured at
base sizes (the example's, a size of 1 raised to 2: size-1 axes record
differently) and once more per dynamic size (symbol), with that symbol's axes
of every input that has it changed (narrowed by one, or extended by repeating
the first slice when the size is 2; never to 1). The exported graph is the
base capture. The graphs must be the same statement for statement; an int
literal that differs between the base capture and a variant depends on that
symbol. Each such literal is fitted, over all variants, as either
``scale * s + offset`` (one symbol: ``end=7`` of a slice, ``T - 1``) or
``scale * s1 * s2 * ...`` (several: ``view(size=[14, 16])`` is ``B * T``), checked
against every capture, and replaced by a SymInt, which the exporter computes at
run time from the inputs' shapes (``Shape`` ... ``Mul``/``Add``). A literal that
fits neither, or graphs that differ in structure, raise an error naming the
statement: the model's graph depends on the size beyond what ONNX can express here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kiln.onnx.errors import OnnxExporterError


@dataclass(frozen=True)
class SymInt:
    """``scale * prod(symbols) + offset``, at run time."""

    symbols: tuple
    scale: int = 1
    offset: int = 0


class DynamicShapeError(OnnxExporterError):
    """A model whose graph depends on a dynamic axis's size in a way ONNX export cannot express."""


def _fit(base_value: int, base_sizes: dict, variant_values: dict, variant_sizes: dict):
    """A SymInt for a literal (``base_value`` under ``base_sizes``; ``variant_values[s]`` under the sizes of the
    variant changing symbol ``s``), or None when it fits no form."""
    depends = tuple(sorted(s for s, v in variant_values.items() if v != base_value))
    if len(depends) == 1:
        (s,) = depends
        n0, n1 = base_sizes[s], variant_sizes[s][s]
        v0, v1 = base_value, variant_values[s]
        if (v1 - v0) % (n1 - n0) == 0:
            scale = (v1 - v0) // (n1 - n0)
            return SymInt((s,), scale, v0 - scale * n0)
        return None
    product = 1
    for s in depends:
        product *= base_sizes[s]
    if product == 0 or base_value % product:
        return None
    scale = base_value // product
    for s in depends:
        expected = scale
        for t in depends:
            expected *= variant_sizes[s][t]
        if expected != variant_values[s]:
            return None
    return SymInt(depends, scale, 0)


def _literal_paths(item, path=()):
    """(path, number) for each int or float inside a literal (lists walked), bools excluded."""
    if isinstance(item, bool):
        return
    if isinstance(item, (int, float)):
        yield path, item
    elif isinstance(item, list):
        for i, v in enumerate(item):
            yield from _literal_paths(v, path + (i,))


def _replace(item, path, value):
    if not path:
        return value
    item = list(item)
    item[path[0]] = _replace(item[path[0]], path[1:], value)
    return item


def _node_literals(node):
    for i, item in enumerate(node.positional):
        yield ("p", i), item
    for k, item in node.keyword.items():
        yield ("k", k), item


def _get(node, where):
    return node.positional[where[1]] if where[0] == "p" else node.keyword[where[1]]


def _set(node, where, item):
    if where[0] == "p":
        node.positional[where[1]] = item
    else:
        node.keyword[where[1]] = item


def same_statements(base, variants: dict) -> bool:
    """Whether every variant records the same op kinds in the same order as ``base``."""
    kinds = [n.kind for n in base.nodes]
    return all([n.kind for n in g.nodes] == kinds for g in variants.values())


def symbolize(base, base_sizes: dict, variants: dict, variant_sizes: dict) -> None:
    """Replaces, in ``base`` (a _graph_text.Graph), every int literal that depends on a symbol by a SymInt.
    ``variants[s]``: the graph captured with symbol ``s`` resized; ``variant_sizes[s]``: every symbol's size in it."""
    for s, g in variants.items():
        kinds = [n.kind for n in base.nodes], [n.kind for n in g.nodes]
        if kinds[0] != kinds[1]:
            first = next((i for i, (a, b) in enumerate(zip(*kinds)) if a != b), min(map(len, kinds)))
            where = base.nodes[first].line if first < len(base.nodes) else "the end of the graph"
            raise DynamicShapeError(
                f"kiln.onnx.export: the model's graph changes with the size of dynamic axis {s!r} (it records "
                f"different operations, first at: {where}); its structure depends on that size, so it cannot be "
                "exported with that axis dynamic")
    for index, node in enumerate(base.nodes):
        for where, item in list(_node_literals(node)):
            for path, value in list(_literal_paths(item)):
                others = {}
                for s, g in variants.items():
                    other = _get(g.nodes[index], where)
                    for p in path:
                        other = other[p]
                    others[s] = other
                if all(v == value for v in others.values()):
                    continue
                same_kind = all(type(v) is type(value) for v in others.values())
                fitted = _fit(value, base_sizes, others, variant_sizes) if isinstance(value, int) and same_kind \
                    else None
                if fitted is None:
                    raise DynamicShapeError(
                        f"kiln.onnx.export: a size in the model's graph depends on the dynamic axes in a way "
                        f"kiln.onnx cannot express (statement: {node.line})")
                item = _replace(item, path, fitted)
            _set(node, where, item)


def dynamic_output_dims(base, variants: dict) -> dict:
    """{output position: {dim: set of symbols}} of the outputs whose sizes change between captures."""
    types = {name: t for n in base.nodes for name, t in n.outputs}
    types.update(dict(base.inputs))
    result: dict = {}
    for s, g in variants.items():
        vtypes = {name: t for n in g.nodes for name, t in n.outputs}
        vtypes.update(dict(g.inputs))
        for k, (a, b) in enumerate(zip(base.outputs, g.outputs)):
            ta, tb = types.get(a), vtypes.get(b)
            if getattr(ta, "sizes", None) is None or getattr(tb, "sizes", None) is None:
                continue
            for d, (x, y) in enumerate(zip(ta.sizes, tb.sizes)):
                if x != y:
                    result.setdefault(k, {}).setdefault(d, set()).add(s)
    return result


def forget_dynamic_sizes(base, variants: dict) -> None:
    """Sets to None each size of a graph input or statement output that differs in some variant: a converter
    that reads a size (split's total, adaptive pooling's input) then sees it is not a constant instead of
    baking the base's."""
    def forget(values: list, others: list) -> list:
        result = []
        for k, (name, t) in enumerate(values):
            sizes = getattr(t, "sizes", None)
            if sizes is not None:
                changed = set()
                for other_values in others:
                    other = getattr(other_values[k][1], "sizes", None)
                    if other is not None and len(other) == len(sizes):
                        changed |= {d for d, (x, y) in enumerate(zip(sizes, other)) if x != y}
                if changed:
                    t = replace(t, sizes=tuple(None if d in changed else x for d, x in enumerate(sizes)))
            result.append((name, t))
        return result

    base.inputs = forget(base.inputs, [g.inputs for g in variants.values()])
    for index, node in enumerate(base.nodes):
        node.outputs = forget(node.outputs, [g.nodes[index].outputs for g in variants.values()])
