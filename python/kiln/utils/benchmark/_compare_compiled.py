"""compare_compiled: one function or model run eagerly and through kiln.compile,
side by side (issue 26): outputs checked to agree first, then time per call,
speedup over eager, compile latency (cold: the first call of a fresh compile,
which captures and JIT-compiles; cached: the second call, guards and replay),
peak memory and the fused-kernel count. Other sides (torch eager and
torch.compile twins) are passed in by the caller: kiln never imports torch."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from kiln import _C
from kiln._memory import memory_stats, reset_peak_memory_stats
from kiln._tensor import Tensor
from kiln.compiler._api import compile as kiln_compile
from kiln.compiler._backends import kernel_counts
from kiln.compiler._kernel_summary import KernelSummary, summarize_fused_kernels
from kiln.utils._pytree import tree_leaves
from kiln.utils.benchmark._measurement import Measurement, select_unit
from kiln.utils.benchmark._timer import Timer

# Each kiln mode: how the function runs. "eager" is the function itself; the others
# are kiln.compile backends ("interpreter" is backend "eager": capture, then replay
# op by op through the interpreter).
_KILN_MODES = {"eager": None, "default": "default", "interpreter": "eager"}


@dataclass
class ComparisonRow:
    """One side of a comparison. Times in seconds; None where it does not apply."""

    mode: str
    measurement: Measurement
    speedup: float                    # eager's median / this side's median
    cold_call: Optional[float] = None     # first call of a fresh kiln.compile (capture + compile + run)
    cached_call: Optional[float] = None   # second call (guard check + replay)
    peak_bytes: Optional[int] = None      # kiln allocator peak during the timed calls, above what was live before
    kernel_count: Optional[int] = None    # fused kernels of the compiled entry (None: none compiled)
    kernels: Optional[KernelSummary] = None  # each fused kernel's ops, bytes moved, time, fraction of copy bandwidth


@dataclass
class CompiledComparison:
    label: str
    rows: list

    def row(self, mode: str) -> ComparisonRow:
        return next(r for r in self.rows if r.mode == mode)

    def __str__(self) -> str:
        unit, scale = select_unit(min(r.measurement.median for r in self.rows))
        header = f"{'side':<16}{'median ' + unit:>12}{'speedup':>9}{'cold':>10}{'cached':>10}{'peak MB':>9}{'kernels':>8}"

        def seconds(value):
            return f"{value * 1e3:8.2f}ms" if value is not None else f"{'-':>10}"

        lines = [f"[ {self.label} ]", header]
        for r in self.rows:
            peak = f"{r.peak_bytes / 2**20:9.1f}" if r.peak_bytes is not None else f"{'-':>9}"
            kernels = f"{r.kernel_count:>8}" if r.kernel_count is not None else f"{'-':>8}"
            lines.append(f"{r.mode:<16}{r.measurement.median / scale:>12.2f}{r.speedup:>8.2f}x"
                         f"{seconds(r.cold_call)}{seconds(r.cached_call)}{peak}{kernels}")
        return "\n".join(lines)


def _flat_tensors(value) -> list:
    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, Tensor)]


def _check_agree(mode: str, got, want, rtol: float, atol: float) -> None:
    got_tensors, want_tensors = _flat_tensors(got), _flat_tensors(want)
    if len(got_tensors) != len(want_tensors):
        raise AssertionError(f"compare_compiled: {mode} returned {len(got_tensors)} tensors, eager {len(want_tensors)}")
    for i, (g, w) in enumerate(zip(got_tensors, want_tensors)):
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            raise AssertionError(f"compare_compiled: {mode} output {i} is {g.dtype} {tuple(g.shape)}, eager's "
                                 f"{w.dtype} {tuple(w.shape)}")
        if not g.detach().to(w.dtype).allclose(w.detach(), rtol=rtol, atol=atol, equal_nan=True):
            diff = (g.detach().double() - w.detach().double()).abs().max().item()
            raise AssertionError(f"compare_compiled: {mode} output {i} differs from eager's (max abs difference "
                                 f"{diff:.3g}, rtol={rtol}, atol={atol}): not timing a wrong result")


def _as_step(fn: Callable, train_step: bool) -> Callable:
    """The call to time: fn itself, or (train_step) fn, then backward of its output's sum, then the
    parameters' and inputs' grads cleared, so each call is one forward+backward step."""
    if not train_step:
        return fn

    def step(*args):
        out = fn(*args)
        _flat_tensors(out)[0].sum().backward()
        return out
    return step


def _clear_grads(fn, inputs) -> None:
    params = list(fn.parameters()) if hasattr(fn, "parameters") else []
    for t in params + [t for t in inputs if hasattr(t, "grad")]:
        t.grad = None


def compare_compiled(fn_or_model: Callable, *example_inputs, train_step: bool = False,
                     modes=("eager", "default"), others: Optional[dict] = None, label: Optional[str] = None,
                     min_run_time: float = 0.2, num_threads: Optional[int] = None,
                     rtol: float = 1e-5, atol: float = 1e-6) -> CompiledComparison:
    """Runs ``fn_or_model(*example_inputs)`` eagerly and through ``kiln.compile`` for each of ``modes``
    ("eager", "default", "interpreter"), checks every side's outputs agree with eager's (AssertionError
    naming the side otherwise), then times each with ``Timer.blocked_autorange``. ``train_step=True`` times
    forward + backward of the first output's sum. ``others`` maps a side's name to ``(fn, args)`` the caller
    made (torch eager, torch.compile): timed as given, not checked (their tensors are not kiln's)."""
    unknown = [m for m in modes if m not in _KILN_MODES]
    if unknown:
        raise ValueError(f"compare_compiled: unknown mode(s) {unknown}; kiln's modes are {sorted(_KILN_MODES)}")
    if "eager" not in modes:
        modes = ("eager", *modes)
    threads = num_threads if num_threads is not None else _C.get_num_threads()
    name = label or getattr(fn_or_model, "__name__", type(fn_or_model).__name__)
    inputs = list(example_inputs)

    sides = {}
    for mode in modes:
        backend = _KILN_MODES[mode]
        fn = fn_or_model if backend is None else kiln_compile(fn_or_model, backend=backend)
        sides[mode] = (fn, _as_step(fn, train_step))

    reference = sides["eager"][1](*inputs)
    _clear_grads(fn_or_model, inputs)
    rows = []
    for mode, (fn, step) in sides.items():
        cold = cached = None
        if mode != "eager":
            start = time.perf_counter()
            step(*inputs)
            cold = time.perf_counter() - start
            _clear_grads(fn_or_model, inputs)
            start = time.perf_counter()
            out = step(*inputs)
            cached = time.perf_counter() - start
            _clear_grads(fn_or_model, inputs)
            _check_agree(mode, out, reference, rtol, atol)
        timed = step if not train_step else (lambda *a, _s=step: (_s(*a), _clear_grads(fn_or_model, inputs)))
        reset_peak_memory_stats()
        live = memory_stats().get("allocated_bytes.all.current", 0)  # inputs and the outputs kept so far
        measurement = Timer("timed(*inputs)", globals={"timed": timed, "inputs": inputs}, label=name,
                            description=mode, num_threads=threads).blocked_autorange(min_run_time=min_run_time)
        peak = memory_stats().get("allocated_bytes.all.peak", live) - live
        counts = kernel_counts(fn) if mode != "eager" else []
        kernels = counts[0] if counts else None
        summary = None
        if kernels and not _C._profiler.is_active():  # inside kiln.profiler.profile the user's trace has them
            summary = summarize_fused_kernels(fn, lambda: timed(*inputs), repeat=3)
        rows.append(ComparisonRow(mode, measurement, 1.0, cold, cached, peak, kernels, summary))
    for side, (fn, args) in (others or {}).items():
        measurement = Timer("fn(*args)", globals={"fn": fn, "args": list(args)}, label=name, description=side,
                            num_threads=threads).blocked_autorange(min_run_time=min_run_time)
        rows.append(ComparisonRow(side, measurement, 1.0))
    eager_median = rows[0].measurement.median
    for r in rows:
        r.speedup = eager_median / r.measurement.median
    return CompiledComparison(name, rows)
