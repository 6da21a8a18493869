"""Runs one workload in every column: builds each column's step, times its first call (cold: a
compiled column captures and compiles there) and its second (cached), checks the first call's
output against kiln eager's, then times the columns interleaved — each round runs one block of
every column, in an order rotated every round, so a load spike on the shared machine lands on
all columns alike — and keeps per-block times as kiln.utils.benchmark Measurements (median, IQR).

A column that fails does not stop the run: its cell says why (an error, a graph break — timed,
since the function then runs eagerly — or a result that disagrees, which is not timed)."""

from __future__ import annotations

import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from kiln._memory import memory_stats, reset_peak_memory_stats
from kiln.bench._columns import BASELINE, Column
from kiln.compiler._backends import kernel_counts
from kiln.utils.benchmark import Measurement, TaskSpec


@dataclass
class Cell:
    column: str
    status: str                       # ok, graph_break, mismatch, error, skipped, unavailable
    note: str = ""
    measurement: Optional[Measurement] = None
    first_call: Optional[float] = None    # seconds; a compiled column's cold call
    second_call: Optional[float] = None   # a compiled column's cached call
    kernel_count: Optional[int] = None    # kiln compiled: fused kernels of its captured graphs
    peak_bytes: Optional[int] = None      # kiln columns: allocator peak of one call above what was live
    max_abs_diff: Optional[float] = None  # first call's output against kiln eager's
    break_reasons: list = field(default_factory=list)
    losses: list = field(default_factory=list)

    @property
    def timed(self) -> bool:
        return self.measurement is not None


@dataclass
class WorkloadResult:
    name: str
    title: str
    shape: str
    number_per_sample: int
    cells: dict                       # column key -> Cell

    def speedup(self, key: str) -> Optional[float]:
        base, cell = self.cells.get(BASELINE), self.cells.get(key)
        if base is None or cell is None or not base.timed or not cell.timed:
            return None
        return base.measurement.median / cell.measurement.median


@dataclass(frozen=True)
class RunOptions:
    quick: bool
    reps: int
    block_seconds: float       # a block of calls lasts at least this long (calibrated on kiln eager)
    threads: int


def _error_note(error: BaseException) -> str:
    return f"{type(error).__name__}: {_first_line(error)}"[:200]


def _first_line(text) -> str:
    lines = str(text).strip().splitlines()
    return lines[0] if lines else ""


def _as_numpy(value) -> np.ndarray:
    if isinstance(value, (tuple, list)):
        value = value[0]
    return np.array(value.detach().numpy(), copy=True)


def _kiln_breaks(compiled) -> list:
    target = getattr(compiled, "_compiled_call", compiled)
    return list(getattr(target, "break_reasons", []))


def _kiln_kernels(compiled) -> Optional[int]:
    counts = [c for c in kernel_counts(compiled) if c is not None]
    return sum(counts) if counts else None


def _torch_break_counter(lib) -> dict:
    try:
        from torch._dynamo.utils import counters  # torch's graph-break tally; only when torch.compile runs
    except ImportError:
        return {}
    return dict(counters.get("graph_break", {}))


@dataclass
class _Prepared:
    column: Column
    cell: Cell
    step: object = None
    reference: Optional[np.ndarray] = None
    losses: Optional[list] = None     # the step's loss tensors (kept when the step stops being timed)


def _prepare(workload, column: Column, lib, compile_fn, quick: bool) -> _Prepared:
    cell = Cell(column.key, "ok")
    prepared = _Prepared(column, cell)
    torch_breaks = _torch_break_counter(lib) if column.library == "torch" and column.compiled else None
    try:
        step = workload.build(lib, compile_fn, quick)
        with warnings.catch_warnings():  # a graph break's warning: the cell says it
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            first = step.call()
            cell.first_call = time.perf_counter() - start
        prepared.reference = _as_numpy(first)
        start = time.perf_counter()
        step.call()
        cell.second_call = time.perf_counter() - start
        if column.library == "kiln":
            reset_peak_memory_stats()
            live = memory_stats().get("allocated_bytes.all.current", 0)
            step.call()
            cell.peak_bytes = memory_stats().get("allocated_bytes.all.peak", live) - live
        else:
            step.call()  # every column makes the same number of calls (the loss curves line up)
    except Exception as error:  # a column that cannot run is a cell of the report, not a crash
        cell.status, cell.note = "error", _error_note(error)
        cell.break_reasons = traceback.format_exception_only(type(error), error)[-1:]
        return prepared
    prepared.step, prepared.losses = step, step.losses
    if column.library == "kiln" and column.compiled and step.compiled is not None:
        cell.break_reasons = _kiln_breaks(step.compiled)
        cell.kernel_count = _kiln_kernels(step.compiled)
    elif torch_breaks is not None:
        after = _torch_break_counter(lib)
        cell.break_reasons = [_first_line(reason) for reason, n in after.items() if n > torch_breaks.get(reason, 0)]
    if cell.break_reasons:
        cell.status = "graph_break"
        cell.note = f"graph break, runs eagerly: {cell.break_reasons[0]}"
    return prepared


