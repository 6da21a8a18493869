"""kiln.compiler.kernel_summary: the fused kernels of a compiled function as its user sees them: the ops in
each kernel, the bytes it moves per call, its time per call and that rate as a fraction of this machine's
measured copy bandwidth (the bound a bandwidth-bound kernel can approach). The times come from kiln's
profiler recorder (``kiln._C._profiler``), whose fused-kernel events runtime/CompiledGraph reports
(Note [What the profiler records], eager/core/ProfilerEvents.h)."""

from __future__ import annotations

import dataclasses
import time

from kiln import _C
from kiln.compiler._api import compile as kiln_compile
from kiln.compiler._backends import compiled_graphs

_copy_bandwidth_gbps: float | None = None
_COPY_BYTES = 64 << 20  # 64 MiB per side: larger than the last-level caches of the machines kiln runs on


def copy_bandwidth_gbps() -> float:
    """This machine's copy rate in GB/s (bytes read plus bytes written per second; the best of a few copies of
    a 64 MiB float32 buffer), measured once per process. On a shared machine it drifts from run to run, and a
    kernel whose data stays in cache can exceed it: the fraction it gives is an estimate."""
    global _copy_bandwidth_gbps
    if _copy_bandwidth_gbps is None:
        n = _COPY_BYTES // 4
        src = _C._functions.ones(n)
        dst = _C._functions.ones(n)  # written once, so the timed copies fault in no pages
        best = float("inf")
        for _ in range(10):
            start = time.perf_counter()
            dst.copy_(src)
            best = min(best, time.perf_counter() - start)
        _copy_bandwidth_gbps = 2 * _COPY_BYTES / best / 1e9
    return _copy_bandwidth_gbps


@dataclasses.dataclass
class FusedKernelInfo:
    """One fused kernel: its profiler name (``cpp_fused_<ops>_<index>``), JIT symbol, member ops, and per call
    the elements computed, bytes moved (inputs read plus outputs written) and mean time."""

    name: str
    kernel: str
    ops: list
    calls: int
    numel: int
    bytes_moved: int
    time_us: float
    achieved_gbps: float
    fraction_of_copy_bandwidth: float


@dataclasses.dataclass
class KernelSummary:
    """``kernel_summary``'s result: every fused kernel that ran, and the copy bandwidth it is compared with."""

    kernels: list
    copy_bandwidth_gbps: float
    graph_count: int
    eager_ops: list  # per compiled graph, the ops left to eager kernels

    def __str__(self) -> str:
        header = (f"{'kernel':<40} {'ops':>4} {'numel':>10} {'bytes/call':>12} {'time/call':>11} "
                  f"{'GB/s':>8} {'of copy':>8}")
        lines = [f"Fused kernels: {len(self.kernels)} in {self.graph_count} compiled graph(s); "
                 f"copy bandwidth {self.copy_bandwidth_gbps:.1f} GB/s", header, "-" * len(header)]
        for k in self.kernels:
            lines.append(f"{k.name[:40]:<40} {len(k.ops):>4} {k.numel:>10} {k.bytes_moved:>12} "
                         f"{k.time_us:>9.2f}us {k.achieved_gbps:>8.2f} {k.fraction_of_copy_bandwidth:>7.1%}")
            lines.append(f"    {', '.join(k.ops)}")
        return "\n".join(lines)


def _fused_kernel_events(raw) -> list:
    """(name, args, duration in ns) of each fused-kernel range among the recorder's events."""
    return [(name, args, end - start) for kind, name, category, start, end, _, _, args, _ in raw
            if kind == 0 and category == "fused_kernel" and end >= 0]


def summarize_fused_kernels(compiled, run, repeat: int = 10) -> KernelSummary:
    """The summary of ``compiled``'s (a kiln.compile result's) fused kernels over ``repeat`` calls of ``run()``
    (a call of it, already compiled: compare_compiled passes a forward+backward step)."""
    if _C._profiler.is_active():
        raise RuntimeError("kernel_summary cannot run inside kiln.profiler.profile (one recorder at a time)")
    _C._profiler.start()
    try:
        for _ in range(repeat):
            run()
    finally:
        raw = _C._profiler.stop()
    bandwidth = copy_bandwidth_gbps()
    by_kernel: dict = {}
    for name, args_of, duration in _fused_kernel_events(raw):
        entry = by_kernel.setdefault((name, args_of.get("kernel", "")), [args_of, 0, 0])
        entry[1] += 1
        entry[2] += duration
    kernels = []
    for (name, symbol), (args_of, calls, total_ns) in by_kernel.items():
        time_us = total_ns / calls / 1e3
        moved = int(args_of.get("bytes moved", 0))
        rate = moved / (time_us * 1e3) if time_us > 0 else 0.0  # bytes per ns = GB/s
        kernels.append(FusedKernelInfo(name=name, kernel=symbol, ops=args_of.get("ops", "").split(", "),
                                       calls=calls, numel=int(args_of.get("numel", 0)), bytes_moved=moved,
                                       time_us=time_us, achieved_gbps=rate,
                                       fraction_of_copy_bandwidth=rate / bandwidth))
    graphs = compiled_graphs(compiled)
    return KernelSummary(kernels=kernels, copy_bandwidth_gbps=bandwidth, graph_count=len(graphs),
                         eager_ops=[list(g.eager_ops) for g in graphs])


def kernel_summary(fn, *extra_args, repeat: int = 10, **extra_kwargs):
    """``kernel_summary(fn)(*args, **kwargs)``: runs ``fn`` (a ``kiln.compile`` result; a plain function or
    module is compiled first) once to compile, then ``repeat`` times under the recorder, and summarises each
    fused kernel that ran. ``kernel_summary(fn, *args)`` is the same call in one step."""

    def inner(*args, **kwargs):
        compiled = fn
        if not hasattr(getattr(fn, "_compiled_call", fn), "cache"):
            compiled = kiln_compile(fn)
        compiled(*args, **kwargs)
        return summarize_fused_kernels(compiled, lambda: compiled(*args, **kwargs), repeat)

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
