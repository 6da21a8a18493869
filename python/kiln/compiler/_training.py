"""Whole training steps: a compiled function that calls ``loss.backward()``
and ``optimizer.step()`` (and ``zero_grad()``) inside is captured as one
graph holding the forward, the backward and the update. See Note [Capturing a
training step].

Note [Capturing a training step]
A training step writes state the function never receives as an argument:
the leaves' ``.grad``, the parameters and the optimizer's state (exp_avg,
exp_avg_sq, step, momentum buffers). Capture needs that state declared as
graph inputs before any op runs (capture/CaptureSession.h: declared inputs
come first, and a write into a tensor it lifted by reference breaks), and it
cannot know it before the function has run once. So:

1. Observe. The first capture of a function that calls ``backward()``
   (or ``autograd.grad``) or an optimizer's ``step()`` stops recording there
   and runs the rest eagerly, noting which optimizers it stepped and which
   leaves requiring grad it used (``TrainingPlan``). Nothing is cached: the
   call is an ordinary eager step, which also creates the optimizers' lazily
   made state (so that first step is eager, and no graph ever holds state
   creation).
2. Capture. The next call declares, after the arguments and module state,
   every planned leaf, its ``.grad`` where defined, each optimizer's state
   tensors and its hyperparameters as 0-dim tensors (``StepState``; optim's
   ``ScalarInputs``), with the session recording writes into declared inputs
   that views alias functionally (Note [Writing an aliased input]). The
   backward runs through the real autograd Engine under capture (as the joint
   capture does, _joint.py), so its formulas and AccumulateGrad's work are
   recorded: accumulating into a defined ``.grad`` is an in-place add on a
   declared input (a functional add and a copy-back), a ``.grad`` set from
   None is a new tensor. ``optimizer.step()`` takes its capturable path
   (kiln.optim._capturable: tensor math, no ``.item()``), its in-place updates
   recorded out of place with copy-backs. At the end each leaf's ``.grad`` is
   compared with what it was: the same tensor (its new value is a copy-back),
   None (a replay sets None), or a tensor the step computed (a graph output a
   replay assigns). No joint capture: the function's outputs come back from a
   replay without autograd history (the step's backward already ran).
3. Replay (``TrainingStepProgram``). Each call reads the state afresh (the
   leaves' current ``.grad`` and the optimizers' current state tensors, so a
   replay that set ``.grad`` or a ``load_state_dict`` is seen), refreshes the
   hyperparameter tensors from ``param_groups`` (so an lr scheduler stepping
   between calls changes an input, never the graph), runs the graph with grad
   mode off, copies back and assigns ``.grad``. When the state no longer
   matches the capture (a ``.grad`` that was defined is None or the reverse,
   a state entry missing, a group's structure changed) the entry is dropped
   and the call captures again.

A capture that finds a stepped optimizer or state entry it did not declare
(an optimizer first stepped now, a parameter's first gradient) observes again
(at most ``MAX_REPLANS`` times per function, then the function runs eagerly
with that reason). A scheduler stepping inside the compiled function (the
hyperparameters change during the call) is a graph break: a replay could not
repeat it.
"""

from __future__ import annotations

from kiln import _C
from kiln.optim import _capturable

MAX_REPLANS = 4
_NO_STATE: dict = {}
OBSERVING = "the first call of a training step runs eagerly to see its optimizers and gradients"


class StateChanged(Exception):
    """The gradients or optimizer state a training-step entry was captured for changed: capture again."""


class TrainingPlan:
    """What an observed call showed: the optimizers it stepped and the leaves requiring grad it used."""

    __slots__ = ("optimizers", "leaves")

    def __init__(self, optimizers: list, leaves: list):
        self.optimizers = optimizers
        self.leaves = leaves


def _unique(tensors) -> list:
    seen, out = set(), []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


