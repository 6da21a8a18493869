"""kiln.futures: torch.futures' Future, the result of an asynchronous operation
(kiln.distributed's ``Work.get_future()``, DDP communication hooks).

A Future is completed by ``set_result``/``set_exception``, or is bound to a
waiter (a function that blocks until the operation finished and returns its
value, as ``Work.get_future()`` makes). Callbacks chained with ``then`` and
``add_done_callback`` run when the Future completes; for a bound Future that is
when it is first waited on, on the waiting thread (kiln has no completion thread
in Python). A DDP comm hook's
future is waited on by the backward's final callback, so a hook's ``then``
chain runs there, after the collective, as torch's does on its own thread.
"""

from __future__ import annotations

import threading

__all__ = ["Future", "collect_all", "wait_all"]

_PENDING = object()


class Future:
    """torch.futures.Future: ``wait()``/``value()`` the result, ``then(callback)`` a new Future of
    ``callback(this_future)``, ``done()``, ``set_result``/``set_exception``, ``add_done_callback``."""

    def __init__(self, *, devices=None, _waiter=None, _poll=None) -> None:
        self._lock = threading.RLock()
        self._value = _PENDING
        self._exception: BaseException | None = None
        self._waiter = _waiter  # () -> value, blocking; None for a Future completed by set_result
        self._poll = _poll  # () -> whether the waiter would return at once (the operation finished)
        self._ready = None if _waiter is not None else threading.Event()
        self._callbacks: list = []

    # --- completion -----------------------------------------------------------------
    def done(self) -> bool:
        """Whether the value (or an error) is in; a bound Future whose operation finished counts."""
        if self._completed():
            return True
        poll = self._poll
        return poll is not None and self._waiter is not None and poll()

    def _completed(self) -> bool:
        with self._lock:
            return self._value is not _PENDING or self._exception is not None

    def set_result(self, result) -> None:
        with self._lock:
            if self._completed():
                raise RuntimeError("Future can only be marked completed once.")
            self._value = result
        self._complete()

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception takes an exception, got {type(result).__name__}")
        with self._lock:
            if self._completed():
                raise RuntimeError("Future can only be marked completed once.")
            self._exception = result
        self._complete()

    def _complete(self) -> None:
        if self._ready is not None:
            self._ready.set()
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def _resolve(self) -> None:
        """A bound Future runs its waiter once (the first caller to wait)."""
        with self._lock:
            if self._completed():
                return
            waiter, self._waiter = self._waiter, None
            if waiter is None:  # completed by set_result, from another thread
                ready = self._ready
            else:
                try:
                    self._value = waiter()
                except BaseException as e:  # noqa: BLE001  (kept, and raised by wait/value)
                    self._exception = e
                ready = None
        if ready is not None:
            ready.wait()
            return
        self._complete()

    # --- reading ----------------------------------------------------------------------
    def wait(self):
        """Blocks until the Future completed; its value (raises its error)."""
        self._resolve()
        return self.value()

    def value(self):
        """The value of a completed Future (raises its error); waits for a bound one."""
        if self._waiter is not None:
            self._resolve()
        if self._exception is not None:
            raise self._exception
        if self._value is _PENDING:
            raise RuntimeError("Future.value() called on a Future that has not completed; call wait() first")
        return self._value

    # --- chaining ---------------------------------------------------------------------
    def then(self, callback) -> Future:
        """A Future of ``callback(self)``, run once this one completed; an error the callback raises
        (reading this Future's error included) becomes the new Future's RuntimeError, as torch's."""
        def run():
            try:
                return callback(self._waited())
            except Exception as e:  # noqa: BLE001  (torch's wrapping, for the new Future)
                raise RuntimeError(f"Got the following error when running the callback: {type(e).__name__}: "
                                   f"{e}") from e
        return Future(_waiter=run)

    def _waited(self) -> Future:
        self._resolve()
        return self

    def add_done_callback(self, callback) -> None:
        """``callback(self)`` once this Future completed (now, if it already has)."""
        with self._lock:
            if not self._completed():
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self) -> str:
        return f"<kiln.futures.Future done={self._completed()}>"


def collect_all(futures: list) -> Future:
    """A Future of the list of ``futures``, completed once they all completed."""
    futures = list(futures)
    return Future(_waiter=lambda: [f._waited() for f in futures])


def wait_all(futures: list) -> list:
    """Waits for every future; their values (raises the first error)."""
    return [f.wait() for f in futures]
