"""Symbolic backward graphs: the size table a joint capture's backward is recorded with, and the check
that keeps such a graph only when it computes eager's gradients at other sizes
(Note [Symbolic sizes in the backward], capture/SymbolicInts.h).

The autograd Engine's formulas pass sizes as C++ ints; while the backward of a symbolic capture is
recorded, the session replaces a size-taking literal by the symbolic int whose value it is, when
exactly one entry of ``size_table`` has that value. Matching by value may be wrong (a formula's own
constant that happens to equal a batch size), so ``gradients_agree`` runs the partitioned program at
other extents of its symbols and compares it with eager autograd through the program's own forward
graph; a graph that disagrees, or does not run there, is kept for its exact sizes only.
"""

from __future__ import annotations

import numpy as np

from kiln import _C, autograd
from kiln._creation import tensor as _tensor
from kiln.random import get_rng_state, set_rng_state
from kiln.compiler._symbolic import _MUL

# Verification tolerance: both sides run the same eager kernels; the partitioned backward may recompute
# a pointwise value in another order of fused operations only on the "default" backend.
_RTOL, _ATOL = 1e-4, 1e-5


def size_table(session, declared: list, names: dict, env: dict) -> list:
    """(value, handle, factor) triples for ``session.set_size_symbols``: each symbol, each product of
    two symbols, each of those times a literal extent (>= 2) of an input, a product of two, or an input's
    literal extents together. A value several entries give takes the one over the most symbols, and is
    left out when that is still ambiguous, or when it is itself a literal extent of an input (it may be a
    constant)."""
    handles: dict = {}
    for i, tensor_names in sorted(names.items()):
        for d, n in enumerate(tensor_names):
            if n is not None and n in env and n not in handles:
                handles[n] = session.symbolic_size(declared[i], d)
    bases = [(env[n], handles[n], 1) for n in sorted(handles)]  # (value, handle, how many symbols)
    symbols = sorted(handles)
    for a in range(len(symbols)):
        for b in range(a + 1, len(symbols)):
            h = session.symbolic_arith(_MUL, handles[symbols[a]], False, handles[symbols[b]], False)
            bases.append((env[symbols[a]] * env[symbols[b]], h, 2))
    extents = set()
    factors = set()  # what a symbol is multiplied by in a count: an extent, two, or an input's literal extents
    for i, t in enumerate(session.input_tensors):
        tensor_names = names.get(i) if i < len(declared) else None
        literal = 1
        for d, e in enumerate(t.shape):
            if e >= 2 and (tensor_names is None or tensor_names[d] is None):
                extents.add(e)
                literal *= e
        if literal >= 2:
            factors.add(literal)
    # Literal sizes the forward passed (a head count, a head width) multiply symbols too: [B * h, T, C // h].
    symbol_values = {env[n] for n in handles}
    literals = {e for e in session.size_literals if e not in extents and e not in symbol_values}
    factors |= extents | literals | {a * b for a in extents | literals for b in extents | literals}
    candidates: dict = {}
    for value, h, n in bases:
        candidates.setdefault(value, set()).add((n, h, 1))
        for c in factors:
            candidates.setdefault(value * c, set()).add((n, h, c))
    table = []
    for value, found in sorted(candidates.items()):
        if value < 2 or value in extents:
            continue
        # Of several readings, the one over the most symbols: a count of elements over the dynamic dims
        # (mean's [B, T, C] is B*T*C, not T*(3C)); none where that is still ambiguous.
        most = max(n for n, _, _ in found)
        best = [(h, c) for n, h, c in found if n == most]
        if len(best) == 1:
            table.append((value, *best[0]))
    return table


def _tensor_like(t, sizes, rng):
    if t.dtype.is_floating_point:
        made = _tensor(rng.standard_normal(sizes).astype(np.float32)).to(t.dtype)
    else:
        made = _C._functions.zeros(list(sizes), dtype=t.dtype)
    if t.requires_grad:
        made.requires_grad_(True)
    return made


def _inputs_at(inputs: list, names: dict, other: dict, copy_back: list, rng) -> list:
    """The program's inputs with each symbolic extent at ``other`` (fresh values); inputs a run writes
    into are cloned, so the check leaves the module's buffers alone."""
    made = []
    for i, t in enumerate(inputs):
        tensor_names = names.get(i)
        if tensor_names is not None:
            sizes = tuple(other[n] if n is not None else s for n, s in zip(tensor_names, t.shape))
            made.append(_tensor_like(t, sizes, rng))
        elif i in copy_back:
            made.append(t.detach().clone())
        else:
            made.append(t)
    return made


def _close(got, want) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
        return False
    return np.allclose(got.detach().float().numpy(), want.detach().float().numpy(), rtol=_RTOL, atol=_ATOL,
                       equal_nan=True)


def _gradients_agree_at(program, inputs: list, rng) -> str | None:
    forward = program.forward
    diff = program.differentiable_outputs
    wrt = [inputs[k] for k in program.grad_positions]
    state = get_rng_state()
    try:
        values, _ = forward.graph_inputs(inputs)
        want_out = _C._ir.run(forward.graph, values)[:forward.num_outputs]
        grad_outputs = [_tensor_like(want_out[k].detach(), tuple(want_out[k].shape), rng).detach() for k in diff]
        want = autograd.grad([want_out[k] for k in diff], wrt, grad_outputs, allow_unused=True)
        set_rng_state(state)
        got_out = program(inputs)
        got = autograd.grad([got_out[k] for k in diff], wrt, grad_outputs, allow_unused=True)
    finally:
        set_rng_state(state)
    for g, w in zip(got_out, want_out):
        if not _close(g, w):
            return "its outputs differ from eager's at other sizes"
    for g, w in zip(got, want):
        if not _close(g, w):
            return "its gradients differ from eager's at other sizes (a size in the backward is no symbol)"
    return None


def gradients_agree(program, inputs: list, names: dict, points: list) -> str | None:
    """None when the JointProgram ``program`` (inputs: the capture's declared tensors then the tensors
    it holds; ``names``: symbols per declared tensor dim) gives eager's outputs and gradients with its
    symbols at each extents of ``points``; else why not."""
    rng = np.random.default_rng(23)
    copy_back = set(program.forward.copy_back)
    for other in points:
        at = _inputs_at(inputs, names, other, copy_back, rng)
        try:
            with autograd.enable_grad():
                why = _gradients_agree_at(program, at, rng)
        except Exception as e:  # noqa: BLE001 - a graph that does not run there does not generalise
            return f"its backward does not run at other sizes ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
        if why is not None:
            return why
    return None