class StepState:
    """The state tensors one training-step capture declares, in input order, and how a call reads them:
    the planned leaves (held), their ``.grad`` where defined, each optimizer's state tensors (read from
    ``optimizer.state`` per call) and its hyperparameter tensors (held, refreshed per call)."""

    __slots__ = ("leaves", "all_leaves", "grad_defined", "state_slots", "scalars", "optimizers", "scalar_tensors")

    def __init__(self, plan: TrainingPlan, declared: list):
        held = {id(t) for t in declared}
        leaves = _unique([p for opt in plan.optimizers for g in opt.param_groups for p in g["params"]]
                         + plan.leaves)
        self.all_leaves = leaves  # every leaf whose .grad the capture tracks
        self.leaves = [t for t in leaves if id(t) not in held]
        self.grad_defined = [t.grad is not None for t in leaves]  # guarded per call; those .grad read per call
        self.optimizers = plan.optimizers
        # (the optimizer's state, parameter, its tensor keys): read per call (load_state_dict replaces them).
        self.state_slots = []
        for opt in plan.optimizers:
            for g in opt.param_groups:
                for p in g["params"]:
                    st = opt.state.get(p)
                    keys = tuple(k for k in sorted(st) if isinstance(st[k], _C.TensorBase)) if st else ()
                    if keys:
                        self.state_slots.append((opt.state, p, keys))
        self.scalars = [_capturable.ScalarInputs(opt) for opt in plan.optimizers if _capturable.supports(opt)]
        # The hyperparameter tensors: held, filled in place by refresh().
        self.scalar_tensors = [t for s in self.scalars for t in s.tensors()]

    def tensors(self) -> list:
        """This call's state tensors in declaration order; StateChanged when they no longer fit the capture."""
        for s in self.scalars:
            if not s.refresh():
                raise StateChanged("an optimizer's parameter groups changed")
        grads = []
        for p, defined in zip(self.all_leaves, self.grad_defined):  # (one pass: this runs on every call)
            g = p.grad
            if defined:
                if g is None:
                    raise StateChanged("a gradient that was defined is None")
                grads.append(g)
            elif g is not None:
                raise StateChanged("a gradient's None-ness changed")
        state = []
        try:
            for st, p, keys in self.state_slots:  # one lookup per parameter (this runs on every call)
                entry = st.get(p, _NO_STATE)
                for k in keys:
                    state.append(entry[k])
        except KeyError as e:
            raise StateChanged(f"optimizer state entry {e} is missing") from None
        return self.leaves + grads + state + self.scalar_tensors

    def state_tensor_ids(self) -> set:
        return {id(st[p][k]) for st, p, keys in self.state_slots for k in keys}


class StepCapture:
    """One capture's view of training-step calls: whether it is prepared from a plan (``state``), what the
    function stepped and differentiated, and why it must observe again or break."""

    __slots__ = ("plan", "state", "session", "ran_backward", "stepped", "observing", "replan_reason",
                 "grad_mode_reason", "scalars_of")

    def __init__(self, plan: TrainingPlan | None):
        self.plan = plan
        self.state: StepState | None = None
        self.session = None
        self.ran_backward = False
        self.stepped: list = []
        self.observing = False
        self.replan_reason = None
        self.grad_mode_reason = None
        self.scalars_of: dict = {}

    def declare(self, session, declared: list) -> list:
        """Declares the plan's state as inputs of ``session`` (after ``declared``); returns those tensors."""
        self.session = session
        if self.plan is None:
            return []
        self.state = StepState(self.plan, declared)
        session.functionalize_aliased_inputs = True
        self.scalars_of = {id(s.optimizer): s.per_group for s in self.state.scalars}
        tensors = self.state.tensors()
        for t in tensors:
            session.add_input(t)
        return tensors

    @property
    def is_training_step(self) -> bool:
        return self.ran_backward or bool(self.stepped)

    def _observe(self, what: str):
        if not self.observing and self.state is None and not self.session.broken:
            self.observing = True
            self.session.mark_broken(f"{what}: {OBSERVING}")

    # --- called by the watched functions (_watch.py) ---------------------------------------------
    def on_backward(self, what: str):
        if self.state is None:
            self._observe(what)
        self.ran_backward = True

    def on_grad_mode_change(self, reason: str) -> bool:
        """A grad-mode change is allowed in a training step (no_grad around an update, an optimizer's
        step), which replays with grad mode off as a whole; the reason is kept and breaks the capture at
        its end if the function turns out not to be one (finish_reason)."""
        if self.grad_mode_reason is None:
            self.grad_mode_reason = reason
        return True

    def on_optimizer_step(self, optimizer, capturable: bool):
        """The scalar inputs the optimizer's captured update reads, or None (run its eager step)."""
        if all(o is not optimizer for o in self.stepped):
            self.stepped.append(optimizer)
        name = type(optimizer).__name__
        if self.state is None:
            self._observe(f"{name}.step()")
            return None
        if all(o is not optimizer for o in self.state.optimizers):
            if self.replan_reason is None and not self.session.broken:
                self.replan_reason = f"{name}.step() of an optimizer the first call did not step"
                self.session.mark_broken(self.replan_reason)
            return None
        if not capturable:
            self.session.mark_broken(f"{name}.step() has no captured form (SGD, Adam and AdamW have one): its "
                                     "eager step would record its hyperparameters as constants")
            return None
        return self.scalars_of[id(optimizer)]

    # --- after the call ------------------------------------------------------------------------
    def observed_plan(self, session) -> TrainingPlan:
        leaves = [t for t in session.input_tensors if t.requires_grad and t.is_leaf]
        optimizers = list(self.stepped)
        if self.plan is not None:
            optimizers = _unique(self.plan.optimizers + optimizers)
            leaves = _unique(self.plan.leaves + leaves)
        return TrainingPlan(optimizers, _unique(leaves))

    def finish_reason(self) -> tuple[str, str] | None:
        """After the call: ("replan", why) when the capture missed state it must declare, ("break", why)
        when it cannot be replayed (a grad-mode change in a function that is no training step, a
        scheduler stepping inside), else None."""
        if self.replan_reason is not None:
            return "replan", self.replan_reason
        if not self.is_training_step and self.grad_mode_reason is not None:
            return "break", self.grad_mode_reason
        if self.state is None:
            return None
        for s in self.state.scalars:
            if not s.unchanged_since_refresh():
                return "break", (f"the hyperparameters of {type(s.optimizer).__name__} changed inside the "
                                 "compiled function (an lr scheduler's step()? call it outside: a replay "
                                 "cannot repeat it)")
        known = self.state.state_tensor_ids()
        for opt in self.stepped:
            for g in opt.param_groups:
                for p in g["params"]:
                    for v in opt.state.get(p, {}).values():
                        if isinstance(v, _C.TensorBase) and id(v) not in known:
                            return "replan", f"{type(opt).__name__}.step() made new state (a first step)"
        return None


