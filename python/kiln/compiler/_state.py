"""Process state of the compiler: the capture sessions active on this thread
and every compiled function (so ``reset()`` can clear their caches)."""

from __future__ import annotations

import threading
import weakref

from kiln import _C

_local = threading.local()
thread_local = _local  # CompiledFunction._miss reads its "sessions" directly (is_compiling, inlined)
# Every CompiledFunction made so far; reset() clears their caches.
compiled_functions: "weakref.WeakSet" = weakref.WeakSet()


def active_sessions() -> list:
    """The capture sessions of this thread, innermost last."""
    stack = getattr(_local, "sessions", None)
    if stack is None:
        stack = _local.sessions = []
        _C._capture._set_session_stack(stack)  # the C++ hit path skips calls while it is non-empty
    return stack


def is_compiling() -> bool:
    """True while kiln.compile is capturing a function on this thread (as torch.compiler.is_compiling)."""
    return bool(getattr(_local, "sessions", None))
