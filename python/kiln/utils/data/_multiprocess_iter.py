"""The DataLoader iterator with worker processes (num_workers > 0), after torch's
_MultiProcessingDataLoaderIter.

Note [Worker tasks and their order]
-----------------------------------
The main process numbers each batch's indices (a task), hands tasks to the
workers round-robin, and keeps ``prefetch_factor * num_workers`` tasks in
flight. Results come back on one queue in any order; each is kept until every
earlier task has been returned, so batches come out in the sampler's order
(``in_order=False`` returns them as they arrive). An IterableDataset worker that
runs out is retired and its pending tasks skipped. A worker's exception is
re-raised here with its traceback. Without a ``timeout`` the main process waits
in short slices, checking that no worker died; with one, a batch that takes
longer is a RuntimeError. Shutting down (end of epoch, error, Ctrl-C, the
iterator dropped) stops every worker, drains what they sent (so their shared
memory is released) and terminates any that do not stop: no orphan processes.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue
import time

from kiln import _C
from kiln import multiprocessing as kiln_multiprocessing  # noqa: F401  (registers the tensor reducers)
from kiln.utils.data._worker import (
    ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration, worker_loop,
)

_STATUS_CHECK_INTERVAL = 0.5  # seconds between checks that the workers are alive
_SHUTDOWN_TIMEOUT = 5.0


def _context(multiprocessing_context):
    if multiprocessing_context is None:
        return multiprocessing.get_context()
    if isinstance(multiprocessing_context, str):
        return multiprocessing.get_context(multiprocessing_context)
    return multiprocessing_context


class MultiProcessIterator:
    """Iterates a DataLoader's batches, made by worker processes (Note [Worker tasks and their order])."""

    def __init__(self, loader) -> None:
        self._loader = loader
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._persistent = loader.persistent_workers
        self._shutdown = False
        context = _context(loader.multiprocessing_context)
        self._done_event = context.Event()
        self._data_queue = context.Queue()
        base_seed = int(_C._functions.empty((), dtype=_C.int64).random_(generator=loader.generator).item())
        self._index_queues = []
        self._workers = []
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()
            worker = context.Process(
                target=worker_loop, daemon=True,
                args=(loader.dataset, loader._iterable, index_queue, self._data_queue, self._done_event,
                      loader._auto_collation, loader.collate_fn, loader.drop_last, base_seed, loader.worker_init_fn,
                      worker_id, self._num_workers, os.getpid()))
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._reset(first_epoch=True)

    # --- epochs ---
    def _reset(self, first_epoch: bool = False) -> None:
        self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_epoch:  # persistent workers restart their dataset's iterator
            for index_queue in self._index_queues:
                index_queue.put(_ResumeIteration())
            resumed = 0
            while resumed < self._num_workers:
                task_id, _ = self._get_data()
                if isinstance(task_id, _ResumeIteration):
                    resumed += 1
        for _ in range(self._prefetch):
            self._try_put_index()

    def _next_index(self):
        index = next(self._sampler_iter)
        if self._loader._iterable:
            return len(index) if self._loader._auto_collation else None
        return index

    def _try_put_index(self) -> None:
        if self._tasks_outstanding >= self._prefetch:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    # --- batches ---
    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        try:
            return self._next_data()
        except StopIteration:
            if not self._persistent:
                self.shutdown()
            raise
        except BaseException:
            self.shutdown()
            raise

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            task_id, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._retire(data.worker_id)
                self._try_put_index()
                continue
            if task_id == self._rcvd_idx or not self._in_order:
                self._task_info.pop(task_id, None)
                if task_id == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process(data)
            self._task_info[task_id] += (data,)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _retire(self, worker_id: int) -> None:
        self._workers_status[worker_id] = False
        if not self._persistent:
            self._index_queues[worker_id].put(None)

    def _get_data(self):
        if self._timeout > 0:
            try:
                return self._data_queue.get(timeout=self._timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        while True:
            try:
                return self._data_queue.get(timeout=_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                dead = [w for w, active in zip(self._workers, self._workers_status) if active and not w.is_alive()]
                if dead:
                    pids = ", ".join(str(w.pid) for w in dead)
                    codes = ", ".join(str(w.exitcode) for w in dead)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code(s) "
                                       f"{codes})") from None

    # --- shutdown ---
    def _drain(self) -> None:
        while True:
            try:
                self._data_queue.get(timeout=0.01)
            except (queue.Empty, OSError, EOFError, ValueError):
                return
            except Exception:  # a half-written message of a killed worker: drop it
                continue

    def shutdown(self) -> None:
        """Stops the workers (drains what they sent, terminates stragglers)."""
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for index_queue in self._index_queues:
            try:
                index_queue.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + _SHUTDOWN_TIMEOUT
        while any(w.is_alive() for w in self._workers) and time.monotonic() < deadline:
            self._drain()
            for worker in self._workers:
                worker.join(timeout=0.05)
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()
                worker.join(timeout=1.0)
        self._drain()
        for q in (*self._index_queues, self._data_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        try:
            self.shutdown()
        except Exception:
            pass
