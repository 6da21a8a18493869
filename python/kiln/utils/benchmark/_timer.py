"""Timer: runs a statement in a namespace and times it in blocks, with torch.utils.benchmark's
rules (Note [Block size]). Standard library and kiln._C only."""

from __future__ import annotations

import contextlib
import textwrap
import time
from typing import Callable, Optional

from kiln import _C
from kiln.utils.benchmark._measurement import Measurement, TaskSpec, quantile

# Note [Block size]
# A block runs the statement `number` times between two timer reads, so the timer's own cost is
# paid once per block. The block size starts at 1 and grows tenfold until one block's time dwarfs
# the timer overhead (overhead / block time <= 1e-4 and block time >= min_run_time / 1000), or
# a single block already exceeds min_run_time. Blocks are then timed until their total reaches
# min_run_time (blocked_autorange) or until IQR / median falls below a threshold
# (adaptive_autorange, bounded by max_run_time).
_BLOCK_ESTIMATE_RUN_TIME = 0.05
_MAX_RELATIVE_OVERHEAD = 1e-4
# The block size stops growing here, so a timer too coarse to see any block cannot loop forever.
_MAX_BLOCK_SIZE = 2**31 - 1


@contextlib.contextmanager
def _intra_op_threads(num_threads: int):
    previous = _C.get_num_threads()
    _C.set_num_threads(num_threads)
    try:
        yield
    finally:
        _C.set_num_threads(previous)


class Timer:
    def __init__(self, stmt: str = "pass", setup: str = "pass", globals: Optional[dict] = None,
                 label: Optional[str] = None, sub_label: Optional[str] = None,
                 description: Optional[str] = None, num_threads: int = 1,
                 timer: Callable[[], float] = time.perf_counter):
        if not isinstance(stmt, str) or not isinstance(setup, str):
            raise ValueError("Timer: stmt and setup must be strings")
        self._stmt = textwrap.dedent(stmt).strip() or "pass"
        self._setup = textwrap.dedent(setup).strip() or "pass"
        self._globals = dict(globals or {})
        self._timer = timer
        self._task_spec = TaskSpec(stmt=self._stmt, setup=self._setup, label=label, sub_label=sub_label,
                                   description=description, num_threads=num_threads)
        source = ("def _kiln_benchmark_inner(_number, _timer):\n"
                  + textwrap.indent(self._setup, "    ") + "\n"
                  "    _start = _timer()\n"
                  "    for _ in range(_number):\n"
                  + textwrap.indent(self._stmt, "        ") + "\n"
                  "    return _timer() - _start\n")
        namespace = self._globals
        exec(compile(source, "<kiln.utils.benchmark>", "exec"), namespace)
        self._inner = namespace.pop("_kiln_benchmark_inner")

    def _timeit(self, number: int) -> float:
        return max(self._inner(number, self._timer), 0.0)

    def _measurement(self, number: int, raw_times: list[float]) -> Measurement:
        return Measurement(number_per_run=number, raw_times=raw_times, task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` calls after a warm-up of max(number // 100, 2) calls."""
        with _intra_op_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return self._measurement(number, [self._timeit(number)])

    def _estimate_block_size(self, min_run_time: float) -> int:
        overhead = quantile(sorted(self._timeit(0) for _ in range(5)), 0.5)
        number = 1
        while True:
            block_time = self._timeit(number)
            if block_time > 0:
                if (overhead / block_time <= _MAX_RELATIVE_OVERHEAD
                        and block_time >= min_run_time / 1000):
                    return number
                if block_time > min_run_time:
                    return number
            if number * 10 > _MAX_BLOCK_SIZE:
                return number
            number *= 10

    def _measurement_loop(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
                          max_run_time: Optional[float], callback) -> list[float]:
        total, times = 0.0, []
        while True:
            block_time = self._timeit(number)
            total += block_time
            times.append(block_time)
            if callback is not None:
                callback(number, block_time)
            if total >= min_run_time and stop(times):
                return times
            if max_run_time is not None and total > max_run_time:
                return times

    def blocked_autorange(self, callback: Optional[Callable[[int, float], None]] = None,
                          min_run_time: float = 0.2) -> Measurement:
        with _intra_op_threads(self._task_spec.num_threads):
            number = self._estimate_block_size(_BLOCK_ESTIMATE_RUN_TIME)
            times = self._measurement_loop(number, lambda times: True, min_run_time, None, callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Optional[Callable[[int, float], None]] = None) -> Measurement:
        def confident(times: list[float]) -> bool:
            return len(times) > 3 and self._measurement(number, list(times)).meets_confidence(threshold)

        with _intra_op_threads(self._task_spec.num_threads):
            number = self._estimate_block_size(_BLOCK_ESTIMATE_RUN_TIME)
            times = self._measurement_loop(number, confident, min_run_time, max_run_time, callback)
        return self._measurement(number, times)