def _check_agreement(workload, prepared: list) -> None:
    base = next((p for p in prepared if p.column.key == BASELINE and p.reference is not None), None)
    if base is None:
        return
    for p in prepared:
        if p is base or p.reference is None:
            continue
        got, want = p.reference, base.reference
        if got.shape != want.shape:
            p.cell.status, p.cell.note = "mismatch", f"output shape {got.shape}, kiln eager's {want.shape}"
        else:
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            p.cell.max_abs_diff = float(np.nanmax(diff)) if diff.size else 0.0
            if not np.allclose(got, want, rtol=workload.rtol, atol=workload.atol, equal_nan=True):
                p.cell.status = "mismatch"
                p.cell.note = (f"output differs from kiln eager's (max abs diff {p.cell.max_abs_diff:.3g}, "
                               f"rtol {workload.rtol}, atol {workload.atol}): not timed")
        if p.cell.status == "mismatch":
            p.step = None


def _block_size(prepared: list, block_seconds: float) -> int:
    """Calls per timed block: enough for ``block_seconds`` at kiln eager's pace (the slowest usually),
    the same for every column so each makes the same calls (a training step's loss curves line up)."""
    pace = [p.cell.second_call for p in prepared if p.step is not None and p.cell.second_call]
    base = next((p.cell.second_call for p in prepared if p.column.key == BASELINE and p.step is not None), None)
    per_call = base or (max(pace) if pace else None)
    if not per_call:
        return 1
    return int(min(max(1, round(block_seconds / per_call)), 10_000))


# Note [Lead-in before a multi-threaded sample]
# ---------------------------------------------
# torch's OpenMP workers spin for a while after each parallel region; kiln's TBB workers sleep.
# Right after a torch block, a kiln block with several threads runs in torch's shadow (a spinning
# worker holds a core), and on a loaded 2-core machine an OpenMP barrier waiting on a descheduled
# worker costs milliseconds (softmax over [512, 768]: 0.6 ms on one thread, 32 ms on two). So the
# report runs one thread per side by default, and with more, each timed block is preceded by one
# untimed block of the same column (bench/harness.py does the same with a time-based lead-in;
# here a count, so every column makes the same calls and a training step's loss curves line up).


def _timed_block(p: _Prepared, number: int, lead_in: bool, samples: list) -> None:
    call = p.step.call
    try:
        if lead_in:
            for _ in range(number):
                call()
        start = time.perf_counter()
        for _ in range(number):
            call()
        samples.append(time.perf_counter() - start)
    except Exception as error:  # the cell says so; the other columns go on
        p.cell.status, p.cell.note, p.step = "error", _error_note(error), None


def _top_up_curves(active: list, calls: int) -> None:
    """Untimed training steps until every column has made ``calls`` (its loss curve's length)."""
    for p in active:
        while p.step is not None and p.losses is not None and len(p.losses) < calls:
            try:
                p.step.call()
            except Exception as error:
                p.cell.status, p.cell.note, p.step = "error", _error_note(error), None


def run_workload(workload, columns: list, libraries: dict, skipped: dict, options: RunOptions,
                 progress=None) -> WorkloadResult:
    """``libraries`` maps "kiln"/"torch" to the module (or None); ``skipped`` maps a column key to the
    (status, note) it shows instead of running. ``progress`` is a tqdm bar (one tick per column set up,
    one per round of timing)."""
    prepared = []
    for column in columns:
        if column.key in skipped:
            status, note = skipped[column.key]
            prepared.append(_Prepared(column, Cell(column.key, status, note)))
        else:
            lib = libraries[column.library]
            compile_fn = lib.compile if column.compiled else None
            prepared.append(_prepare(workload, column, lib, compile_fn, options.quick))
        if progress is not None:
            progress.update(1)
    _check_agreement(workload, prepared)

    number = _block_size(prepared, options.block_seconds)
    samples = {p.column.key: [] for p in prepared}
    active = [p for p in prepared if p.step is not None]
    for round_index in range(options.reps):
        shift = round_index % max(len(active), 1)
        for p in active[shift:] + active[:shift]:
            if p.step is not None:
                _timed_block(p, number, options.threads > 1, samples[p.column.key])
        if progress is not None:
            progress.update(1)
    if workload.curve_calls is not None:
        _top_up_curves(active, workload.curve_calls(options.quick))

    cells = {}
    for p in prepared:
        key = p.column.key
        if p.cell.status in ("ok", "graph_break") and samples[key]:
            p.cell.measurement = Measurement(number, samples[key], TaskSpec(
                stmt=workload.name, label=workload.title, description=p.column.title, num_threads=options.threads))
        if p.losses:
            p.cell.losses = [float(loss.item()) for loss in p.losses]
        cells[key] = p.cell
    return WorkloadResult(workload.name, workload.title, workload.shape(options.quick), number, cells)
