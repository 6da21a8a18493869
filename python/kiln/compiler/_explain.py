"""kiln.compiler.explain: what kiln.compile captures for one call."""

from __future__ import annotations

import dataclasses
import warnings

from kiln.compiler._compiled_function import CapturedEntry, CompiledFunction
from kiln.compiler._guards import guard_names
from kiln.nn.modules.module import Module


@dataclasses.dataclass
class ExplainOutput:
    """Field names follow torch._dynamo's ExplainOutput."""

    graphs: list  # kiln._C._ir.Graph objects
    graph_count: int
    graph_break_count: int
    break_reasons: list  # strings: the op or escape, and the user's file:line when known
    op_count: int
    ops_per_graph: list  # per graph, the node kinds in order
    out_guards: list  # the guard names the call was keyed on
    # Why each capture of the compiled function passed in (when one was) after its first happened: the
    # guard that changed, the sizes that became dynamic, a symbolic guard that failed.
    recompile_reasons: list = dataclasses.field(default_factory=list)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.recompile_reasons:
            lines.append("Recompile Reasons:")
            lines.extend(f"  {i + 1}. {r}" for i, r in enumerate(self.recompile_reasons))
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines.extend(f"  {i + 1}. {r}" for i, r in enumerate(self.break_reasons))
        for i, g in enumerate(self.graphs):
            lines.append(f"Graph {i}:")
            lines.append(str(g))
        return "\n".join(lines)


def explain(fn, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs)`` captures ``fn`` once, freshly (nothing
    cached is used or kept), and reports the graphs, breaks and ops."""

    def inner(*args, **kwargs):
        target = getattr(fn, "_orig_mod", fn)
        history = getattr(fn, "_compiled_call", fn)
        recompile_reasons = list(history.recompile_reasons) if isinstance(history, CompiledFunction) else []
        if isinstance(target, CompiledFunction):
            target = target.fn

        compiled = CompiledFunction(target, module=target if isinstance(target, Module) else None, backend="eager")

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(*args, **kwargs)
        graphs = [e.graph for e in compiled.cache.values() if isinstance(e, CapturedEntry)]
        ops = [[k for k in g.node_kinds if not k.startswith("prim::")] for g in graphs]
        guards = guard_names(compiled.last_key) if compiled.last_key else []
        return ExplainOutput(graphs=graphs, graph_count=len(graphs), graph_break_count=len(compiled.break_reasons),
                             break_reasons=list(compiled.break_reasons), op_count=sum(len(o) for o in ops),
                             ops_per_graph=ops, out_guards=guards, recompile_reasons=recompile_reasons)

    if extra_args or extra_kwargs:  # the older explain(fn, *args) form
        return inner(*extra_args, **extra_kwargs)
    return inner
