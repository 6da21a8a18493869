"""kiln.compile's fused pointwise kernels against kiln eager on 16M float32,
with a plain copy's bandwidth measured in the same run (issue 24):

    python bench/compile_chain.py [--threads N] [--repeat N]

Two 8-op chains: one with sin/exp/tanh (compute-bound in eager), one of cheap
arithmetic (memory-bound: compare with the copy). Each function is timed
interleaved with the others, median of `repeat` samples. Bandwidth counts the
bytes a fused kernel must move (the input read once, the output written once).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kiln

N = 16 * 1024 * 1024


def transcendental_chain(x):
    return ((x * 2 + 1).sin().exp().tanh() - 0.5).relu().sqrt()


def cheap_chain(x):
    return (((x * 2 + 1) * 0.5 - 3).relu().neg() + 1).abs() * 0.25


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    kiln.set_num_threads(args.threads)
    x = kiln.from_numpy(np.random.default_rng(0).standard_normal(N).astype(np.float32))
    dst = kiln.empty(N)
    fns = {"copy (dst.copy_(x))": lambda: dst.copy_(x)}
    for name, chain in (("sin/exp/tanh chain", transcendental_chain), ("cheap chain", cheap_chain)):
        compiled = kiln.compile(chain)
        with kiln.no_grad():
            compiled(x)  # capture + compile
            t0 = time.perf_counter()
            compiled(x)
            first = time.perf_counter() - t0
        fns[f"{name}: kiln eager"] = lambda chain=chain: chain(x)
        fns[f"{name}: kiln compiled"] = lambda compiled=compiled: compiled(x)
        print(f"{name}: first replay {first * 1e3:.1f} ms")
    samples = {k: [] for k in fns}
    with kiln.no_grad():
        for fn in fns.values():
            fn()
        for _ in range(args.repeat):
            for k, fn in fns.items():
                t0 = time.perf_counter()
                fn()
                samples[k].append(time.perf_counter() - t0)
    bytes_moved = 2 * 4 * N
    copy_bw = bytes_moved / statistics.median(samples["copy (dst.copy_(x))"])
    print(f"16M float32, {args.threads} threads, median of {args.repeat}")
    print(f"| case | ms | GB/s (2 x 64 MiB) | / copy bw |")
    print("|---|---|---|---|")
    for k, s in samples.items():
        m = statistics.median(s)
        print(f"| {k} | {m * 1e3:.2f} | {bytes_moved / m / 1e9:.1f} | {bytes_moved / m / copy_bw:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
