"""Dynamic shapes in the cache: which tensor dimensions are dynamic, the symbolic guard key of a call,
symbolic cache entries, and the probe run that checks a symbolic graph before it is kept
(Note [Symbolic capture], _symbolic.py)."""

from __future__ import annotations

from kiln import _C
from kiln.compiler._symbolic import _ADD, _FLOORDIV, _MUL, evaluate, has_handles


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

    def without(self, fixed: dict) -> "Layout":
        return Layout({i: set(d) - set(fixed.get(i, ())) for i, d in self.dims.items()})

    def names(self, exact_key) -> tuple[dict, dict]:
        """({tensor index: [symbol name or None per dim]}, {symbol: extent}) for a capture of a call
        keyed ``exact_key``: each dynamic extent >= 2 gets a symbol, one per distinct extent (duck
        sizing: equal extents share one); 0 and 1 stay specialised, and so does every extent of a
        tensor that is not contiguous (its strides are guarded exactly)."""
        symbol_of: dict = {}
        names: dict = {}
        for i, meta in enumerate(exact_key[3]):
            dyn = self.dims.get(i)
            sizes, strides = meta[0], meta[1]
            if not dyn or tuple(strides) != _contiguous_strides(sizes):
                continue
            tensor_names = [symbol_of.setdefault(e, f"s{len(symbol_of)}") if d in dyn and e >= 2 else None
                            for d, e in enumerate(sizes)]
            if any(n is not None for n in tensor_names):
                names[i] = tensor_names
        return names, {name: extent for extent, name in symbol_of.items()}


def symbolic_key(exact_key, names: dict):
    """(the key of a call under an entry whose dimensions ``names`` are symbols, {symbol: extent}), or
    None when the call cannot bind them: a symbol's extents disagree, an extent is 0 or 1, or the
    tensor is not contiguous. Every other part of the exact key is kept."""
    metas = list(exact_key[3])
    env: dict = {}
    for i, tensor_names in names.items():
        if i >= len(metas):
            return None
        meta = metas[i]
        sizes, strides = meta[0], meta[1]
        if len(sizes) != len(tensor_names) or tuple(strides) != _contiguous_strides(sizes):
            return None
        keyed = []
        for n, extent in zip(tensor_names, sizes):
            if n is None:
                keyed.append(extent)
                continue
            if extent < 2 or env.setdefault(n, extent) != extent:
                return None
            keyed.append(n)
        metas[i] = (tuple(keyed), "contiguous") + tuple(meta[2:])
    return tuple(exact_key[:3]) + (tuple(metas),) + tuple(exact_key[4:]), env


class SymbolicEntry:
    """A captured entry valid for every call ``symbolic_key`` binds to ``key`` whose symbols its
    ``guards`` accept (``constants``: symbols the probe pinned, for the guards that mention them)."""

    __slots__ = ("entry", "guards", "names", "key", "constants")

    def __init__(self, entry, guards, names, key, constants):
        self.entry = entry
        self.guards = guards
        self.names = names
        self.key = key
        self.constants = constants

    def bind(self, exact_key):
        """The symbols' extents for this call when it has this entry's key, else None."""
        bound = symbolic_key(exact_key, self.names)
        if bound is None or bound[0] != self.key:
            return None
        return {**self.constants, **bound[1]}

    def failing_guard(self, env: dict):
        for g in self.guards:
            if not g.holds(env):
                return g
        return None


_STEPS = (lambda v: 2 * v, lambda v: 3 * v, lambda v: 2 * v + 1, lambda v: v + 1, lambda v: v - 1,
          lambda v: v + 2, lambda v: 4 * v + 3, lambda v: v + 3)


def perturbations(env: dict, fixed: set, guards: list):
    """Other extents for the symbols (those in ``fixed`` kept; each step keeps distinct extents
    distinct and extents >= 2) that every guard accepts, in a fixed order."""
    seen = []
    for step in _STEPS:
        other = {n: (v if n in fixed else step(v)) for n, v in env.items()}
        if other == env or other in seen or min(other.values(), default=2) < 2:
            continue
        if all(g.holds(other) for g in guards):
            seen.append(other)
            yield other


