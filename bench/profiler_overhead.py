"""What kiln.profiler costs per eager op when it is off, and what it costs when it records (issue 26).

    python bench/profiler_overhead.py [--repeats 15] [--calls 20000]

Times a tiny op (``x + y`` on one-element tensors: dispatch overhead dominates) in one process:
- "never profiled": before any session, so the Profiler key still resolves to a fallthrough, exactly as
  before kiln.profiler existed;
- "off after a session": the Profiler fallback registered, the key off (Note [The profiler key costs
  nothing when off], eager/dispatch/ProfilerFallback.h);
- "recording": inside kiln.profiler.profile (for scale).
Each is the median of ``repeats`` blocks of ``calls`` calls, in microseconds per call. Run it under another
checkout's interpreter (``/work/main/.venv/bin/python bench/profiler_overhead.py``) to time the same op
without the profiler's code at all; that run prints only the first line.
"""

from __future__ import annotations

import argparse
import statistics
import time

import kiln


def per_call_us(fn, calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    kiln.set_num_threads(1)
    x, y = kiln.ones(1), kiln.ones(1)
    op = lambda: x + y  # noqa: E731
    per_call_us(op, args.calls, 2)  # warm up
    print(f"never profiled:      {per_call_us(op, args.calls, args.repeats):.3f} us/op")
    profiler = getattr(kiln, "profiler", None)
    if profiler is None:
        return
    with profiler.profile():
        op()
    off = per_call_us(op, args.calls, args.repeats)
    with profiler.profile():
        recording = per_call_us(op, args.calls // 10, args.repeats)
    print(f"off after a session: {off:.3f} us/op")
    print(f"recording:           {recording:.3f} us/op")


if __name__ == "__main__":
    main()
