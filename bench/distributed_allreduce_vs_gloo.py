"""kiln's all_reduce against Gloo as torch runs it and against Gloo's own benchmark (issue 29):
2 processes on loopback (or a group of one: --world-size 1), float32 SUM, the same sizes, the
same algorithm (Gloo's ring allreduce through gloo::allreduce, which
eager/distributed/ProcessGroupGloo calls), in one run.

- kiln: the Python-level call a training script makes, ``dist.all_reduce(t)`` (argument checks,
  ProcessGroupGloo, Gloo, the wait; a blocking call on an idle group runs on the caller's thread,
  Note [Blocking calls on an idle group]).
- torch: the same script line on ``torch.distributed`` with backend "gloo" (torch==2.13.0, the
  tests' oracle; its ProcessGroupGloo hands every collective to a worker thread).
- Gloo: ``gloo_benchmark new_allreduce_ring`` (gloo/benchmark/main.cc), compiled by
  bench/gloo_benchmark/build.sh from Gloo's sources at the commit Debian packages against Debian's
  libgloo (the very library kiln links); left out when build/gloo_benchmark is not there.
- kiln-base (with ``--baseline-python``): kiln as another checkout builds it (its .venv's
  interpreter), for before/after figures taken under the same load.

Each side reports the p50 of the per-call wall times (Gloo's runner's statistic) and the CPU time
per call: the process's CPU time (every thread: the caller, any worker thread, Gloo's transport
loop) over the timed calls of rank 0, divided by their number. On a loaded machine the wall
times stretch with other jobs' load; CPU time stretches much less and is the figure to compare
(for Gloo's binary it is rank 0's rusage of a long run minus a short one, over the extra calls).
Sides alternate, repeat after repeat, so load hits them alike; ``--realtime`` runs them under
SCHED_RR (bench/distributed_scaling.py's Note [A quiet measurement on a loaded machine]).

``python bench/distributed_allreduce_vs_gloo.py [--gloo-benchmark build/gloo_benchmark] [--realtime]
[--iterations N] [--repeats R] [--sizes B,B,...] [--world-size 1|2] [--baseline-python ../main/.venv/bin/python]
[--out results.json]`` prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SIZES = [256, 4 << 10, 64 << 10, 1 << 20, 16 << 20]
SIDES = ("kiln", "kiln-base", "torch", "gloo")


def _raise_communication_threads() -> None:
    if os.sched_getscheduler(0) != os.SCHED_RR:
        return
    me = threading.get_native_id()
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != me:
            os.sched_setscheduler(int(tid), os.SCHED_RR, os.sched_param(2))


def _framework(name: str):
    """(module, its distributed module) for "kiln" (and "kiln-base") or "torch"."""
    if name.startswith("kiln"):
        import kiln
        import kiln.distributed as dist
        return kiln, dist
    import torch
    import torch.distributed as dist
    return torch, dist


def _python_worker(side: str, rank: int, world: int, port: int, sizes: list, iterations: int, results) -> None:
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(port)})
    lib, dist = _framework(side)
    lib.set_num_threads(1)
    dist.init_process_group("gloo")
    _raise_communication_threads()
    out = {}
    for size in sizes:
        t = lib.ones(size // 4)
        for _ in range(5):
            dist.all_reduce(t)
        dist.barrier()
        times = []
        cpu_start = time.process_time()
        for _ in range(iterations):
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu_start
        times.sort()
        out[size] = {"p50_us": times[len(times) // 2] * 1e6, "cpu_us": cpu / iterations * 1e6}
    dist.destroy_process_group()
    results.put((rank, out))


def python_times(side: str, sizes: list, iterations: int, python: str = sys.executable, world: int = 2) -> dict:
    """{size: {p50_us, cpu_us}} of rank 0 of ``world`` processes (run by ``python``) running ``side``'s
    all_reduce."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    context.set_executable(python)
    results = context.Queue()
    procs = [context.Process(target=_python_worker, args=(side, r, world, port, sizes, iterations, results))
             for r in range(world)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=900) for _ in procs)
    for p in procs:
        p.join()
    return got[0]


