"""The function ``nn.Module.compile`` calls: ``kiln.compile``, installed here by
kiln.compiler when it is imported.

Note [Module.compile's hook]
kiln.nn sits below kiln.compiler (kiln.compiler imports kiln.nn for
OptimizedModule and the module guards), so nn.Module.compile cannot import
kiln.compile. kiln/compiler/_api.py installs its ``compile`` here at import,
and kiln/__init__.py always imports kiln.compiler, so by the time user code
calls ``m.compile()`` the hook is set."""

from __future__ import annotations

from typing import Any, Callable

compile_function: Callable[..., Any] | None = None


def install(fn: Callable[..., Any]) -> None:
    global compile_function
    compile_function = fn


def compile(model, *args, **kwargs):
    if compile_function is None:
        raise RuntimeError("nn.Module.compile: kiln.compiler is not imported (import kiln)")
    return compile_function(model, *args, **kwargs)
