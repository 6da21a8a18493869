"""How a captured program's graphs are replayed: backend "eager" through the
interpreter (``kiln._C._ir.run``); backend "default" through a compiled graph
of fused LLVM kernels (``kiln._C._runtime``, C++: runtime/CompiledGraph.h)
for each functional graph of the program: a plain graph (no output requires
grad) or the forward and backward graphs of a joint capture, which run with
grad mode off (Note [When the compiled graph runs]). A graph that writes an
input in place keeps the interpreter, which runs the writes in order."""

from __future__ import annotations

from kiln import _C, _logging
from kiln.compiler._joint import JointProgram
from kiln.compiler._modes import runtime_options
from kiln.compiler._training import TrainingStepProgram


def _graph_programs(program) -> list:
    """The GraphPrograms of ``program``: itself, a joint program's forward and backward, or a training
    step's graph."""
    if isinstance(program, TrainingStepProgram):
        return [program.inner]
    return [program.forward, program.backward] if isinstance(program, JointProgram) else [program]


def _compiled_runner(compiled):
    def run(graph, inputs):
        return compiled.run(inputs)
    return run


def _outputs_into_inputs(graph_program) -> list:
    """(graph output, graph input) index pairs of the program's copy-backs, so a fused kernel may store
    such an output into its input (runtime Note [Outputs written into their inputs])."""
    pairs = []
    gen = graph_program.generator_index
    for k, i in enumerate(graph_program.copy_back):
        pairs.append((graph_program.num_outputs + k, i + 2 if gen is not None and i >= gen else i))
    return pairs


def use_backend(backend: str, program, name: str, mode=None) -> None:
    """Sets the runner of each graph of ``program`` for ``backend`` (the interpreter stays where the
    backend is "eager" or the graph is not functional). ``mode="reduce-overhead"`` gives each compiled
    graph a pre-planned arena for its kernels' intermediates (runtime/MemoryPlan.h); ``mode="max-autotune"``
    times a few schedules per kernel and keeps the fastest (``_modes.runtime_options``)."""
    if backend != "default":
        return
    log_codegen = _logging.is_enabled("codegen")
    for graph_program in _graph_programs(program):
        if graph_program.impure_reason is not None:
            continue
        # A whole training step's graph keeps its composites whole (passes/decompose_composites.h): the
        # decomposed forms agree with eager's composite kernels to a few ulp, and AdamW's m / sqrt(v)
        # turns a ~0 gradient's last-ulp noise (the GPT step's key bias, whose exact gradient is 0) into
        # full +-lr steps, so compiler/test_training_step.py's GPT step drifts past its tolerance.
        decompose = not isinstance(program, TrainingStepProgram)
        compiled = _C._runtime.compile(graph_program.graph, keep_llvm_ir=log_codegen, runs_without_autograd=True,
                                       **runtime_options(mode),
                                       outputs_into_inputs=_outputs_into_inputs(graph_program), decompose=decompose)
        graph_program.runner = _compiled_runner(compiled)
        graph_program.compiled = compiled
        if log_codegen:
            kernels = "\n".join(compiled.kernels) or "(no fused kernels)\n"
            _logging.log("codegen", f"kernels of {name} ({compiled.kernel_count} fused; eager: "
                                    f"{', '.join(compiled.eager_ops) or 'none'}):\n{kernels}"
                                    f"{compiled.memory_plan}LLVM IR:\n{compiled.llvm_ir.rstrip()}")


def _entries(compiled_fn) -> list:
    target = getattr(compiled_fn, "_compiled_call", compiled_fn)
    return [e for e in target.cache.values() if hasattr(e, "program")]


def compiled_graphs(compiled_fn) -> list:
    """The ``_runtime.CompiledGraph`` of each compiled graph of ``compiled_fn`` (a ``kiln.compile`` result,
    function or module), in capture order (a joint entry's forward, then its backward)."""
    return [p.compiled for e in _entries(compiled_fn) for p in _graph_programs(e.program) if p.compiled is not None]


def kernel_counts(compiled_fn) -> list:
    """For each captured entry of ``compiled_fn``, in capture order: its fused-kernel count (a joint entry's
    forward and backward together), or None where every graph replays through the interpreter."""
    counts = []
    for e in _entries(compiled_fn):
        graphs = [p.compiled for p in _graph_programs(e.program) if p.compiled is not None]
        counts.append(sum(g.kernel_count for g in graphs) if graphs else None)
    return counts
