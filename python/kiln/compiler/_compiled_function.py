"""CompiledFunction: one function under kiln.compile, with its cache of
captured graphs keyed by guards. See README.md."""

from __future__ import annotations

import functools
import types
import warnings

from kiln import _C, _logging
from kiln._tensor import Tensor
from kiln.compiler import _dynamic, _joint, _state, _symbolic_backward, _symbolic_training, _training
from kiln.compiler._symbolic import SymbolicContext, plain_sizes
from kiln.compiler._symbolic_patches import patched
from kiln.compiler._backends import CompiledRunner, use_backend
from kiln.compiler._replay import GraphProgram, interpret
from kiln.compiler._specialize import use_specializing_backend
from kiln.compiler._watch import watching
from kiln.compiler._guards import (ModuleStateGuard, Unguardable, describe, first_difference, flatten, guard_key,
                                  unflatten)
from kiln.nn.modules.module import Module

RECOMPILE_LIMIT = 8
# After this many symbolic backward graphs of one function fail their check (each costs a forward and
# backward at two other sizes), its calls needing gradients are captured for their exact sizes only.
MAX_BACKWARD_CHECKS_FAILED = 2
SYMBOLIC_FAST_PATHS = 4  # exact sizes per function whose symbolic hits also get a C++ guard check
_compiling = _state.thread_local  # its "sessions": see _state.is_compiling


class GraphBreak(RuntimeError):
    """Raised with ``fullgraph=True`` when a function cannot be captured whole."""


class CapturedEntry:
    """A graph for one guard set: ``program`` (a GraphProgram, or a JointProgram when the outputs require
    grad) replays it with the call's tensors, then the module's parameters and buffers, then the tensors it
    holds by reference, and returns the flat outputs. ``graph`` is the (forward) graph."""

    __slots__ = ("program", "graph", "lifted", "out_spec", "num_ops", "single_output")

    def __init__(self, program, lifted, out_spec, num_ops):
        self.program = program
        self.graph = program.graph
        self.lifted = lifted
        self.out_spec = out_spec
        self.num_ops = num_ops
        self.single_output = out_spec == ("T", 0)  # the function returns one tensor: no rebuilding

    def outputs(self, values: list):
        return values[0] if self.single_output else unflatten(self.out_spec, values)


class GuardedEntry:
    """A cache entry reachable by the C++ hit path (Note [The cached-call fast path]):
    ``guards`` is a ``_C._capture.GuardSet`` of the positional and keyword arguments; ``graph`` is None
    for an EagerEntry; the graph's inputs are the call's tensors in the guards' walk order (flatten's),
    then ``lifted``; ``fast`` is the ``_C._capture.CacheEntry`` the hit path checks and runs."""

    __slots__ = ("guards", "module_guards", "entry", "graph", "program", "lifted", "single_output", "out_spec",
                 "fast")

    def __init__(self, guards, module_guards, entry, fn):
        self.guards = guards
        self.module_guards = module_guards  # a ModuleStateGuard, or None for a function
        self.entry = entry
        captured = isinstance(entry, CapturedEntry)
        self.graph = entry.graph if captured else None
        self.program = entry.program if captured else None
        # The module's parameters and buffers come before the lifted tensors; the module guards keep them.
        self.lifted = ((module_guards.tensors if module_guards is not None else []) + entry.lifted
                       if captured else [])
        self.single_output = captured and entry.single_output
        self.out_spec = entry.out_spec if captured else None
        self.fast = _C._capture.CacheEntry(self._fast_spec(fn))

    def _fast_spec(self, fn):
        """What the C++ hit path does on a hit (python/csrc/PyCachedCall.cpp): run the function ("eager"),
        run the graph itself as GraphProgram does ("graph"), a JointProgram's forward and its backward node
        ("joint"), a TrainingStepProgram with its state read and .grad effects ("training"), or call
        CompiledFunction._run_guarded ("python": specialising runners)."""
        spec = types.SimpleNamespace(guards=self.guards, module_guard=None if self.module_guards is None
                                     else self.module_guards.fast, kind="python", target=None, guarded=self)
        if self.graph is None:
            spec.kind, spec.target = "eager", fn
            return spec
        program = self.program
        if isinstance(program, GraphProgram) and _runs_in_cpp(program):
            spec.kind, spec.target = "graph", None
            forward = program
        elif isinstance(program, _joint.JointProgram) and _runs_in_cpp(program.forward):
            spec.kind, spec.target = "joint", program
            forward = program.forward
            spec.num_saved = program.num_saved
            spec.differentiable_outputs = program.differentiable_outputs
            spec.grad_positions = program.grad_positions
        elif isinstance(program, _training.TrainingStepProgram) and _runs_in_cpp(program.inner):
            spec.kind = "training"
            forward = program.inner
            state = program.state
            spec.step_prefix = program.num_prefix
            spec.step_scalars = list(state.scalars)
            spec.step_leaves = list(state.leaves)
            spec.step_all_leaves = list(state.all_leaves)
            spec.step_grad_defined = [bool(d) for d in state.grad_defined]
            spec.step_state_slots = list(state.state_slots)
            spec.step_scalar_tensors = list(state.scalar_tensors)
            spec.step_assign = [(p, k) for p, k in program.assign]
            spec.step_clear = list(program.clear)
        else:
            return spec
        spec.runner_owner, spec.runner = forward, forward.runner  # a runner replaced later: _run_guarded
        spec.compiled = forward.runner.compiled if isinstance(forward.runner, CompiledRunner) else None
        spec.graph = forward.graph
        spec.lifted = self.lifted
        spec.num_outputs = forward.num_outputs
        spec.single_output = self.single_output
        spec.out_spec = self.out_spec
        spec.unflatten = unflatten
        spec.generator_index = forward.generator_index
        spec.generator_advance = forward.generator_advance
        spec.generator_end = forward.generator_end  # a symbolic graph's run-time end offset (an output), or None
        spec.copy_back = forward.copy_back
        return spec


