"""kiln.compile's mode="max-autotune" against the default mode (issue 24):

    python bench/compile_autotune.py [--threads N] [--repeat N] [--small]

Cases: a pointwise chain with sin/exp/tanh over 16M floats, a layer_norm-like row kernel over
[8192, 768] (mean, variance, rsqrt, weight, bias written out), and a broadcast bias add + gelu
over [4096, 1024]. Per case: the first call's wall time in a fresh process with an empty kernel
cache (capture + passes + LLVM compiles, and for max-autotune the timings) for each mode, the
schedule max-autotune chose per kernel, then both modes' calls timed interleaved in one process
(the fastest of `repeat` samples: the shared machine's load swings medians), their ratio, and
whether the results are equal bit for bit (they must be: Note [Kernel schedules]).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import kiln
import kiln.nn.functional as KF
from kiln.compiler._backends import compiled_graphs


def chain(x):
    return ((x * 2 + 1).sin().exp().tanh() - 0.5).relu().sqrt()


def norm_rows(x, w, b):
    m = x.mean(dim=-1, keepdim=True)
    c = x - m
    return c * (c * c).mean(dim=-1, keepdim=True).add(1e-5).rsqrt() * w + b


def bias_gelu(x, b):
    return KF.gelu(x + b)


CASES = {
    "sin/exp/tanh chain [16M]": (chain, [(16 * 1024 * 1024,)]),
    "layer_norm rows [8192, 768]": (norm_rows, [(8192, 768), (768,), (768,)]),
    "bias add + gelu [4096, 1024]": (bias_gelu, [(4096, 1024), (1024,)]),
}
SMALL = {  # --small: the same cases at sizes a loaded 2-core machine times quickly
    "sin/exp/tanh chain [16M]": [(1024 * 1024,)],
    "layer_norm rows [8192, 768]": [(1024, 768), (768,), (768,)],
    "bias add + gelu [4096, 1024]": [(512, 1024), (1024,)],
}


def inputs_of(shapes):
    rng = np.random.default_rng(0)
    return [kiln.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]


def first_call(case, mode, small):
    """In this (fresh) process: the first call's wall time and the chosen schedules."""
    fn, shapes = CASES[case]
    args = inputs_of(SMALL[case] if small else shapes)
    compiled = kiln.compile(fn, mode=mode)
    with kiln.no_grad():
        start = time.perf_counter()
        compiled(*args)
        took = time.perf_counter() - start
    schedules = [s for g in compiled_graphs(compiled) for s in g.kernel_schedules]
    return {"first_call_s": took, "schedules": schedules}


def fresh_process_first_call(case, mode, small, threads):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KILN_CACHE_DIR=cache)
        cmd = [sys.executable, __file__, "--one", case, "--mode", mode or "default", "--threads", str(threads)]
        out = subprocess.run(cmd + (["--small"] if small else []), env=env, check=True, capture_output=True, text=True)
        return json.loads(out.stdout.strip().splitlines()[-1])


def interleaved(case, repeat, small):
    fn, shapes = CASES[case]
    args = inputs_of(SMALL[case] if small else shapes)
    sides = {"default": kiln.compile(fn), "max-autotune": kiln.compile(fn, mode="max-autotune")}
    best = {k: float("inf") for k in sides}
    results = {}
    with kiln.no_grad():
        for name, f in sides.items():
            results[name] = f(*args).numpy().tobytes()  # capture + compile (+ tuning)
        for _ in range(repeat):
            for name, f in sides.items():
                start = time.perf_counter()
                f(*args)
                best[name] = min(best[name], time.perf_counter() - start)
    schedules = [s for g in compiled_graphs(sides["max-autotune"]) for s in g.kernel_schedules]
    return best, results["default"] == results["max-autotune"], schedules


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--small", action="store_true")
    p.add_argument("--one")
    p.add_argument("--mode")
    a = p.parse_args()
    kiln.set_num_threads(a.threads)
    if a.one:
        print(json.dumps(first_call(a.one, None if a.mode == "default" else a.mode, a.small)))
        return
    print(f"threads {a.threads}, best of {a.repeat}{', small sizes' if a.small else ''}")
    print("| case | first call default (s) | first call max-autotune (s) | added (s) | schedules chosen | "
          "default (ms) | max-autotune (ms) | max-autotune/default | bit-equal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for case in CASES:
        cold_default = fresh_process_first_call(case, None, a.small, a.threads)
        cold_tuned = fresh_process_first_call(case, "max-autotune", a.small, a.threads)
        best, equal, schedules = interleaved(case, a.repeat, a.small)
        print(f"| {case} | {cold_default['first_call_s']:.3f} | {cold_tuned['first_call_s']:.3f} | "
              f"{cold_tuned['first_call_s'] - cold_default['first_call_s']:+.3f} | "
              f"{'; '.join(schedules)} (fresh process: {'; '.join(cold_tuned['schedules'])}) | {best['default'] * 1e3:.2f} | "
              f"{best['max-autotune'] * 1e3:.2f} | {best['max-autotune'] / best['default']:.3f} | {equal} |", flush=True)


if __name__ == "__main__":
    main()
