"""Python state a capture must see change: grad mode and backward calls.

Note [Grad mode inside a capture]
An op's autograd kernel excludes the Autograd key while it redispatches, which
is exactly what no_grad does, so the Capture fallback cannot tell the two
apart. A grad-mode change inside a captured function (a no_grad/enable_grad
block, a custom autograd Function's forward) would replay under the call's
grad mode and build history eager never built, and a backward() inside would
record gradient formulas without the .grad accumulation. So while the
outermost capture of a thread runs, ``_C._set_grad_enabled`` and
``kiln.autograd.backward``/``grad`` are wrapped: a real change of grad mode or
a backward call marks the thread's innermost session broken (the call itself
still runs). Every kiln Python path that changes grad mode goes through
``_C._set_grad_enabled`` (grad_mode.py, autograd/function.py, nn).
"""

from __future__ import annotations

import contextlib

from kiln import _C, autograd
from kiln.compiler import _state


def _mark(reason: str):
    sessions = _state.active_sessions()
    if sessions:
        sessions[-1].mark_broken(reason)


@contextlib.contextmanager
def watching():
    """Wraps the watched functions for the duration of the outermost capture."""
    if len(_state.active_sessions()) > 1:
        yield
        return
    set_grad_enabled, backward, grad = _C._set_grad_enabled, autograd.backward, autograd.grad

    def watched_set_grad_enabled(mode):
        if bool(mode) != _C.is_grad_enabled():
            _mark(f"grad mode changed to {bool(mode)} inside the captured function (a no_grad/enable_grad block "
                  "or a custom autograd Function)")
        return set_grad_enabled(mode)

    def watched_backward(*args, **kwargs):
        _mark("backward() inside the captured function (whole training steps are not captured yet)")
        return backward(*args, **kwargs)

    def watched_grad(*args, **kwargs):
        _mark("autograd.grad() inside the captured function (whole training steps are not captured yet)")
        return grad(*args, **kwargs)

    _C._set_grad_enabled, autograd.backward, autograd.grad = watched_set_grad_enabled, watched_backward, watched_grad
    try:
        yield
    finally:
        _C._set_grad_enabled, autograd.backward, autograd.grad = set_grad_enabled, backward, grad
