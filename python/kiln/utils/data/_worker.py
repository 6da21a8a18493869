"""What runs in a DataLoader worker process: get_worker_info, the fetchers and
the worker loop (torch.utils.data._utils.worker's contract).

A worker takes ``(task_id, indices)`` from its index queue, fetches and collates
the batch, and puts ``(task_id, batch)`` on the shared data queue; a batch's
tensors cross through shared memory (kiln.multiprocessing). An exception becomes
an ExceptionWrapper that the main process re-raises with the worker's traceback.
An IterableDataset worker that runs out says so with ``_IterableDatasetStopIteration``.
The loop ends on ``None`` from the index queue, or when the main process is gone.
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

from kiln import _C
from kiln import multiprocessing as kiln_multiprocessing  # noqa: F401  (registers the tensor reducers)
from kiln import random as kiln_random

MP_STATUS_CHECK_INTERVAL = 5.0  # seconds between checks that the other side is still alive

_worker_info: "WorkerInfo | None" = None


@dataclass(frozen=True)
class WorkerInfo:
    """The worker this code runs in: ``id`` of ``num_workers``, its ``seed`` and its copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker, its WorkerInfo (to shard an IterableDataset); None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception of a worker, with its traceback as text, to re-raise in the main process."""

    def __init__(self, exc_info, where: str) -> None:
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = KeyErrorMessage(message)
        try:
            error = self.exc_type(message)
        except Exception:
            raise RuntimeError(message) from None
        raise error


class KeyErrorMessage(str):
    """KeyError's str() quotes its argument; this keeps the traceback readable."""

    def __repr__(self) -> str:
        return self


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at a new epoch: restart the dataset's iterator."""


class _MapFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, indices):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            samples = getitems(indices) if callable(getitems) else [self.dataset[i] for i in indices]
            return self.collate_fn(samples)
        return self.collate_fn(self.dataset[indices])


class _IterableFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, batch_size):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        batch = []
        for sample in self.iterator:
            batch.append(sample)
            if len(batch) == batch_size:
                break
        if len(batch) < batch_size:
            self.ended = True
        if not batch or (self.drop_last and len(batch) < batch_size):
            raise StopIteration
        return self.collate_fn(batch)


def _make_fetcher(dataset, iterable: bool, auto_collation: bool, collate_fn, drop_last: bool):
    if iterable:
        return _IterableFetcher(dataset, auto_collation, collate_fn, drop_last)
    return _MapFetcher(dataset, auto_collation, collate_fn)


def worker_loop(dataset, iterable: bool, index_queue, data_queue, done_event, auto_collation: bool, collate_fn,
                drop_last: bool, base_seed: int, init_fn, worker_id: int, num_workers: int, parent_pid: int) -> None:
    """The body of worker process ``worker_id``."""
    global _worker_info
    try:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
        seed = base_seed + worker_id
        random.seed(seed)
        kiln_random.manual_seed(seed)
        _C.set_num_threads(1)
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _make_fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
        exhausted = False
        while True:
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid or done_event.is_set():
                    break
                continue
            if task is None:
                break
            if isinstance(task, _ResumeIteration):
                exhausted = False
                try:
                    fetcher = _make_fetcher(dataset, iterable, auto_collation, collate_fn, drop_last)
                except Exception:
                    init_error = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
                data_queue.put((task, None))
                continue
            if done_event.is_set() or exhausted:
                continue
            task_id, indices = task
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(indices)
                except StopIteration:
                    if not iterable:
                        raise
                    exhausted = True
                    data = _IterableDatasetStopIteration(worker_id)
                except Exception:
                    data = ExceptionWrapper(sys.exc_info(), f"in DataLoader worker process {worker_id}")
            data_queue.put((task_id, data))
            del data
    except KeyboardInterrupt:
        pass
