"""How a captured graph is replayed: backend "eager" through the interpreter
(``kiln._C._ir.run``); backend "default" through a compiled graph of fused
LLVM kernels (``kiln._C._runtime``, C++: runtime/CompiledGraph.h) when the
guard set needs no autograd, else through the interpreter too (Note [When
the compiled graph runs], runtime/CompiledGraph.h)."""

from __future__ import annotations

import functools

from kiln import _C, _logging


def _needs_autograd(inputs: list) -> bool:
    return _C.is_grad_enabled() and any(t.requires_grad for t in inputs)


def make_runner(backend: str, graph, inputs: list, name: str):
    """(run, compiled): ``run(inputs) -> list of outputs`` for ``graph`` captured from ``inputs``;
    ``compiled`` is the ``_runtime.CompiledGraph`` it runs, or None for an interpreter replay."""
    if backend != "default" or _needs_autograd(inputs):
        return functools.partial(_C._ir.run, graph), None
    log_codegen = _logging.is_enabled("codegen")
    compiled = _C._runtime.compile(graph, keep_llvm_ir=log_codegen)
    if log_codegen:
        kernels = "\n".join(compiled.kernels) or "(no fused kernels)\n"
        _logging.log("codegen", f"kernels of {name} ({compiled.kernel_count} fused; eager: "
                                f"{', '.join(compiled.eager_ops) or 'none'}):\n{kernels}"
                                f"LLVM IR:\n{compiled.llvm_ir.rstrip()}")
    return compiled.run, compiled


def kernel_counts(compiled_fn) -> list:
    """For each captured entry of ``compiled_fn`` (a ``kiln.compile`` result, function or module), in capture
    order: its fused-kernel count, or None where it replays through the interpreter."""
    target = getattr(compiled_fn, "_compiled_call", compiled_fn)
    return [None if getattr(e, "compiled", None) is None else e.compiled.kernel_count
            for e in target.cache.values() if hasattr(e, "compiled")]


def compiled_graphs(compiled_fn) -> list:
    """The ``_runtime.CompiledGraph`` of each captured entry of ``compiled_fn`` that has one, in capture order."""
    target = getattr(compiled_fn, "_compiled_call", compiled_fn)
    return [e.compiled for e in target.cache.values() if getattr(e, "compiled", None) is not None]
