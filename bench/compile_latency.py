"""kiln.compile's compile latency through the kernel cache, and the memory plan's peak memory (issue 24,
items 4 and 5):

    python bench/compile_latency.py [--threads N] [--repeat N]

Compile latency of the seed MLP (784-128-10, batch 64) forward + cross_entropy + backward (the forward
compiled with joint capture; the backward graph compiled too), each phase in a fresh process:
- cold: an empty KILN_CACHE_DIR: capture, passes, LLVM (O3, code generation), entries written;
- warm: the same directory again: every kernel's object file loaded from disk;
- in memory: a second kiln.compile of the same model in that process: capture again, kernels from memory.
The latency is the first call's time minus a steady call's (both run the step once). Then the cost of a
cached call (guards + launch) on a 1-element tensor, compiled against eager.

Peak memory: a chain of pointwise kernels with a row reduction between each (every kernel's input dies
there), [2048, 2048] float32, peak allocated bytes above what was live before the call: eager, compiled
without the memory plan, with it (kernels write over their dead input), and mode="reduce-overhead" (the
arena, held between calls, counted separately).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def _seed_mlp():
    import kiln

    nn = kiln.nn
    kiln.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = kiln.from_numpy(rng.standard_normal((64, 784)).astype(np.float32))
    y = kiln.from_numpy(rng.integers(0, 10, 64).astype(np.int64))
    return model, loss_fn, x, y


def phase(repeat: int) -> dict:
    """One fresh process: the first compiled call, steady calls, then a second compile of the same model."""
    import kiln
    from kiln import _C
    from kiln.compiler import _compiled_function
    from kiln.compiler._backends import kernel_counts

    model, loss_fn, x, y = _seed_mlp()

    def step(fn):
        loss = fn(x, y)
        model.zero_grad()
        loss.backward()

    forward = lambda x, y: loss_fn(model(x), y)  # noqa: E731
    t0 = time.perf_counter()
    step(forward)  # eager once: the process's first matmul (BLAS start-up, ~100 ms) is not the compiler's
    eager_first = time.perf_counter() - t0
    backend_time = []
    use_backend = _compiled_function.use_backend

    def timed_use_backend(*args, **kwargs):
        t = time.perf_counter()
        use_backend(*args, **kwargs)
        backend_time.append(time.perf_counter() - t)

    _compiled_function.use_backend = timed_use_backend  # the graphs' compile: passes, kernel cache, LLVM
    _C._runtime.reset_kernel_cache_stats()
    compiled = kiln.compile(forward)
    t0 = time.perf_counter()
    step(compiled)
    first = time.perf_counter() - t0
    stats = _C._runtime.kernel_cache_stats()
    steady = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step(compiled)
        steady.append(time.perf_counter() - t0)
    first_backend = backend_time[0]
    again = kiln.compile(lambda x, y: loss_fn(model(x), y))
    _C._runtime.reset_kernel_cache_stats()
    t0 = time.perf_counter()
    step(again)
    second = time.perf_counter() - t0
    memory_stats = _C._runtime.kernel_cache_stats()
    return dict(first_ms=first * 1e3, steady_ms=statistics.median(steady) * 1e3, second_compile_ms=second * 1e3,
                eager_first_ms=eager_first * 1e3, backend_ms=first_backend * 1e3, second_backend_ms=backend_time[-1] * 1e3,
                kernels=kernel_counts(compiled), misses=stats["misses"], disk_hits=stats["disk_hits"],
                second_memory_hits=memory_stats["memory_hits"])


def call_overhead(repeat: int) -> dict:
    import kiln

    from kiln.compiler._backends import compiled_graphs

    x = kiln.ones(1)
    f = lambda x: x + 1.0  # noqa: E731
    compiled = kiln.compile(f)
    out = {}
    with kiln.no_grad():
        compiled(x)
        graph = compiled_graphs(compiled)[0]
        guards = compiled.guarded_entries[0].guards
        for name, fn in (("eager", f), ("compiled", compiled), ("runtime", lambda x: graph.run([x])),
                         ("guards", lambda x: guards.check((x,)))):
            samples = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                for _ in range(1000):
                    fn(x)
                samples.append((time.perf_counter() - t0) / 1000)
            out[name + "_us"] = min(samples) * 1e6  # the best of `repeat` loops: the machine is shared
    return out


def reduction_chain(x):
    for _ in range(6):
        x = (x * 1.5).sin()
        x = x - x.amax(dim=-1, keepdim=True)
    return x.exp()


def peak_memory() -> dict:
    import kiln
    from kiln import _C
    from kiln.compiler._backends import _entries

    x = kiln.from_numpy(np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32))
    with kiln.no_grad():
        planned = kiln.compile(reduction_chain)
        planned(x)
        graph = _entries(planned)[0].program.graph
        unplanned = _C._runtime.compile(graph, runs_without_autograd=True, plan_memory=False)
        arena = kiln.compile(reduction_chain, mode="reduce-overhead")
        arena(x)
        want = reduction_chain(x).numpy()
        sides = {"kiln eager": lambda: reduction_chain(x), "compiled, no memory plan": lambda: unplanned.run([x])[0],
                 "compiled, memory plan": lambda: planned(x), "compiled, reduce-overhead": lambda: arena(x)}
        out = {}
        for name, fn in sides.items():
            np.testing.assert_allclose(fn().numpy(), want, rtol=1e-5, atol=1e-5)
            kiln.reset_peak_memory_stats()
            base = kiln.memory_stats()["allocated_bytes.all.current"]
            before = kiln.memory_stats()["allocation.all.allocated"]
            result = fn()
            stats = kiln.memory_stats()
            out[name] = dict(peak_mib=(stats["allocated_bytes.all.peak"] - base) / 2**20,
                             allocations=stats["allocation.all.allocated"] - before)
            del result
        from kiln.compiler._backends import compiled_graphs

        out["reduce-overhead arena held between calls (MiB)"] = compiled_graphs(arena)[0].arena_bytes / 2**20
        out["plan"] = compiled_graphs(planned)[0].memory_plan.splitlines()[0]
    return out


def report(args, cache: str) -> None:
    env = dict(os.environ, KILN_CACHE_DIR=cache)
    runs = {}
    for name in ("cold (empty cache, fresh process)", "warm (disk cache, fresh process)"):
        out = subprocess.run([sys.executable, __file__, "--phase", "latency", "--threads", str(args.threads),
                              "--repeat", str(args.repeat)], env=env, capture_output=True, text=True, check=True)
        runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"seed MLP forward + cross_entropy + backward, {args.threads} threads")
    print("(each process ran the step eagerly once first: its first matmul, "
          f"{runs['cold (empty cache, fresh process)']['eager_first_ms']:.0f} ms, is BLAS start-up, not compilation)")
    print("| phase | first compiled call ms | steady call ms | compile latency ms (first - steady) | of which graph "
          "compile ms (passes, kernel cache, LLVM) | kernels (fwd+bwd) | compiled | from disk |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(f"| {name} | {r['first_ms']:.1f} | {r['steady_ms']:.2f} | {r['first_ms'] - r['steady_ms']:.1f} | "
              f"{r['backend_ms']:.1f} | {r['kernels']} | {r['misses']} | {r['disk_hits']} |")
    r = runs["warm (disk cache, fresh process)"]
    print(f"| in memory (second kiln.compile, same process) | {r['second_compile_ms']:.1f} | {r['steady_ms']:.2f} | "
          f"{r['second_compile_ms'] - r['steady_ms']:.1f} | {r['second_backend_ms']:.1f} | {r['kernels']} | 0 "
          f"({r['second_memory_hits']} memory hits) | 0 |")
    o = call_overhead(args.repeat)
    print(f"\ncached call of x + 1 on 1 element, best of {args.repeat} x 1000 calls: compiled {o['compiled_us']:.2f} us "
          f"(guard check {o['guards_us']:.2f} us; the CompiledGraph's run called from Python, kernel and output "
          f"allocation included, {o['runtime_us']:.2f} us), eager {o['eager_us']:.2f} us")
    print("\npeak memory: 6 x (sin kernel, amax, sub) on [2048, 2048] float32 (16 MiB each)")
    print("| side | peak above start MiB | allocations per call |")
    print("|---|---|---|")
    for name, v in peak_memory().items():
        if isinstance(v, dict):
            print(f"| {name} | {v['peak_mib']:.0f} | {v['allocations']} |")
        else:
            print(f"{name}: {v}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--phase", choices=["latency"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    import kiln

    kiln.set_num_threads(args.threads)
    if args.phase:
        print(json.dumps(phase(args.repeat)))
        return 0
    with tempfile.TemporaryDirectory(prefix="kiln-bench-cache-") as cache:
        os.environ["KILN_CACHE_DIR"] = cache  # this process too: nothing goes to ~/.cache/kiln
        report(args, cache)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
