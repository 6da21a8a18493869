"""Compile latency of the seed MLP's WHOLE training step (784-128-10, batch 64: forward, cross_entropy,
zero_grad, backward, Adam step in one graph; issue 24's targets: cold <= 300 ms, warm from the disk
cache <= 30 ms, in-memory hit (guards + launch) <= 3 us):

    python bench/compile_step_latency.py [--threads N] [--repeat N]

Each phase in a fresh process, KILN_CACHE_DIR a fresh temporary directory:
- cold: the cache empty; warm: the same directory again (every kernel loaded from disk);
- in memory: a second kiln.compile of the same step in the warm process (kernels from memory).
A compiled training step's first call runs eagerly and observes (which optimizers, which leaves), its
second captures and compiles: the compile latency is the second call's time minus a steady call's.
Also split out: the graph compile alone (passes, kernel cache, LLVM: `use_backend`), and per cached
call (best of --repeat x 200 calls, wall clock and this thread's CPU time) the whole call, the
CompiledGraph's run alone on the same inputs, and what a hit costs besides the graph's run (guards,
the optimizer state read, the copy-back checks, the .grad assignment: the call with a runner that
hands back one run's outputs).
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


def _seed_mlp_step(kiln):
    nn = kiln.nn
    kiln.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = kiln.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(0)
    x = kiln.from_numpy(rng.standard_normal((64, 784)).astype(np.float32))
    y = kiln.from_numpy(rng.integers(0, 10, 64).astype(np.int64))

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step, x, y


def _best(fn, repeat: int, calls: int = 200) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(calls):
            fn()
        cpu.append((time.thread_time() - c0) / calls)
        wall.append((time.perf_counter() - t0) / calls)
    return min(wall), min(cpu)


def phase(repeat: int) -> dict:
    import kiln
    from kiln import _C
    from kiln.compiler import _compiled_function
    from kiln.compiler._backends import kernel_counts

    step, x, y = _seed_mlp_step(kiln)
    step(x, y)  # eager once: the process's first matmul (BLAS start-up) is not the compiler's
    backend_time = []
    use_backend = _compiled_function.use_backend

    def timed_use_backend(*args, **kwargs):
        t = time.perf_counter()
        use_backend(*args, **kwargs)
        backend_time.append(time.perf_counter() - t)

    _compiled_function.use_backend = timed_use_backend
    _C._runtime.reset_kernel_cache_stats()
    compiled = kiln.compile(step)
    compiled(x, y)  # observes
    t0, c0 = time.perf_counter(), time.thread_time()
    compiled(x, y)  # captures and compiles
    first, first_cpu = time.perf_counter() - t0, time.thread_time() - c0
    stats = _C._runtime.kernel_cache_stats()
    steady, steady_cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.thread_time()
        compiled(x, y)
        steady.append(time.perf_counter() - t0)
        steady_cpu.append(time.thread_time() - c0)
    out = dict(first_ms=first * 1e3, steady_ms=statistics.median(steady) * 1e3, first_cpu_ms=first_cpu * 1e3,
               steady_cpu_ms=statistics.median(steady_cpu) * 1e3, backend_ms=backend_time[0] * 1e3,
               kernels=kernel_counts(compiled), misses=stats["misses"], disk_hits=stats["disk_hits"])
    # A cached call against its CompiledGraph's run alone (same inputs, as the program builds them).
    (entry,) = [e for e in compiled.cache.values() if hasattr(e, "program")]
    program = entry.program
    inner = program.inner
    captured = {}
    runner = inner.runner

    def keep_inputs(graph, inputs):
        captured["inputs"] = list(inputs)
        captured["outputs"] = runner(graph, inputs)
        return captured["outputs"]

    inner.runner = keep_inputs
    compiled(x, y)
    graph_inputs, graph_outputs = captured["inputs"], captured["outputs"]
    graph = inner.compiled
    out["call_us"], out["call_cpu_us"] = (v * 1e6 for v in _best(lambda: compiled(x, y), repeat))
    with kiln.no_grad():
        out["graph_us"], out["graph_cpu_us"] = (v * 1e6 for v in _best(lambda: graph.run(graph_inputs), repeat))
    # Everything a hit does but the graph's run: the runner hands back the outputs of one run.
    inner.runner = lambda graph, inputs: graph_outputs
    out["hit_us"], out["hit_cpu_us"] = (v * 1e6 for v in _best(lambda: compiled(x, y), repeat, calls=2000))
    inner.runner = runner
    # A second kiln.compile of the same step: capture again, every kernel from memory.
    again = kiln.compile(step)
    again(x, y)
    backend_time.clear()
    _C._runtime.reset_kernel_cache_stats()
    t0, c0 = time.perf_counter(), time.thread_time()
    again(x, y)
    out["second_compile_ms"] = (time.perf_counter() - t0) * 1e3
    out["second_compile_cpu_ms"] = (time.thread_time() - c0) * 1e3
    out["second_backend_ms"] = backend_time[0] * 1e3
    out["second_memory_hits"] = _C._runtime.kernel_cache_stats()["memory_hits"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--phase", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        import kiln

        kiln.set_num_threads(args.threads)
        print(json.dumps(phase(args.repeat)))
        return 0
    runs = {}
    with tempfile.TemporaryDirectory(prefix="kiln-bench-cache-") as cache:
        env = dict(os.environ, KILN_CACHE_DIR=cache)
        for name in ("cold (empty cache)", "warm (disk cache)"):
            out = subprocess.run([sys.executable, __file__, "--phase", "--threads", str(args.threads), "--repeat",
                                  str(args.repeat)], env=env, capture_output=True, text=True, check=True)
            runs[name] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"seed MLP whole training step (Adam), {args.threads} thread(s), each phase a fresh process")
    print("| phase | capture call ms | steady call ms | compile latency ms | same in CPU ms (this thread) | "
          "of which graph compile ms | kernels | compiled | from disk |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        print(f"| {name} | {r['first_ms']:.1f} | {r['steady_ms']:.2f} | {r['first_ms'] - r['steady_ms']:.1f} | "
              f"{r['first_cpu_ms'] - r['steady_cpu_ms']:.1f} | {r['backend_ms']:.1f} | {r['kernels']} | "
              f"{r['misses']} | {r['disk_hits']} |")
    r = runs["warm (disk cache)"]
    print(f"| in memory (second kiln.compile) | {r['second_compile_ms']:.1f} | {r['steady_ms']:.2f} | "
          f"{r['second_compile_ms'] - r['steady_ms']:.1f} | {r['second_compile_cpu_ms'] - r['steady_cpu_ms']:.1f} | "
          f"{r['second_backend_ms']:.1f} | {r['kernels']} | 0 | 0 ({r['second_memory_hits']} memory hits) |")
    print(f"\ncached call, best of {args.repeat} x 200: whole call {r['call_us']:.1f} us wall / {r['call_cpu_us']:.1f} us "
          f"CPU; the CompiledGraph's run alone {r['graph_us']:.1f} / {r['graph_cpu_us']:.1f}; the hit without the "
          f"graph's run (guards, state read, copy-back checks, .grad assignment; best of {args.repeat} x 2000) "
          f"{r['hit_us']:.2f} us wall / {r['hit_cpu_us']:.2f} us CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
