"""Symbolic whole training steps: the check that keeps a training step's graph symbolic only when it does
what the function does eagerly at other sizes (Note [Symbolic training steps]).

Note [Symbolic training steps]
A training step (Note [Capturing a training step], _training.py) captured with symbolic sizes records its
forward as any symbolic capture does (Note [Symbolic capture]); its backward runs inside the function, so
while ``backward()`` (or ``autograd.grad``) runs, the session matches the literal sizes the Engine's C++
formulas pass to the symbols by value (``_symbolic_backward.size_table``, turned on by
``StepCapture.backward_sizes`` and off when the backward returns, so the optimizer's literals stay
literals). The meta probe then checks the whole graph (forward, backward, update) runs at other extents.
Matching by value may be wrong, and the joint check (``gradients_agree``) cannot apply: the backward and
the update are inside the graph. So ``step_agrees`` runs, at two other extents of the symbols, the
function itself eagerly and the captured program, each from the same state, and compares the outputs,
every parameter and buffer, every gradient and every optimizer state tensor; the state (tensor values,
``.grad`` bindings, the optimizers' state dicts, their groups and counters, the default generator) is
saved before and restored after each run, so the check leaves no trace. A graph that disagrees or does
not run there keeps its exact sizes, as before.
"""

from __future__ import annotations

import numpy as np

from kiln.autograd.grad_mode import no_grad
from kiln.compiler._guards import flatten, with_tensors
from kiln.random import get_rng_state, set_rng_state
from kiln.compiler._symbolic_backward import _close, _tensor_like

_PLAIN = (bool, int, float)


class StepSnapshot:
    """Everything one run of a training step may change, saved to be put back by ``restore``: the values
    of ``tensors`` (parameters, buffers, gradients, optimizer state, tensors read by reference), each
    leaf's ``.grad`` binding, each optimizer's state entries, group values and plain counters, and the
    default generator."""

    def __init__(self, tensors: list, leaves: list, optimizers: list):
        seen, self.tensors = set(), []
        for t in tensors:
            if id(t) not in seen:
                seen.add(id(t))
                self.tensors.append(t)
        with no_grad():
            self.values = [t.detach().clone() for t in self.tensors]
        self.leaves = leaves
        self.grads = [p.grad for p in leaves]
        self.optimizers = optimizers
        self.states = [{p: dict(st) for p, st in opt.state.items()} for opt in optimizers]
        self.groups = [[dict(g) for g in opt.param_groups] for opt in optimizers]
        self.counters = [{k: v for k, v in vars(opt).items() if type(v) in _PLAIN} for opt in optimizers]
        self.rng = get_rng_state()

    def restore(self):
        with no_grad():
            for t, v in zip(self.tensors, self.values):
                t.copy_(v)
        for p, g in zip(self.leaves, self.grads):
            p.grad = g
        for opt, state, groups, counters in zip(self.optimizers, self.states, self.groups, self.counters):
            opt.state.clear()
            for p, st in state.items():
                opt.state[p] = dict(st)
            for g, saved in zip(opt.param_groups, groups):
                g.clear()
                g.update(saved)
            for k, v in counters.items():
                setattr(opt, k, v)
        set_rng_state(self.rng)


def _after(state, module_tensors: list, result) -> list:
    """What a run left: its tensor outputs, the parameters and buffers, each leaf and its gradient, and
    every optimizer state tensor (read afresh: an eager step may replace them)."""
    outputs: list = []
    flatten(result, outputs, "output")
    seen = module_tensors + list(state.all_leaves)
    values = [t.detach().clone() for t in outputs + seen]
    values += [None if p.grad is None else p.grad.detach().clone() for p in state.all_leaves]
    for st, p, keys in state.state_slots:
        entry = st.get(p, {})
        values += [entry[k].detach().clone() if k in entry else None for k in keys]
    return values


def step_agrees(fn, args: tuple, kwargs: dict, program, state, module_tensors: list, lifted: list,
                snapshot_tensors: list, names: dict, points: list) -> str | None:
    """None when the captured training-step ``program`` (a TrainingStepProgram) leaves what ``fn`` leaves
    eagerly (outputs, parameters, buffers, gradients, optimizer state) with its symbols at each extents of
    ``points`` (``names``: symbols per tensor of the call, the tensors of ``(args, kwargs)`` in flatten's
    order, keyword and nested ones included); else why not. Every run starts from the state of the call
    and the state is restored after each."""
    call_tensors: list = []
    flatten((args, kwargs), call_tensors)
    if any(i not in range(len(call_tensors)) for i in names):
        return "a symbolic tensor is not one of the call's arguments"
    rng = np.random.default_rng(23)
    for other in points:
        tensors, made_for = [], {}  # one new tensor per argument object: aliases stay aliases
        for k, t in enumerate(call_tensors):
            tensor_names = names.get(k)
            if tensor_names is not None:
                if id(t) not in made_for:
                    sizes = tuple(other[n] if n is not None else s for n, s in zip(tensor_names, t.shape))
                    made = _tensor_like(t.detach(), sizes, rng)
                    made_for[id(t)] = made.requires_grad_(True) if t.requires_grad else made
                t = made_for[id(t)]
            tensors.append(t)
        new_args, new_kwargs = with_tensors((args, kwargs), iter(tensors))
        snapshot = StepSnapshot(snapshot_tensors, list(state.all_leaves), list(state.optimizers))
        try:
            try:
                want = _after(state, module_tensors, fn(*new_args, **new_kwargs))
            finally:
                snapshot.restore()
            try:
                got = _after(state, module_tensors, program(tensors + module_tensors + lifted))
            finally:
                snapshot.restore()
        except Exception as e:  # noqa: BLE001 - a graph that does not run there does not generalise
            return f"the training step does not run at other sizes ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
        if len(got) != len(want) or not all(_close(g, w) for g, w in zip(got, want)):
            return "the training step's results differ from eager's at other sizes (a size in its backward is no symbol)"
    return None