class GradSnapshot:
    """Each tracked leaf's ``.grad`` at the start of a capture (compared at its end)."""

    __slots__ = ("leaves", "grads")

    def __init__(self, leaves: list):
        self.leaves = leaves
        self.grads = [p.grad for p in leaves]

    def effects(self, session) -> tuple[list, list] | str:
        """Marks each new ``.grad`` a graph output (after the outputs already marked); returns
        ([(leaf, output index)], [leaves whose .grad a replay clears]) or a break reason."""
        assign, clear = [], []
        index = session.graph.num_outputs
        for p, before in zip(self.leaves, self.grads):
            now = p.grad
            if now is None:
                if before is not None:
                    clear.append(p)
            elif now is not before:
                if not session.is_known(now) or any(now is t for t in session.input_tensors):
                    return "a .grad was set to a tensor the step did not compute"
                session.mark_output(now)
                assign.append((p, index))
                index += 1
        return assign, clear


class TrainingStepProgram:
    """A captured training step: ``program(inputs)`` reads the state (StepState), runs ``inner`` (a
    GraphProgram: the graph, copy-backs, generator) with grad mode off, assigns or clears ``.grad``,
    and returns the function's flat outputs. Raises StateChanged before running when the state no
    longer fits."""

    __slots__ = ("inner", "state", "num_prefix", "assign", "clear", "num_outputs")

    def __init__(self, inner, state: StepState, num_prefix: int, assign: list, clear: list):
        self.inner = inner
        self.state = state
        self.num_prefix = num_prefix  # the call's tensors and the module's state; then the step's state
        self.assign = assign  # (leaf, output index): .grad set from the output
        self.clear = clear  # leaves whose .grad the step leaves None
        self.num_outputs = inner.num_outputs

    @property
    def graph(self):
        return self.inner.graph

    def __call__(self, inputs: list) -> list:
        state = self.state
        k = self.num_prefix
        inputs = [*inputs[:k], *state.tensors(), *inputs[k:]]
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            outputs = self.inner.run(inputs)
        finally:
            _C._set_grad_enabled(prev)
        for p, k in self.assign:
            p.grad = outputs[k]
        for p in self.clear:
            p.grad = None
        return outputs[:self.num_outputs]