def _fit(value: int, env: dict, points: list):
    """The first candidate expression over the symbols that is ``value`` at ``env`` and each
    (extents, value) of ``points``: a constant, a symbol, s * c, s // c, s + c, s * t; else None."""
    names = list(env)
    candidates = [("const", value)] + [("sym", n) for n in names]
    for n in names:
        v = env[n]
        if v and value % v == 0:
            candidates.append((_MUL, ("sym", n), ("const", value // v)))
        if value and v % value == 0:
            candidates.append((_FLOORDIV, ("sym", n), ("const", v // value)))
        candidates.append((_ADD, ("sym", n), ("const", value - v)))
    for i, n in enumerate(names):
        for m in names[i:]:
            candidates.append((_MUL, ("sym", n), ("sym", m)))
    for c in candidates:
        if evaluate(c, env) == value and all(evaluate(c, other) == v for other, v in points):
            return c
    return None


def probe(session, context, declared: list, names: dict, env: dict, copy_back: list,
          first_copy_back: int) -> str | None:
    """Checks that the recorded graph serves other extents of its symbols by running it on meta
    tensors (Note [Symbolic capture]): all symbols moved at once; where that fails, each alone, and
    the symbols that cannot move are pinned to their extents by an equality guard (an op's shape
    check: a feature dimension a weight fixes). Two such runs fit an expression to each intermediate
    extent Python read (context.resolve), and a last run at extents every guard accepts checks the
    fits. ``first_copy_back``: the graph output holding the first copy-back (after the function's
    outputs). None when the graph generalises (context.guards may have grown), else why not."""
    def run(other):
        return _probe_at(session, declared, names, other, copy_back, first_copy_back,
                         [h for h, _ in context.assumed])

    def gather(fixed, guards, wanted):
        points, first_why = [], None
        for other in perturbations(env, fixed, guards):
            why, values = run(other)
            if why is None:
                points.append((other, values))
                if len(points) == wanted:
                    break
            elif first_why is None:
                first_why = why
        return points, first_why

    fixed = set(context.pinned)
    plain = [g for g in context.guards if not (has_handles(g.lhs) or has_handles(g.rhs))]
    points, why = gather(fixed, plain, 2)
    if not points:
        if why is None:
            return "no other sizes satisfy the guards"
        for n in [n for n in env if n not in fixed]:
            if not gather(set(env) - {n}, plain, 1)[0]:
                fixed.add(n)
        points, _ = gather(fixed, plain, 2)
        if not points:
            return why
    table = {}
    for k, (_, value) in enumerate(context.assumed):
        expr = _fit(value, env, [(other, values[k]) for other, values in points])
        if expr is None:
            return "the size of an intermediate tensor is no expression of the symbols kiln can fit"
        table[k] = expr
    context.resolve(table)
    # One more point the fits did not see (extents where the graph, like eager, raises are skipped: a
    # view whose extent must divide evenly).
    used = [other for other, _ in points]
    for final_at in perturbations(env, fixed | context.pinned, context.guards):
        if final_at in used:
            continue
        why, final = run(final_at)
        if why is None:
            if any(evaluate(table[k], final_at) != final[k] for k in table):
                return "the size of an intermediate tensor is no expression of the symbols kiln can fit"
            break
    for n in fixed - context.pinned:
        context.pin(n, env[n], "the graph's ops need this extent (a probe at other sizes failed)")
    return None


def _probe_at(session, declared: list, names: dict, other: dict, copy_back: list, first_copy_back: int,
              handles: list):
    """(None, the values of the symbolic ints ``handles``) when the graph runs on meta tensors with the
    symbols at ``other`` and each input written in place keeps its shape; else (why not, None)."""
    graph = session.probe_graph(handles)
    inputs = []
    for i, t in enumerate(session.input_tensors):
        dims = names.get(i) if i < len(declared) else None
        if dims is not None:
            sizes = [other[n] if n is not None else s for n, s in zip(dims, t.shape)]
            inputs.append(_C._functions.empty(sizes, dtype=t.dtype, device="meta"))
        else:
            inputs.append(_C._functions.empty_strided(list(t.shape), list(t.stride()), dtype=t.dtype, device="meta"))
    if session.generator_input_index is not None:  # the generator's seed and offset (any: meta draws nothing)
        inputs[session.generator_input_index:session.generator_input_index] = [0, 0]
    try:
        outputs = _C._ir.run(graph, inputs)
    except Exception as e:  # noqa: BLE001 - any failure means the graph does not generalise
        return f"the graph does not run at other sizes ({type(e).__name__}: {str(e).splitlines()[0][:200]})", None
    gen = session.generator_input_index
    for k, i in enumerate(copy_back):
        written = inputs[i + 2 if gen is not None and i >= gen else i]
        if tuple(outputs[first_copy_back + k].shape) != tuple(written.shape):
            return "an input written in place changes shape at other sizes", None
    return None, outputs[len(outputs) - len(handles):]