def _gloo_run(binary: str, size: int, iterations: int) -> tuple[dict, float]:
    """Gloo's benchmark for one size on 2 processes: rank 0's printed row and its CPU seconds."""
    with tempfile.TemporaryDirectory() as rendezvous:
        common = ["--size", "2", "--shared-path", rendezvous, "--prefix", "kiln", "--transport", "tcp",
                  "--tcp-device", "lo", "--elements", str(size // 4), "--iteration-count", str(iterations),
                  "new_allreduce_ring"]
        procs = [subprocess.Popen([binary, "--rank", str(r)] + common, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for r in range(2)]
        outputs = [p.stdout.read() for p in procs]
        usage = [os.wait4(p.pid, 0) for p in procs]
        for p, (_, status, _) in zip(procs, usage):
            p.returncode = os.waitstatus_to_exitcode(status)
    for p, text in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"gloo_benchmark failed ({p.returncode}):\n{text}")
    cpu = usage[0][2].ru_utime + usage[0][2].ru_stime
    # The results table: size (B), elements, min, p50, p99, max (us), bandwidth (GB/s), iterations.
    for line in outputs[0].splitlines():
        fields = line.split()
        if len(fields) == 8 and fields[0] == str(size):
            return {"p50_us": float(fields[3])}, cpu
    raise RuntimeError(f"no result row for {size} bytes in gloo_benchmark's output:\n{outputs[0]}")


def gloo_times(binary: str, sizes: list, iterations: int) -> dict:
    """{size: {p50_us, cpu_us}}: the long run's p50; CPU per call from a long and a short run."""
    out = {}
    for size in sizes:
        row, cpu_long = _gloo_run(binary, size, iterations)
        _, cpu_short = _gloo_run(binary, size, max(1, iterations // 10))
        extra = iterations - max(1, iterations // 10)
        out[size] = {"p50_us": row["p50_us"], "cpu_us": max(0.0, cpu_long - cpu_short) / extra * 1e6}
    return out


def _label(size: int) -> str:
    if size >= 1 << 20:
        return f"{size >> 20} MiB"
    return f"{size >> 10} KiB" if size >= 1 << 10 else f"{size} B"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gloo-benchmark", default=os.environ.get("KILN_GLOO_BENCHMARK", "build/gloo_benchmark"))
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=None, help="comma-separated byte counts (default: 256 B .. 16 MiB)")
    parser.add_argument("--realtime", action="store_true", help="SCHED_RR for every side (root/CAP_SYS_NICE)")
    parser.add_argument("--world-size", type=int, default=2, choices=(1, 2),
                        help="1: a group of one process, where all_reduce moves nothing: the framework's own "
                             "cost per call (Gloo's benchmark needs 2 and is left out)")
    parser.add_argument("--baseline-python", default=None,
                        help="another checkout's .venv/bin/python: a kiln-base column, alternating with kiln "
                             "(before/after comparisons on one loaded machine)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else SIZES
    sides = [s for s in SIDES if (s != "gloo" or (Path(args.gloo_benchmark).is_file() and args.world_size == 2))
             and (s != "kiln-base" or args.baseline_python)]
    if "gloo" not in sides and args.world_size == 2:
        print(f"(no Gloo benchmark at {args.gloo_benchmark}: its column is left out; build it with "
              f"bench/gloo_benchmark/build.sh)", file=sys.stderr)
    if args.realtime:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    load_before = os.getloadavg()
    runs = {side: {size: [] for size in sizes} for side in sides}
    for _ in range(args.repeats):
        for side in sides:
            if side == "gloo":
                got = gloo_times(args.gloo_benchmark, sizes, args.iterations)
            else:
                python = args.baseline_python if side == "kiln-base" else sys.executable
                got = python_times(side, sizes, args.iterations, python, args.world_size)
            for size in sizes:
                runs[side][size].append(got[size])
    load_after = os.getloadavg()
    header = " | ".join(f"{side} p50 | {side} CPU" for side in sides)
    print(f"| size | {header} | kiln / torch CPU | kiln / torch p50 |")
    print("|---" * (3 + 2 * len(sides)) + "|")
    table = {}
    for size in sizes:
        row = {side: {key: statistics.median(r[key] for r in runs[side][size]) for key in ("p50_us", "cpu_us")}
               for side in sides}
        row["runs"] = {side: runs[side][size] for side in sides}
        table[size] = row
        cells = " | ".join(f"{row[side]['p50_us']:.0f} us | {row[side]['cpu_us']:.1f} us" for side in sides)
        print(f"| {_label(size)} | {cells} | {row['kiln']['cpu_us'] / row['torch']['cpu_us']:.2f} | "
              f"{row['kiln']['p50_us'] / row['torch']['p50_us']:.2f} |")
    print(f"(medians of {args.repeats} alternating repeats of {args.iterations} calls per size; p50: per-call wall "
          f"time; CPU: rank 0's process CPU time per call, every thread; "
          f"{'SCHED_RR' if args.realtime else 'ordinary scheduling'}; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after, on {os.cpu_count()} CPUs)")
    if args.out:
        Path(args.out).write_text(json.dumps({"realtime": args.realtime, "load": [load_before, load_after],
                                              "sizes": {str(s): v for s, v in table.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
