"""Python state a capture must see change: grad mode and backward calls.

Note [Grad mode inside a capture]
An op's autograd kernel excludes the Autograd key while it redispatches, which
is exactly what no_grad does, so the Capture fallback cannot tell the two
apart. A grad-mode change inside a captured function (a no_grad/enable_grad
block, a custom autograd Function's forward) would replay under the call's
grad mode and build history eager never built. So while the outermost
capture of a thread runs, ``_C._set_grad_enabled`` and
``kiln.autograd.backward``/``grad`` are wrapped: a real change of grad mode
marks the thread's innermost session broken (the call itself still runs),
except inside a training step, which replays with grad mode off as a whole;
a backward call, and an optimizer's step() (through
kiln.optim._capturable.capture_hook), go to the capture's
_training.StepCapture (Note [Capturing a training step]): the first one
observes, a prepared capture records them. Every kiln Python path that
changes grad mode goes through ``_C._set_grad_enabled`` (grad_mode.py,
autograd/function.py, nn).
"""

from __future__ import annotations

import contextlib

from kiln import _C, autograd
from kiln.compiler import _state
from kiln.optim import _capturable


def _mark(reason: str):
    sessions = _state.active_sessions()
    if sessions:
        sessions[-1].mark_broken(reason)


@contextlib.contextmanager
def watching(step=None):
    """Wraps the watched functions for the duration of the outermost capture. ``step`` (a
    _training.StepCapture) decides what a backward call, an optimizer step and a grad-mode change do in
    a training step (Note [Capturing a training step]); without one they break the capture."""
    if len(_state.active_sessions()) > 1:
        yield
        return
    set_grad_enabled, backward, grad = _C._set_grad_enabled, autograd.backward, autograd.grad
    hook = _capturable.capture_hook

    def watched_set_grad_enabled(mode):
        if bool(mode) != _C.is_grad_enabled():
            reason = (f"grad mode changed to {bool(mode)} inside the captured function (a no_grad/enable_grad "
                      "block or a custom autograd Function)")
            if step is None or not step.on_grad_mode_change(reason):
                _mark(reason)
        return set_grad_enabled(mode)

    def watched(call, what, *args, **kwargs):
        if step is None:
            _mark(f"{what} inside the captured function")
        elif _state.active_sessions():
            step.on_backward(what)
            step.backward_sizes(True)
            try:
                return call(*args, **kwargs)
            finally:
                step.backward_sizes(False)
        return call(*args, **kwargs)

    def watched_backward(*args, **kwargs):
        return watched(backward, "backward()", *args, **kwargs)

    def watched_grad(*args, **kwargs):
        return watched(grad, "autograd.grad()", *args, **kwargs)

    def optimizer_hook(optimizer, capturable):
        if step is None or not _state.active_sessions():
            return None
        return step.on_optimizer_step(optimizer, capturable)

    _C._set_grad_enabled, autograd.backward, autograd.grad = watched_set_grad_enabled, watched_backward, watched_grad
    _capturable.capture_hook = optimizer_hook
    try:
        yield
    finally:
        _C._set_grad_enabled, autograd.backward, autograd.grad = set_grad_enabled, backward, grad
        _capturable.capture_hook = hook
