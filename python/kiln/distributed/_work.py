"""Work: what an ``async_op=True`` collective returns; ``wait()`` blocks until
it finished and then copies results into tensors that were not contiguous."""

from __future__ import annotations

from kiln.futures import Future

__all__ = ["Work"]


class Work:
    """torch.distributed.Work over the C++ handle (kiln._C._distributed.Work).

    ``finish`` runs once, after the first successful wait: it copies a contiguous
    working buffer back into the caller's tensor(s)."""

    def __init__(self, work, finish=None, result=None) -> None:
        self._work = work
        self._finish = finish
        self._result = result if result is not None else []

    def wait(self, timeout=None) -> bool:
        self._work.wait()
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()
        return True

    def is_completed(self) -> bool:
        return self._work.is_completed() and self._finish is None

    def is_success(self) -> bool:
        return self.is_completed()

    def result(self) -> list:
        self.wait()
        return list(self._result)

    def get_future(self) -> Future:
        """A kiln.futures.Future of ``result()`` (the output tensors), completed when this Work is."""
        return Future(_waiter=self.result, _poll=self._communication_done)

    def _communication_done(self) -> bool:
        return self._work.is_completed()

    def _source_rank(self) -> int:
        return self._work._source_rank()

    def __repr__(self) -> str:
        return f"<kiln.distributed.Work completed={self._work.is_completed()}>"


class CompletedWork(Work):
    """Work that needed no communication (a process outside the group, a group of one)."""

    def __init__(self, result=None) -> None:
        self._finish = None
        self._result = result if result is not None else []

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def _communication_done(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "<kiln.distributed.Work completed=True>"
