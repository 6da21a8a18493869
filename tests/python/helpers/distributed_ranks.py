"""Running a function on several kiln.distributed ranks, one process each, on loopback.

``run_ranks(fn, world_size, *args)`` starts ``world_size`` spawned processes running
``fn(rank, world_size, *args)`` with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT on a free port) and returns their results in rank order. Every wait is bounded:
a rank that raises fails the call with its traceback, and one that has not finished when
``timeout`` passes is killed and named, so a hang fails fast instead of stalling the suite.
``fn`` must be importable by name in a fresh interpreter (helpers/distributed_workers.py),
and must not import torch: each process imports only kiln, to keep start-up short.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import socket
import time
import traceback

__all__ = ["free_port", "run_ranks"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(fn, rank: int, world_size: int, port: int, results, args) -> None:
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world_size),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"})
    try:
        results.put((rank, True, fn(rank, world_size, *args)))
    except BaseException:  # noqa: BLE001  (any failure goes back to the test, with its traceback)
        results.put((rank, False, traceback.format_exc()))


def run_ranks(fn, world_size: int, *args, timeout: float = 45.0, expect_exit: dict | None = None) -> list:
    """``fn(rank, world_size, *args)`` on each rank; the results, by rank.

    ``expect_exit`` maps ranks that are meant to exit without a result (os._exit) to their exit code."""
    expect_exit = expect_exit or {}
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = free_port()
    processes = [context.Process(target=_entry, args=(fn, r, world_size, port, results, args), daemon=True)
                 for r in range(world_size)]
    for p in processes:
        p.start()
    deadline = time.monotonic() + timeout
    got: dict[int, object] = {}
    failures: list[str] = []
    try:
        while len(got) + len(failures) < world_size - len(expect_exit):
            try:
                rank, ok, value = results.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() > deadline:
                    missing = [r for r in range(world_size) if r not in got and r not in expect_exit]
                    raise AssertionError(f"ranks {missing} did not finish within {timeout} s (hung?)") from None
                dead = [r for r, p in enumerate(processes) if p.exitcode not in (None, 0) and r not in expect_exit
                        and r not in got]
                if dead and results.empty():
                    time.sleep(0.2)
                    if results.empty():
                        raise AssertionError(f"rank(s) {dead} died with exit codes "
                                             f"{[processes[r].exitcode for r in dead]} and no result")
                continue
            if ok:
                got[rank] = value
            else:
                failures.append(f"rank {rank} raised:\n{value}")
        if failures:
            raise AssertionError("\n".join(failures))
        for r, code in expect_exit.items():
            processes[r].join(timeout=max(0.1, deadline - time.monotonic()))
            assert processes[r].exitcode == code, f"rank {r} exited with {processes[r].exitcode}, expected {code}"
        return [got.get(r) for r in range(world_size)]
    finally:
        for p in processes:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
