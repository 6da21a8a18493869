"""kiln's all_reduce against Gloo's own benchmark (issue 29): 2 processes on loopback, float32 SUM,
the same sizes, the same algorithm (Gloo's ring allreduce through gloo::allreduce, which
eager/distributed/ProcessGroupGloo calls), the same library (Debian's libgloo), in one run.

Gloo's benchmark is `gloo_benchmark new_allreduce_ring` (gloo/benchmark/main.cc). Debian ships
no binary and no source package here, so bench/gloo_benchmark/build.sh compiles it from Gloo's
own sources at the commit Debian packages (0.0~git20220518.5b14351) against Debian's headers and
libgloo.so: the benchmark runs the very library kiln links. kiln's side is the Python-level call a
training script makes, ``dist.all_reduce(t)`` (argument checks, the queue to the group's worker
thread, Gloo, the wait), timed per call with the same statistics Gloo's runner reports (p50 over
the iterations after a warm-up). Sizes alternate between the two, repeat after repeat, so load
from other jobs hits both alike; ``--realtime`` runs both under SCHED_RR (see
bench/distributed_scaling.py's Note [A quiet measurement on a loaded machine]).

``python bench/distributed_allreduce_vs_gloo.py --gloo-benchmark build/gloo_benchmark [--realtime]``
prints a markdown table (kiln p50, Gloo p50, the ratio of kiln's bandwidth to Gloo's) and writes
JSON with --out.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20]


def _raise_communication_threads() -> None:
    if os.sched_getscheduler(0) != os.SCHED_RR:
        return
    me = threading.get_native_id()
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != me:
            os.sched_setscheduler(int(tid), os.SCHED_RR, os.sched_param(2))


def _kiln_worker(rank: int, port: int, sizes: list, iterations: int, results) -> None:
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    import kiln
    import kiln.distributed as dist
    kiln.set_num_threads(1)
    dist.init_process_group("gloo")
    _raise_communication_threads()
    out = {}
    for size in sizes:
        t = kiln.ones(size // 4)
        for _ in range(5):
            dist.all_reduce(t)
        dist.barrier()
        times = []
        for _ in range(iterations):
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - start)
        times.sort()
        out[size] = {"min_us": times[0] * 1e6, "p50_us": times[len(times) // 2] * 1e6,
                     "p99_us": times[min(len(times) - 1, int(len(times) * 0.99))] * 1e6}
    dist.destroy_process_group()
    results.put((rank, out))


def kiln_times(sizes: list, iterations: int) -> dict:
    """{size: {min_us, p50_us, p99_us}} of rank 0, 2 processes."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    procs = [context.Process(target=_kiln_worker, args=(r, port, sizes, iterations, results)) for r in range(2)]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return got[0]


def gloo_times(binary: str, size: int, iterations: int) -> dict:
    """Gloo's benchmark for one size on 2 processes: rank 0's {min_us, p50_us, p99_us} as it prints them."""
    with tempfile.TemporaryDirectory() as rendezvous:
        common = ["--size", "2", "--shared-path", rendezvous, "--prefix", "kiln", "--transport", "tcp",
                  "--tcp-device", "lo", "--elements", str(size // 4), "--iteration-count", str(iterations),
                  "new_allreduce_ring"]
        procs = [subprocess.Popen([binary, "--rank", str(r)] + common, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for r in range(2)]
        outputs = [p.communicate(timeout=300)[0] for p in procs]
    for p, text in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"gloo_benchmark failed ({p.returncode}):\n{text}")
    # The results table: size (B), elements, min, p50, p99, max (us), bandwidth (GB/s), iterations.
    for line in outputs[0].splitlines():
        fields = line.split()
        if len(fields) == 8 and fields[0] == str(size):
            return {"min_us": float(fields[2]), "p50_us": float(fields[3]), "p99_us": float(fields[4]),
                    "bandwidth_GBps_printed": float(fields[6])}
    raise RuntimeError(f"no result row for {size} bytes in gloo_benchmark's output:\n{outputs[0]}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gloo-benchmark", default=os.environ.get("KILN_GLOO_BENCHMARK", "build/gloo_benchmark"))
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--realtime", action="store_true", help="SCHED_RR for both (root/CAP_SYS_NICE)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if not Path(args.gloo_benchmark).is_file():
        print(f"no Gloo benchmark at {args.gloo_benchmark}: build it with bench/gloo_benchmark/build.sh",
              file=sys.stderr)
        return 2
    if args.realtime:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    load_before = os.getloadavg()
    runs = {"kiln": {size: [] for size in SIZES}, "gloo": {size: [] for size in SIZES}}
    for _ in range(args.repeats):
        kiln_run = kiln_times(SIZES, args.iterations)
        for size in SIZES:
            runs["kiln"][size].append(kiln_run[size]["p50_us"])
            runs["gloo"][size].append(gloo_times(args.gloo_benchmark, size, args.iterations)["p50_us"])
    load_after = os.getloadavg()
    print(f"| size | kiln all_reduce p50 | Gloo's benchmark p50 | kiln GB/s | Gloo GB/s | kiln / Gloo bandwidth |\n"
          f"|---|---|---|---|---|---|")
    table = {}
    for size in SIZES:
        k, g = statistics.median(runs["kiln"][size]), statistics.median(runs["gloo"][size])
        table[size] = {"kiln_p50_us": k, "gloo_p50_us": g, "ratio": g / k, "kiln_runs_us": runs["kiln"][size],
                       "gloo_runs_us": runs["gloo"][size]}
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        print(f"| {label} | {k:.0f} us | {g:.0f} us | {size / k / 1e3:.2f} | {size / g / 1e3:.2f} | {g / k:.2f} |")
    print(f"(median p50 of {args.repeats} alternating repeats of {args.iterations} calls; bandwidth = bytes / p50; "
          f"{'SCHED_RR' if args.realtime else 'ordinary scheduling'}; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after, on {os.cpu_count()} CPUs)")
    if args.out:
        Path(args.out).write_text(json.dumps({"realtime": args.realtime, "load": [load_before, load_after],
                                              "sizes": {str(s): v for s, v in table.items()}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
