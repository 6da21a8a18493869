"""The overhead of a cached compiled call (guard check + replay launch) on a 1-element function, kiln.compile
against torch.compile, in one run (issue 23's target: <= 3 us and <= 1/5 of torch.compile's):

    python bench/compile_cached_call.py [--rounds N] [--calls N]

`f(x) = x + 1.0` on a 1-element float32 tensor, 1 thread each side: without grad (under no_grad) and with
x requiring grad (kiln: the forward graph and one CompiledFunctionBackward node; torch: its AOT autograd
function). Eager calls of the same function are timed beside them. The sides are interleaved round by
round; each figure is the best round's time per call (the machine is shared), as wall clock and as this
process's CPU time.

Instructions per call (stable under load) come from callgrind with instrumentation switched on around the
timed loop only: a 3-line C library with CALLGRIND_START_INSTRUMENTATION / CALLGRIND_STOP_INSTRUMENTATION
(valgrind/callgrind.h) loaded through ctypes, and `valgrind --tool=callgrind --instr-atstart=no`.
"""

from __future__ import annotations

import argparse
import time


def _timed(fn, x, calls: int) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - w0) / calls, (time.process_time() - c0) / calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    import torch

    import kiln

    kiln.set_num_threads(1)
    torch.set_num_threads(1)
    f = lambda x: x + 1.0  # noqa: E731
    sides = {}
    for grad in (False, True):
        k = kiln.ones(1, requires_grad=grad)
        t = torch.ones(1, requires_grad=grad)
        kc = kiln.compile(lambda x: x + 1.0)
        tc = torch.compile(lambda x: x + 1.0)
        mode = "grad" if grad else "no grad"
        if grad:
            sides[f"kiln.compile, {mode}"] = (kc, k, None)
            sides[f"torch.compile, {mode}"] = (tc, t, None)
            sides[f"kiln eager, {mode}"] = (f, k, None)
            sides[f"torch eager, {mode}"] = (f, t, None)
        else:
            sides[f"kiln.compile, {mode}"] = (kc, k, kiln.no_grad)
            sides[f"torch.compile, {mode}"] = (tc, t, torch.no_grad)
            sides[f"kiln eager, {mode}"] = (f, k, kiln.no_grad)
            sides[f"torch eager, {mode}"] = (f, t, torch.no_grad)
    best = {name: (float("inf"), float("inf")) for name in sides}
    for name, (fn, x, ctx) in sides.items():  # capture/compile and warm up
        with ctx() if ctx else _Nothing():
            for _ in range(3):
                fn(x)
    for _ in range(args.rounds):
        for name, (fn, x, ctx) in sides.items():
            with ctx() if ctx else _Nothing():
                wall, cpu = _timed(fn, x, args.calls)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    print(f"cached call of x + 1.0 on 1 element, 1 thread, best of {args.rounds} rounds x {args.calls} calls")
    print("| side | wall us/call | CPU us/call |")
    print("|---|---|---|")
    for name, (wall, cpu) in best.items():
        print(f"| {name} | {wall * 1e6:.2f} | {cpu * 1e6:.2f} |")
    for mode in ("no grad", "grad"):
        k, t = best[f"kiln.compile, {mode}"], best[f"torch.compile, {mode}"]
        print(f"kiln.compile / torch.compile, {mode}: wall {k[0] / t[0]:.3f}, CPU {k[1] / t[1]:.3f}")
    return 0


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    raise SystemExit(main())