def _runs_in_cpp(program: GraphProgram) -> bool:
    """Whether the C++ hit path replays this graph program itself: its runner is the interpreter or one
    compiled graph (a specialising runner or a training step goes through Python)."""
    return program.runner is interpret or isinstance(program.runner, CompiledRunner)


# Note [The cached-call fast path]
# CompiledFunction is a subclass of _C._capture.CachedCall, whose tp_call
# (python/csrc/PyCachedCall.cpp) is the whole hit path in C++: a call made
# while no capture runs on this thread tries each GuardedEntry's CacheEntry in
# order. Its GuardSet (python/csrc/CallGuards.h) checks the same guards the
# Python key holds for the call's positional and keyword arguments, walked as
# flatten((args, kwargs)) walks them: tuples, lists, named tuples and dicts by
# exact type, length and keys in order (keyword names too), each tensor's
# sizes, strides, dtype, device, requires_grad and aliasing, each scalar
# (None/bool/int/float/str) by exact type and value, and grad mode; without
# building a key. It is stricter than the key where that is cheaper (a dict
# subclass, a list subclass or a key of another type is not guarded: such calls
# take the Python key), never looser. The walk hands back the call's tensors in
# flatten's order: the graph's inputs. For a module, its ModuleGuard then checks
# every submodule's class (unmodified: its version tag), that no instance holds
# a walk of its own, its training flag and the keys and identity of each entry
# of its _modules, _parameters and _buffers (so the parameters and buffers are
# the recorded ones, in the recorded order) and their metadata, without walking
# named_parameters; a module whose class or instance overrides Module's walks
# gets no ModuleGuard (its calls take the Python key, which calls the walks).
# On a hit, a graph replayed by the interpreter or by one compiled graph runs
# from C++ (GraphProgram's steps: generator inputs and advance, copy-backs; a
# JointProgram's forward with grad mode off and its CompiledFunctionBackward
# node; a TrainingStepProgram's state read as StepState.tensors() reads it and
# its .grad effects), with no Python frame in between; other programs
# (specialising runners) call _run_guarded with the call's tensors, and so does
# a training step whose state no longer fits (it raises StateChanged). A miss
# (or a capture running) calls _miss: the Python key, which also names the
# failing guard for warnings, logs and explain, and recompiles under the limit;
# every entry stays in ``cache`` under its key. ``_fast_path_hits`` counts the
# calls the C++ path served, by entry kind. The guards are built before the
# capture runs, from the same arguments the key was computed from: the function
# may change its inputs' metadata in place. ``guarded_entries`` is the Python
# list of the entries; every change to it is followed by _sync_fast_entries,
# which hands the C++ path its CacheEntries.


