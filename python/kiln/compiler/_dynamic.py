"""Dynamic shapes in the cache: which tensor dimensions are dynamic, the symbolic guard key of a call,
symbolic cache entries, and the probe run that checks a symbolic graph before it is kept
(Note [Symbolic capture], _symbolic.py)."""

from __future__ import annotations

from kiln import _C
from kiln.compiler._symbolic import evaluate


def sizes_changed(old_key, new_key) -> dict | None:
    """{tensor index: [dims whose extent differs]} when two guard keys differ in tensor extents (and
    the strides those imply) only; None when anything else differs."""
    if old_key is None or len(old_key) != len(new_key):
        return None
    for i, (a, b) in enumerate(zip(old_key, new_key)):
        if i != 3 and a != b:
            return None
    old_metas, new_metas = old_key[3], new_key[3]
    if len(old_metas) != len(new_metas):
        return None
    changed = {}
    for i, (a, b) in enumerate(zip(old_metas, new_metas)):
        if a[2:] != b[2:] or len(a[0]) != len(b[0]):  # dtype, device, requires_grad; rank
            return None
        dims = [d for d, (x, y) in enumerate(zip(a[0], b[0])) if x != y]
        if dims:
            changed[i] = dims
        elif a[1] != b[1]:
            return None  # the same extents, other strides: a layout change, not a size change
    return changed or None


def _contiguous_strides(sizes) -> tuple:
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


class Layout:
    """Which dimensions of which tensor arguments are dynamic: {tensor index: frozenset of dims}."""

    __slots__ = ("dims",)

    def __init__(self, dims: dict):
        self.dims = {i: frozenset(d) for i, d in dims.items() if d}

    def __bool__(self):
        return bool(self.dims)

    def merged(self, more: dict) -> "Layout":
        dims = {i: set(d) for i, d in self.dims.items()}
        for i, d in more.items():
            dims.setdefault(i, set()).update(d)
        return Layout(dims)

    def frozen(self):
        return tuple(sorted((i, tuple(sorted(d))) for i, d in self.dims.items()))

    def bind(self, exact_key):
        """(the symbolic key of a call whose exact guard key is ``exact_key``, {symbol: extent},
        {tensor index: [symbol name or None per dim]}). A dynamic extent of 0 or 1 stays in the key
        as itself (specialised); extents >= 2 get symbols by first appearance, one per distinct value
        (duck sizing). A tensor with a symbolic extent is keyed on being contiguous or else on its
        exact strides."""
        symbol_of: dict = {}
        names: dict = {}
        metas = []
        for i, meta in enumerate(exact_key[3]):
            dyn = self.dims.get(i)
            sizes, strides = meta[0], meta[1]
            if not dyn:
                metas.append(meta)
                continue
            keyed, tensor_names = [], []
            for d, extent in enumerate(sizes):
                if d in dyn and extent >= 2:
                    name = symbol_of.setdefault(extent, f"s{len(symbol_of)}")
                    keyed.append(name)
                    tensor_names.append(name)
                else:
                    keyed.append(extent)
                    tensor_names.append(None)
            if any(n is not None for n in tensor_names):
                names[i] = tensor_names
                layout = "contiguous" if tuple(strides) == _contiguous_strides(sizes) else tuple(strides)
                if layout != "contiguous":
                    keyed = list(sizes)  # a strided view's extents stay exact
                    del names[i]
            else:
                layout = tuple(strides)
            metas.append((tuple(keyed), layout) + tuple(meta[2:]))
        env = {name: extent for extent, name in symbol_of.items()}
        key = (self.frozen(),) + tuple(exact_key[:3]) + (tuple(metas),) + tuple(exact_key[4:])
        # Only the symbols some tensor still uses.
        used = {n for ns in names.values() for n in ns if n is not None}
        return key, {n: v for n, v in env.items() if n in used}, names


class SymbolicEntry:
    """A captured entry valid for every binding of its symbols its ``guards`` accept."""

    __slots__ = ("entry", "guards", "names")

    def __init__(self, entry, guards, names):
        self.entry = entry
        self.guards = guards
        self.names = names

    def failing_guard(self, env: dict):
        for g in self.guards:
            if not g.holds(env):
                return g
        return None


def perturbed(env: dict, pinned: set, guards: list):
    """Other extents for the symbols (the pinned ones kept) that every guard accepts, or None."""
    for step in (lambda v: 2 * v, lambda v: 2 * v + 1, lambda v: 3 * v, lambda v: v + 1):
        other = {n: (v if n in pinned else step(v)) for n, v in env.items()}
        if other != env and all(g.holds(other) for g in guards):
            return other
    return None


def probe(session, context, declared: list, names: dict, env: dict, copy_back: list) -> str | None:
    """Runs the recorded graph on meta tensors at other extents of its symbols (Note [Symbolic
    capture]); None when it generalises, else why not."""
    other = perturbed(env, context.pinned, context.guards)
    if other is None:
        return "no other sizes satisfy the guards"
    handles = [h for h, _ in context.assumed]
    graph = session.probe_graph(handles)
    inputs = []
    for i, t in enumerate(session.input_tensors):
        dims = names.get(i) if i < len(declared) else None
        if dims is not None:
            sizes = [other[n] if n is not None else s for n, s in zip(dims, t.shape)]
            inputs.append(_C._functions.empty(sizes, dtype=t.dtype, device="meta"))
        else:
            inputs.append(_C._functions.empty_strided(list(t.shape), list(t.stride()), dtype=t.dtype, device="meta"))
    try:
        outputs = _C._ir.run(graph, inputs)
    except Exception as e:  # noqa: BLE001 - any failure means the graph does not generalise
        return f"the graph does not run at other sizes ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
    values = outputs[len(outputs) - len(handles):]
    for (handle, expr), value in zip(context.assumed, values):
        if evaluate(expr, other) != value:
            return "a size of an intermediate tensor is not the expression its capture-time value suggested"
    first_copy_back = len(outputs) - len(handles) - len(copy_back)
    for k, i in enumerate(copy_back):
        if tuple(outputs[first_copy_back + k].shape) != tuple(inputs[i].shape):
            return "an input written in place changes shape at other sizes"
    return None
