"""kiln.compile and the kiln.compiler functions."""

from __future__ import annotations

import functools
import inspect

from kiln.compiler import _state
from kiln.compiler._compiled_function import CompiledFunction
from kiln.compiler._modes import check_mode
from kiln.compiler._module import OptimizedModule
from kiln.nn.modules import _compile_hook
from kiln.nn.modules.module import Module


def compile(model=None, *, fullgraph=False, dynamic=None, backend="default", mode=None, options=None,
            disable=False):
    """Captures ``model`` (a function, method or nn.Module) into an IR graph on
    its first call for each set of guards, and replays the graph on later calls
    with matching guards (as torch.compile; usable as ``@kiln.compile`` and
    ``@kiln.compile(...)``).

    Backends: ``"eager"`` replays the captured graph through the reference
    interpreter (each op through the dispatcher, autograd included, so
    gradients work). ``"default"`` is the same as ``"eager"`` for now: the
    fusing backend comes with the code generator.

    A graph break (a tensor value escaping to Python, ...) makes the function
    run eagerly for that guard set, with the reason kept
    (``kiln.compiler.explain``); ``fullgraph=True`` raises instead.
    ``dynamic=None`` specialises every size until a call differs from an earlier one in some tensor
    extents, then captures once more with those dimensions symbolic and reuses that graph for other
    extents; ``dynamic=True`` is symbolic in every dimension from the first capture; ``dynamic=False``
    specialises every shape (README.md, "Shapes that change").
    ``mode="reduce-overhead"`` (backend "default") lays the fused kernels' intermediate buffers out once
    in an arena kept by each compiled graph, so a replay allocates only the tensors it returns and the
    results of the ops left to eager. Compiled kernels are cached in memory and on disk under
    ``KILN_CACHE_DIR`` (default ``~/.cache/kiln``; empty turns the disk cache off).
    ``mode="max-autotune"`` (backend "default", CPU) times a few schedules of each fused kernel (vector
    width, unrolling, the split across threads) on the captured sizes when it compiles, and keeps the
    fastest; results are those of the default mode bit for bit. Another mode raises RuntimeError.
    ``disable=True`` returns ``model`` unchanged.
    """
    check_mode(mode)
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if disable:
        return model

    config = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options)
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model, module=model, **config))
    if not callable(model):
        raise RuntimeError(f"kiln.compile: expected a callable or an nn.Module, got {type(model).__name__}")
    owner = getattr(model, "__self__", None) if inspect.ismethod(model) else None
    compiled = CompiledFunction(model, module=owner if isinstance(owner, Module) else None, **config)
    return compiled


_compile_hook.install(compile)  # nn.Module.compile calls it: Note [Module.compile's hook]


def reset():
    """Forgets every captured graph of every compiled function (as torch.compiler.reset)."""
    for f in list(_state.compiled_functions):
        f.reset()


def is_compiling() -> bool:
    """True while kiln.compile is capturing on this thread."""
    return _state.is_compiling()


def disable(fn=None, recursive=True):
    """Marks ``fn`` as never compiled: kiln.compile(fn) runs it eagerly, and
    calling it while a compiled function is being captured is a graph break
    (the caller runs eagerly for that guard set)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)

    @functools.wraps(fn)
    def eager_only(*args, **kwargs):
        sessions = _state.active_sessions()
        if sessions:
            where = getattr(fn, "__qualname__", repr(fn))
            sessions[-1].mark_broken(f"called {where}, which is wrapped in kiln.compiler.disable")
        return fn(*args, **kwargs)

    eager_only._kiln_compile_disabled = True
    return eager_only