class EagerEntry:
    """A guard set the function runs eagerly for (a graph break), with the reason."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason


def _disabled(fn) -> bool:
    return getattr(fn, "_kiln_compile_disabled", False)


class CompiledFunction(_C._capture.CachedCall):
    """Calls ``fn`` through the capture cache (backend "eager": interpreter replay). Calling it runs the
    C++ hit path (Note [The cached-call fast path]), else ``_miss``."""

    def __init__(self, fn, *, module=None, fullgraph=False, dynamic=None, backend="default", mode=None,
                 options=None):
        if backend not in ("default", "eager"):
            raise ValueError(f"kiln.compile: unknown backend {backend!r} (available: 'default', 'eager')")
        if dynamic not in (None, True, False):
            raise ValueError(f"kiln.compile: dynamic must be None, True or False, got {dynamic!r}")
        self.dynamic = dynamic
        self.fn = fn
        self.module = module
        self.fullgraph = fullgraph
        self.backend = backend
        self.mode = mode
        self.options = options
        self.cache: dict = {}
        self.guarded_entries: list = []  # GuardedEntry, see Note [The cached-call fast path]
        self.num_captures = 0  # graphs captured (successful or broken), for tests and explain
        self.break_reasons: list = []
        self.last_key = None
        self._warned_limit = False
        self._warned_break = False
        self._reset_dynamic()
        self._reset_training()
        _state.compiled_functions.add(self)
        if module is None or fn is not module:
            functools.update_wrapper(self, fn)

    def reset(self):
        self.cache.clear()
        self.guarded_entries.clear()
        self._sync_fast_entries()
        self.num_captures = 0
        self.break_reasons.clear()
        self.last_key = None
        self._warned_limit = False
        self._warned_break = False
        self._reset_dynamic()
        self._reset_training()

    def _reset_dynamic(self):
        self.layout = _dynamic.Layout({})  # the dynamic dimensions (Note [Symbolic capture])
        self.fixed_dims: dict = {}  # tensor index -> dims a probe found the graph's ops fix: never symbolic
        self.symbolic_entries: list = []  # _dynamic.SymbolicEntry, in capture order
        self.symbolic_hits: dict = {}  # exact guard key -> the captured entry a symbolic lookup found
        self.num_symbolic_fast_paths = 0
        self.recompile_reasons: list = []  # why each capture after the first happened
        self.specialized_reasons: list = []  # why a symbolic capture was kept for its exact sizes only
        self.num_backward_checks_failed = 0  # symbolic backward graphs that failed _symbolic_backward's check

    def _reset_training(self):
        self.training_plan = None  # a _training.TrainingPlan once a call showed a training step
        self.num_replans = 0
        self.num_state_recaptures = 0
        self._disabled_reason = None  # set when training-step capture gave up: later misses run eagerly

    def _module_state(self):
        if self.module is None:
            return []
        named = list(self.module.named_parameters()) + list(self.module.named_buffers())
        return [(name, t) for name, t in named if t is not None]

    def _miss(self, args, kwargs):
        """A call the C++ hit path did not serve: keyword arguments, a capture running (nested compiled
        calls are inlined into the outer capture), or no entry's guards holding."""
        if getattr(_compiling, "sessions", None):  # _state.is_compiling(), inlined
            return self.fn(*args, **kwargs)
        if _disabled(self.fn):
            return self.fn(*args, **kwargs)
        return self._call_through_key(args, kwargs)

    def _run_guarded(self, guarded, tensors, args, kwargs):
        """A hit of the C++ path on an entry it does not replay itself (kind "python"): ``tensors`` are the
        call's, in the guards' walk order."""
        try:
            outputs = guarded.program(tensors + guarded.lifted if guarded.lifted else tensors)
        except _training.StateChanged as e:
            return self._state_changed(guarded.entry, str(e), args, kwargs or {})
        return outputs[0] if guarded.single_output else unflatten(guarded.out_spec, outputs)

    def _sync_fast_entries(self):
        self._set_fast_entries([g.fast for g in self.guarded_entries])

    def _call_through_key(self, args, kwargs):
        tensors: list = []
        try:
            if not kwargs and all(type(a) is Tensor for a in args):  # the common call: tensors only
                tensors = list(args)
                spec = len(args)
            else:
                spec = flatten((args, kwargs), tensors)
            module_state = self._module_state()
            key = guard_key(spec, tensors, module_state, self.module)
        except Unguardable as e:
            return self._run_eagerly(str(e), args, kwargs)
        entry = self.cache.get(key)
        if entry is not None and self.module is not None:
            self._refresh_module_guards(entry, args, kwargs, module_state)
        if entry is None and self.symbolic_entries:
            entry = self.symbolic_hits.get(key)
            if entry is None:
                entry = self._symbolic_lookup(key)
                if entry is not None:
                    self._remember_symbolic_hit(key, entry, args, kwargs, module_state)
        if entry is None:
            if len(self.cache) + len(self.symbolic_entries) >= RECOMPILE_LIMIT:
                if not self._warned_limit:
                    self._warned_limit = True
                    changed = first_difference(self.last_key, key) if self.last_key is not None else "?"
                    warnings.warn(f"kiln.compile: {self._name()} hit the recompile limit ({RECOMPILE_LIMIT}); "
                                  f"last failing guard: {changed}. Running it eagerly from now on.", stacklevel=2)
                return self.fn(*args, **kwargs)
            layout = self._layout_for(key, tensors)
            if self.last_key is not None:
                reason = self._recompile_reason(key)
                self.recompile_reasons.append(reason)
                if _logging.is_enabled("recompiles"):
                    failing = reason.split(";")[0] if reason.startswith("symbolic guard failed") else \
                        first_difference(self.last_key, key)
                    _logging.log("recompiles", f"recompiling {self._name()}: failing guard: {failing}")
            self.last_key = key
            guards = self._guard_set(args, kwargs, module_state)
            # kiln.profiler shows a miss as one range around capture and compilation (its JIT compile inside).
            profiled = _C._profiler.begin_range(f"kiln.compile: capture {self._name()}", "compile")
            try:
                return self._capture(key, guards, tensors, module_state, args, kwargs, layout)
            finally:
                _C._profiler.end_range(profiled)
        if isinstance(entry, EagerEntry):
            return self.fn(*args, **kwargs)
        inputs = tensors + [t for _, t in module_state] + entry.lifted
        try:
            return entry.outputs(entry.program(inputs))
        except _training.StateChanged as e:
            return self._state_changed(entry, str(e), args, kwargs)

    def _remember_symbolic_hit(self, key, entry, args, kwargs, module_state):
        """Later calls with these exact sizes skip binding the symbols (a dict hit) and, for the first
        SYMBOLIC_FAST_PATHS sizes, take the C++ guard check too (Note [The cached-call fast path])."""
        if len(self.symbolic_hits) >= 64:
            return
        self.symbolic_hits[key] = entry
        if self.num_symbolic_fast_paths < SYMBOLIC_FAST_PATHS:
            guards = self._guard_set(args, kwargs, module_state)
            if guards is not None:
                self.num_symbolic_fast_paths += 1
                self.guarded_entries.append(GuardedEntry(guards[0], guards[1], entry, self.fn))
                self._sync_fast_entries()

    def _symbolic_lookup(self, key):
        """The entry of a symbolic cache hit for the call keyed ``key``, or None."""
        for sentry in self.symbolic_entries:
            env = sentry.bind(key)
            if env is not None and sentry.failing_guard(env) is None:
                return sentry.entry
        return None

    def _layout_for(self, key, tensors):
        """The dynamic dimensions a capture for ``key`` treats as symbols (Note [Symbolic capture]):
        dynamic=True: every dimension of every tensor argument; None: those whose extent changed between
        calls that differ in extents only (they join the layout for good); False: none."""
        if self.dynamic is False:
            return _dynamic.Layout({})
        if self.dynamic is True:
            self.layout = _dynamic.Layout({i: range(len(t.shape)) for i, t in enumerate(tensors)})
        else:
            changed = _dynamic.sizes_changed(self.last_key, key)
            if changed:
                self.layout = self.layout.merged(changed)
        return self.layout.without(self.fixed_dims)

    def _recompile_reason(self, key) -> str:
        """Why this call missed the cache: the guard that changed against the last capture, and for a
        symbolic cache miss the symbolic guard that failed (for explain and KILN_LOGS=recompiles)."""
        reason = f"failing guard: {first_difference(self.last_key, key)}"
        changed = _dynamic.sizes_changed(self.last_key, key)
        if changed:
            old, new = self.last_key[3], key[3]
            parts = [f"tensor argument {i} sizes {tuple(old[i][0])} -> {tuple(new[i][0])}" for i in changed]
            reason = "; ".join(parts)
            if self.dynamic is None:
                reason += " (dims " + ", ".join(f"{i}:{list(d)}" for i, d in changed.items()) + " now dynamic)"
        for sentry in self.symbolic_entries:
            env = sentry.bind(key)
            failing = sentry.failing_guard(env) if env is not None else None
            if failing is not None:
                return f"symbolic guard failed: {failing}; {reason}"
        if self.symbolic_entries:
            return f"no symbolic entry matches (a static guard, rank, 0/1 extent or layout changed); {reason}"
        return reason

    def _state_changed(self, entry, reason, args, kwargs):
        """A training-step entry whose gradients or optimizer state changed shape (Note [Capturing a
        training step]): drop it and capture again, or after RECOMPILE_LIMIT such changes run eagerly."""
        for key, e in list(self.cache.items()):
            if e is entry:
                del self.cache[key]
        self.guarded_entries = [g for g in self.guarded_entries if g.entry is not entry]
        self.symbolic_entries = [s for s in self.symbolic_entries if s.entry is not entry]
        self.symbolic_hits = {k: e for k, e in self.symbolic_hits.items() if e is not entry}
        self._sync_fast_entries()
        self.num_state_recaptures += 1
        if _logging.is_enabled("recompiles"):
            _logging.log("recompiles", f"recompiling {self._name()}: the training state changed: {reason}")
        if self.num_state_recaptures > RECOMPILE_LIMIT:
            self.training_plan = None
            self._disabled_reason = f"the training state keeps changing ({reason})"
        return self._call_through_key(args, kwargs)

    def _guard_set(self, args, kwargs, module_state):
        """(the C++ guards of the arguments, the module's ModuleStateGuard or None) for this call, or None
        where the fast path does not apply (arguments holding other than tensors, scalars and tuples,
        lists and dicts of them; a module whose class or instance overrides Module's walks: its calls take
        the Python key, which calls those walks). Built before the call runs."""
        try:
            guards = _C._capture.GuardSet(args, kwargs or None)
        except TypeError:
            return None
        if self.module is None:
            return guards, None
        if not ModuleStateGuard.available(self.module, Module):
            return None
        try:
            return guards, ModuleStateGuard(self.module, [t for _, t in module_state])
        except TypeError:  # a walk or guarded attribute of an instance's own, a class without a version tag
            return None

    def _refresh_module_guards(self, entry, args, kwargs, module_state):
        """A Python-key hit on an entry whose C++ module guard fails (a class modified and put back, a walk
        of an instance's own removed: the key is the capture's again): its C++ guards built anew."""
        for i, g in enumerate(self.guarded_entries):
            if g.entry is entry and g.module_guards is not None and not g.module_guards.check():
                guards = self._guard_set(args, kwargs, module_state)
                if guards is None:
                    del self.guarded_entries[i]
                else:
                    self.guarded_entries[i] = GuardedEntry(guards[0], guards[1], entry, self.fn)
                self._sync_fast_entries()
                return

    def _store(self, key, guards, args, entry):
        self.cache[key] = entry
        if guards is not None:
            self.guarded_entries.append(GuardedEntry(guards[0], guards[1], entry, self.fn))
            self._sync_fast_entries()

    def _name(self):
        return getattr(self.fn, "__qualname__", None) or repr(self.fn)

    def _run_eagerly(self, reason, args, kwargs):
        _logging.log("breaks", f"{self._name()} runs eagerly: {reason}")
        if self.fullgraph:
            raise GraphBreak(f"kiln.compile(fullgraph=True): {self._name()}: {reason}")
        return self.fn(*args, **kwargs)

    def _record_break(self, key, guards, args, reason):
        _logging.log("breaks", f"graph break in {self._name()}: {reason}")
        self._store(key, guards, args, EagerEntry(reason))
        self.break_reasons.append(reason)
        if self.fullgraph:
            raise GraphBreak(f"kiln.compile(fullgraph=True): graph break in {self._name()}: {reason}")
        if not self._warned_break:
            self._warned_break = True
            warnings.warn(f"kiln.compile: graph break in {self._name()}, running it eagerly for these inputs: "
                          f"{reason}", stacklevel=3)

    def _symbolic_context(self, key, layout, session, declared):
        """The SymbolicContext of a capture symbolic in ``layout``'s dimensions, or None where the capture
        specialises every size: no dimension >= 2 is dynamic, or a call that may need gradients after MAX_BACKWARD_CHECKS_FAILED symbolic backward graphs (or training
        steps) of this function failed their check (Note [Symbolic sizes in the backward])."""
        if not layout:
            return None
        if self.num_backward_checks_failed >= MAX_BACKWARD_CHECKS_FAILED and (self.training_plan is not None or (
                _C.is_grad_enabled() and any(t.requires_grad for t in declared))):
            self.specialized_reasons.append(f"{self.num_backward_checks_failed} symbolic backward graphs failed "
                                            "their check at other sizes: captured for its exact sizes")
            return None
        names, env = layout.names(key)
        if not names:
            return None
        return SymbolicContext(session, declared, names, env)

    def _capture(self, key, guards, tensors, module_state, args, kwargs, layout=None):
        self.num_captures += 1
        if self._disabled_reason is not None:
            self._record_break(key, guards, args, self._disabled_reason)
            return self.fn(*args, **kwargs)
        session = _C._capture.Session()
        declared = tensors + [t for _, t in module_state]
        for t in declared:
            session.add_input(t)
        step = _training.StepCapture(self.training_plan)
        step.declare(session, declared)
        grads_before = _training.GradSnapshot(step.state.all_leaves) if step.state is not None else None
        context = self._symbolic_context(key, layout, session, declared)
        if context is not None:  # random ops' offsets depend on the sizes: Note [Random ops under capture]
            session.symbolic_sizes = True
            if step.state is not None:  # its backward's literal sizes: Note [Symbolic training steps]
                step.size_table = lambda: _symbolic_backward.size_table(session, declared, context.dims,
                                                                        context.values)
        sessions = _state.active_sessions()
        sessions.append(session)
        try:
            if context is None:
                with watching(step), session:
                    result = self.fn(*args, **kwargs)
            else:
                with watching(step), session, patched(context):
                    result = self.fn(*args, **kwargs)
                    result = plain_sizes(result)  # a size the function returns is guarded, then an int
        finally:
            sessions.pop()
            if context is not None:
                context.release()
        finish = ("replan", None) if step.observing else step.finish_reason()
        if finish is not None and finish[0] == "replan":
            self._replan(key, guards, args, step.observed_plan(session), finish[1])
            session.finish()
            return result
        if session.broken or finish is not None:
            self._record_break(key, guards, args, session.break_reason if session.broken else finish[1])
            session.finish()
            return result
        out_tensors: list = []
        try:
            out_spec = flatten(result, out_tensors, "output")
        except Unguardable as e:
            self._record_break(key, guards, args, f"the output holds an unhashable non-tensor value ({e})")
            return result
        for t in out_tensors:
            session.mark_output(t)
        copy_back = session.add_copy_back_outputs()
        grad_effects = None
        if grads_before is not None:
            grad_effects = grads_before.effects(session)
            if isinstance(grad_effects, str):
                self._record_break(key, guards, args, grad_effects)
                session.finish()
                return result
        lifted = session.input_tensors[session.num_declared_inputs:]
        state_tensors = session.input_tensors[len(tensors):]  # what a training step's check saves and restores
        if any(o is t for o in out_tensors for t in lifted):
            # A replay would hand out the one held tensor on every call, where eager makes a new one (or returns
            # the global itself, whose rebinding the replay cannot see).
            self._record_break(key, guards, args, "the function returns a tensor it did not compute (a global, "
                                                  "closure or Python-made tensor)")
            session.finish()
            return result
        if step.state is not None and not step.is_training_step and _joint.wants_backward(out_tensors):
            # Prepared as a training step (its graph replays without autograd), this call made no step.
            self._record_break(key, guards, args, "a differentiable output from a function captured as a training "
                                                  "step that called neither backward() nor an optimizer's step()")
            session.finish()
            return result
        joint = None
        symbolic = None
        if step.state is None and _joint.wants_backward(out_tensors):
            if context is not None:  # the forward first; the backward then with its sizes symbolic
                symbolic = self._check_symbolic(key, session, context, declared, copy_back, len(out_tensors))
                if symbolic is not None:
                    session.set_size_symbols(_symbolic_backward.size_table(session, declared, symbolic[1],
                                                                           context.values))
            generator_end = self._mark_generator_end(session)
            joint = _joint.record_backward(session, out_tensors)
            session.set_size_symbols([])
            if isinstance(joint, str):
                self._record_break(key, guards, args, joint)
                session.finish()
                return result
        else:
            if context is not None:
                symbolic = self._check_symbolic(key, session, context, declared, copy_back, len(out_tensors))
            generator_end = self._mark_generator_end(session)
        num_ops = session.num_ops
        around = dict(num_outputs=len(out_tensors), generator_index=session.generator_input_index,
                      generator_advance=session.generator_advance, generator_end=generator_end,
                      copy_back=copy_back, impure_reason=session.impure_reason)
        graph = session.take_graph()
        try:
            graph.verify()
            if joint is not None:
                program = _joint.JointProgram(graph, joint, **around)
            else:
                program = GraphProgram(graph, **around)
            if step.state is not None:
                assign, clear = grad_effects
                program = _training.TrainingStepProgram(program, step.state, len(declared), assign, clear)
            program.graph.verify()
            if symbolic is not None and joint is not None:
                symbolic = self._check_symbolic_backward(program, declared + lifted, symbolic, context)
            elif symbolic is not None and step.state is not None:
                symbolic = self._check_symbolic_step(program, args, kwargs, module_state, lifted, state_tensors, symbolic,
                                                     context)
            if context is None:
                use_backend(self.backend, program, self._name(), self.mode)
            elif isinstance(program, GraphProgram):  # a graph with SymInt sizes: Note [Fused kernels for ...]
                use_specializing_backend(self.backend, program, self._name(), self.mode)
            elif isinstance(program, _training.TrainingStepProgram):  # composites kept whole: see use_backend
                use_specializing_backend(self.backend, program.inner, self._name(), self.mode, decompose=False)
            elif isinstance(program, _joint.JointProgram):
                use_specializing_backend(self.backend, program.forward, self._name(), self.mode)
                use_specializing_backend(self.backend, program.backward, self._name(), self.mode)
        except Exception as e:  # a recording kiln cannot replay: never replay it
            self._record_break(key, guards, args, f"the captured graph does not verify: {e}")
            return result
        captured = CapturedEntry(program, lifted, out_spec, num_ops)
        if symbolic is not None:
            skey, names, constants = symbolic
            self.symbolic_entries.append(_dynamic.SymbolicEntry(captured, list(context.guards), names, skey,
                                                                constants))
        else:
            self._store(key, guards, args, captured)
        if _logging.is_enabled("graph"):
            _logging.log("graph", f"captured graph of {self._name()}:\n{str(graph).rstrip()}")
        if _logging.is_enabled("guards"):
            _logging.log("guards", f"guards of {self._name()}:\n  " + "\n  ".join(describe(key)))
        return result

    @staticmethod
    def _mark_generator_end(session):
        """The index of the output holding where the graph's random draws left the generator (a session
        chaining its generator offsets: Note [Random ops under capture]), or None."""
        if session.symbolic_sizes and session.generator_input_index is not None:
            return session.mark_generator_end_output()
        return None

    def _check_symbolic_backward(self, program, inputs, symbolic, context):
        """``symbolic`` when the joint ``program``'s backward, recorded with its sizes matched to symbols,
        gives eager's gradients at other extents (Note [Symbolic sizes in the backward]); else None (the
        entry is kept for these exact sizes: at them every matched size is what eager passed)."""
        skey, names, constants = symbolic
        points = list(_dynamic.perturbations(context.values, set(constants), context.guards))[:2]
        reason = "no other sizes satisfy the guards" if not points else \
            _symbolic_backward.gradients_agree(program, inputs, names, points)
        return symbolic if reason is None else self._kept_for_exact_sizes("graph", reason)

    def _check_symbolic_step(self, program, args, kwargs, module_state, lifted, state_tensors, symbolic, context):
        """``symbolic`` when the training-step ``program`` leaves what the function leaves eagerly at other
        extents (Note [Symbolic training steps]); else None (kept for these exact sizes)."""
        skey, names, constants = symbolic
        points = list(_dynamic.perturbations(context.values, set(constants), context.guards))[:2]
        reason = "no other sizes satisfy the guards" if not points else \
            _symbolic_training.step_agrees(self.fn, args, kwargs, program, program.state,
                                           [t for _, t in module_state], lifted, state_tensors, names, points)
        return symbolic if reason is None else self._kept_for_exact_sizes("training step", reason)

    def _kept_for_exact_sizes(self, what: str, reason: str) -> None:
        """Counts and logs a symbolic check that failed: the capture is kept for its exact sizes."""
        self.num_backward_checks_failed += 1
        self.specialized_reasons.append(reason)
        if _logging.is_enabled("recompiles"):
            _logging.log("recompiles", f"{self._name()}: {what} kept for these exact sizes: {reason}")

    def _check_symbolic(self, key, session, context, declared, copy_back, first_copy_back):
        """(symbolic key, symbol names per tensor) when the graph just recorded serves every binding of its
        symbols its guards accept, its inputs then typed with the symbols; None where it is kept for
        these exact sizes (the reason logged under KILN_LOGS=recompiles): Note [Symbolic capture]."""
        names, env = context.dims, context.values
        reason = context.specialized
        if reason is None:
            pinned_before = set(context.pinned)
            reason = _dynamic.probe(session, context, declared, names, env, copy_back, first_copy_back)
            for name in context.pinned - pinned_before:  # the graph's ops fix these extents: static from now on
                for i, tensor_names in names.items():
                    self.fixed_dims.setdefault(i, set()).update(d for d, n in enumerate(tensor_names) if n == name)
        if reason is not None:
            self.specialized_reasons.append(reason)
            if _logging.is_enabled("recompiles"):
                _logging.log("recompiles", f"{self._name()}: graph kept for these exact sizes: {reason}")
            return None
        # Pinned symbols (an equality guard, or an extent the ops fix) are keyed as the extents they are.
        constants = {n: env[n] for n in context.pinned if n in env}
        names = {i: [None if n in constants else n for n in ns] for i, ns in names.items()}
        names = {i: ns for i, ns in names.items() if any(n is not None for n in ns)}
        if not names:
            return None
        for i, tensor_names in names.items():
            session.set_input_symbols(i, [n or "" for n in tensor_names])
        return _dynamic.symbolic_key(key, names)[0], names, constants

    def _replan(self, key, guards, args, plan, reason):
        """A call that showed (more of) a training step ran eagerly: capture the next call with ``plan``
        (Note [Capturing a training step]); nothing is cached for this call."""
        self.num_replans += 1
        if self.num_replans > _training.MAX_REPLANS:
            self._disabled_reason = (f"the training step's optimizers or state keep changing ({reason}); "
                                     f"gave up after {_training.MAX_REPLANS} tries")
            self._record_break(key, guards, args, self._disabled_reason)
            return
        self.training_plan = plan
        self.last_key = None
        if _logging.is_enabled("recompiles"):
            _logging.log("recompiles", f"{self._name()} is a training step ({reason or _training.OBSERVING}): "
                                       f"capturing its next call with {len(plan.optimizers)} optimizer(s) and "
                                       f"{len(plan.leaves)} leaves")
