"""Fused kernels for symbolic graphs (backend "default"): a symbolic graph is compiled by the runtime
once per set of input sizes, from a copy specialised to them (Note [Fused kernels for symbolic graphs])."""

from __future__ import annotations

from kiln import _C, _logging
from kiln.compiler._modes import runtime_options

# Note [Fused kernels for symbolic graphs]
# The runtime (runtime/CompiledGraph) plans fused kernels, row kernels and
# memory from the tensor types of the graph it compiles, so it takes concrete
# sizes. A symbolic graph (Note [Symbolic capture]) keeps one capture and one set
# of guards for every binding of its symbols; what is specialised per size is
# only the compiled form: on the first run at new input sizes the runner asks
# capture's specialize_shapes for a copy with each capture::sym_* node folded to
# the int it computes and every value retyped by its op's meta function, compiles
# that (the kernel cache then reuses the LLVM code of identical kernels), and
# keeps it under the inputs' sizes and strides. Past MAX_SPECIALIZATIONS sizes,
# or where specialising or compiling fails, the graph runs through the
# interpreter, which takes any sizes.

MAX_SPECIALIZATIONS = 8


class SpecializingRunner:
    """``runner(graph, inputs)`` of a symbolic GraphProgram on backend "default"."""

    __slots__ = ("options", "compiled", "name", "failed")

    def __init__(self, name: str, options: dict):
        self.name = name
        self.options = options
        self.compiled: dict = {}  # input sizes/strides -> _runtime.CompiledGraph
        self.failed = False

    def __call__(self, graph, inputs):
        key = tuple((tuple(t.shape), t.stride()) if hasattr(t, "stride") else t for t in inputs)
        compiled = self.compiled.get(key)
        if compiled is None:
            if self.failed or len(self.compiled) >= MAX_SPECIALIZATIONS:
                return _C._ir.run(graph, inputs)
            try:
                specialized = _C._capture.specialize_shapes(graph, inputs)
                compiled = _C._runtime.compile(specialized, **self.options)
            except Exception as e:  # noqa: BLE001 - the interpreter runs any graph
                self.failed = True
                _logging.log("codegen", f"{self.name}: the symbolic graph runs through the interpreter: {e}")
                return _C._ir.run(graph, inputs)
            self.compiled[key] = compiled
            if _logging.is_enabled("codegen"):
                _logging.log("codegen", f"{self.name}: compiled for input sizes {[k[0] for k in key]} "
                                        f"({compiled.kernel_count} fused kernels)")
        return compiled.run(inputs)


def use_specializing_backend(backend: str, program, name: str, mode=None, decompose: bool = True) -> None:
    """Backend "default" for a symbolic GraphProgram: a SpecializingRunner (the interpreter stays for backend
    "eager" and for a graph that writes an input in place); ``decompose=False`` keeps composites whole (a
    training step's graph: _backends.use_backend)."""
    if backend != "default" or program.impure_reason is not None or not hasattr(program, "runner"):
        return
    gen = program.generator_index
    pairs = [(program.num_outputs + k, i + 2 if gen is not None and i >= gen else i)
             for k, i in enumerate(program.copy_back)]
    program.runner = SpecializingRunner(name, dict(runs_without_autograd=True, **runtime_options(mode),
                                                   outputs_into_inputs=pairs, decompose=decompose))
