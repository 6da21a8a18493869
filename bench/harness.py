"""Side-by-side timing of kiln and PyTorch on the same workload, in one process.

Absolute times on a shared machine drift from run to run, so every case is timed
on both sides within the same run and reported as a ratio (kiln / torch; below 1
means kiln is faster). For each case the harness:

1. calls ``setup()`` once (if given); its result is passed to both functions;
2. warms each side up, then calibrates an inner loop count per side so that one
   sample (that many calls back to back) takes at least ``target_sample_s``;
3. takes ``repeat`` samples per side, alternating kiln and torch (kiln first in
   even rounds, torch first in odd ones) so drift hits both alike; with more
   than one thread, each sample is preceded by an untimed lead-in of the same
   side's calls (Note [Lead-in before a multi-threaded sample]);
4. reports the median time per call of each side and their ratio.

Thread counts are set explicitly on both sides before anything runs.
``bench/run.py`` is the command line; ``bench/cases_*.py`` hold the cases.
"""

from __future__ import annotations

import dataclasses
import datetime
import gc
import json
import math
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

SIDES = ("kiln", "torch")

DEFAULT_TARGET_SAMPLE_S = 0.020  # one sample lasts at least 20 ms
QUICK_TARGET_SAMPLE_S = 0.005
DEFAULT_WARMUP_S = 0.050  # per side, before calibration
QUICK_WARMUP_S = 0.010
MAX_CALIBRATION_GROWTH = 100  # the inner loop count grows at most 100x per calibration step
LEAD_IN_S = 0.040  # untimed calls of the same side before each multi-threaded sample

# Note [Lead-in before a multi-threaded sample]
# torch's OpenMP workers spin after each parallel region instead of sleeping;
# kiln's TBB workers sleep (DESIGN decision 9). Measured on the 2-core VM
# (1M float32 add, 2 threads): for the first 8-25 ms after a torch sample, a
# kiln call takes 160-180 us instead of 80 us, because torch's spinning worker
# holds a core. Alternating 20 ms samples therefore timed kiln entirely in
# torch's shadow (110 us per call vs 77 us when kiln runs alone), and torch's
# samples a little in kiln's. Neither figure is what a program using one
# library sees. So before each sample with more than one thread, the harness
# runs the same side untimed for LEAD_IN_S: the other library's idle workers
# have stopped spinning by then, and the measured side's own workers are awake.
# A pause instead of the lead-in was tried and measured worse: a parked vCPU on
# this VM wakes slowly. One thread on each side has no workers and no lead-in.


@dataclasses.dataclass
class Case:
    """One workload, written once for kiln and once for PyTorch.

    ``setup`` runs once, only if the case is selected, so kiln can be imported
    there (a ``--filter`` that skips the kiln cases then never imports kiln). When
    given, its result is the one argument of ``kiln_fn`` and ``torch_fn``;
    otherwise they take none. ``notes``, if given, is called with the same
    argument after timing and returns extra facts for the JSON (e.g. allocator
    statistics).
    """

    name: str
    kiln_fn: Callable[..., Any] | None = None
    torch_fn: Callable[..., Any] | None = None
    setup: Callable[[], Any] | None = None
    group: str = "misc"
    notes: Callable[..., dict] | None = None
    # For per-call overhead cases: returns (kiln_fn, torch_fn), argument-free
    # closures over local variables, so the timing loop adds as little as
    # possible (no attribute lookups) to both sides.
    make: Callable[[], tuple[Callable[[], Any], Callable[[], Any]]] | None = None


@dataclasses.dataclass
class SideTiming:
    """Samples of one side of one case, each in seconds per call."""

    inner_loops: int
    samples_s: list[float]

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def relative_spread(self) -> float:
        """Interquartile range over the median: how noisy the samples were."""
        if len(self.samples_s) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples_s, n=4, method="inclusive")
        return (q3 - q1) / self.median_s if self.median_s > 0 else 0.0


@dataclasses.dataclass
class CaseResult:
    """The outcome of one case: both sides' timings, or the error that stopped it."""

    name: str
    group: str
    timings: dict[str, SideTiming] = dataclasses.field(default_factory=dict)
    error: str | None = None
    notes: dict | None = None

    @property
    def ratio(self) -> float | None:
        """kiln's median over torch's; below 1 means kiln is faster."""
        if self.error is not None or set(self.timings) != set(SIDES):
            return None
        return ratio_of_medians(self.timings["kiln"].median_s, self.timings["torch"].median_s)


@dataclasses.dataclass
class Settings:
    """How hard to measure."""

    repeat: int = 10
    target_sample_s: float = DEFAULT_TARGET_SAMPLE_S
    warmup_s: float = DEFAULT_WARMUP_S
    threads: int = 1
    lead_in_s: float = LEAD_IN_S

    @classmethod
    def quick(cls, repeat: int = 3, threads: int = 1) -> "Settings":
        return cls(repeat=repeat, target_sample_s=QUICK_TARGET_SAMPLE_S, warmup_s=QUICK_WARMUP_S, threads=threads)


def ratio_of_medians(kiln_s: float, torch_s: float) -> float:
    """kiln / torch, or inf when torch's time is zero."""
    return kiln_s / torch_s if torch_s > 0 else math.inf


def sample_order(repeat: int) -> list[str]:
    """The order samples are taken in: pairs alternating which side goes first."""
    order = []
    for round_index in range(repeat):
        order += list(SIDES) if round_index % 2 == 0 else list(reversed(SIDES))
    return order


def time_calls(fn: Callable[..., Any], args: tuple, inner_loops: int) -> float:
    """Seconds taken by ``inner_loops`` calls of ``fn(*args)``, with the garbage collector off."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(inner_loops):
            fn(*args)
        return time.perf_counter() - start
    finally:
        if gc_was_enabled:
            gc.enable()


def warm_up(fn: Callable[..., Any], args: tuple, warmup_s: float) -> None:
    """Call ``fn`` at least twice and until ``warmup_s`` has passed."""
    deadline = time.perf_counter() + warmup_s
    calls = 0
    while calls < 2 or time.perf_counter() < deadline:
        fn(*args)
        calls += 1


def threads_in_use() -> int:
    """The larger of torch's and kiln's current thread counts."""
    import torch

    kiln = import_kiln()
    kiln_threads = kiln.get_num_threads() if kiln is not None and hasattr(kiln, "get_num_threads") else 1
    return max(torch.get_num_threads(), kiln_threads)


def lead_in(fn: Callable[..., Any], args: tuple, lead_in_s: float) -> None:
    """Untimed calls of ``fn`` for ``lead_in_s`` (Note [Lead-in before a multi-threaded sample])."""
    deadline = time.perf_counter() + lead_in_s
    while time.perf_counter() < deadline:
        fn(*args)


def calibrate_inner_loops(fn: Callable[..., Any], args: tuple, target_sample_s: float) -> int:
    """The number of calls in a row that take at least ``target_sample_s``."""
    inner_loops = 1
    while True:
        elapsed = time_calls(fn, args, inner_loops)
        if elapsed >= target_sample_s:
            return inner_loops
        wanted = inner_loops * 1.2 * target_sample_s / max(elapsed, 1e-9)
        inner_loops = max(inner_loops + 1, min(int(math.ceil(wanted)), inner_loops * MAX_CALIBRATION_GROWTH))


def run_case(case: Case, settings: Settings) -> CaseResult:
    """Time both sides of one case; an exception in either side is recorded, not raised."""
    result = CaseResult(name=case.name, group=case.group)
    try:
        if case.make is not None:
            args = ()
            functions = dict(zip(("kiln", "torch"), case.make()))
        else:
            args = () if case.setup is None else (case.setup(),)
            functions = {"kiln": case.kiln_fn, "torch": case.torch_fn}
        inner_loops = {}
        for side in SIDES:
            warm_up(functions[side], args, settings.warmup_s)
            inner_loops[side] = calibrate_inner_loops(functions[side], args, settings.target_sample_s)
        samples = {side: [] for side in SIDES}
        multi_threaded = threads_in_use() > 1  # read after setup/make, which may set them
        for side in sample_order(settings.repeat):
            if multi_threaded:
                lead_in(functions[side], args, settings.lead_in_s)
            elapsed = time_calls(functions[side], args, inner_loops[side])
            samples[side].append(elapsed / inner_loops[side])
        result.timings = {side: SideTiming(inner_loops[side], samples[side]) for side in SIDES}
        if case.notes is not None:
            result.notes = add_rates(case.notes(*args), result.timings)
    except Exception as error:  # noqa: BLE001 - one broken case must not stop the run
        result.error = f"{type(error).__name__}: {error}"
    return result


def add_rates(notes: dict, timings: dict) -> dict:
    """Notes that give a case's "flops" gain each side's GFLOP/s at its median time and, where they
    also give "fp32_peak_gflops", each side's fraction of that peak, at the median and at the best
    sample. The peak is the best of several probes, so the best sample is its like-for-like
    partner on a shared machine; the median shows what a neighbour's load leaves."""
    if "flops" not in notes:
        return notes
    notes = dict(notes)
    for side, timing in timings.items():
        gflops = notes["flops"] / timing.median_s / 1e9
        notes[f"{side}_gflops"] = round(gflops, 1)
        if notes.get("fp32_peak_gflops"):
            notes[f"{side}_fraction_of_peak"] = round(gflops / notes["fp32_peak_gflops"], 3)
            best = notes["flops"] / min(timing.samples_s) / 1e9
            notes[f"{side}_best_fraction_of_peak"] = round(best / notes["fp32_peak_gflops"], 3)
    return notes


def import_kiln():
    """kiln, or None when it is not built or not importable."""
    try:
        import kiln
    except ImportError:
        return None
    return kiln


def set_thread_counts(threads: int) -> dict[str, int | None]:
    """Give torch and (when importable) kiln the same number of threads; return what each has."""
    import torch

    torch.set_num_threads(threads)
    counts: dict[str, int | None] = {"torch": torch.get_num_threads(), "kiln": None}
    kiln = import_kiln()
    if kiln is not None and hasattr(kiln, "set_num_threads"):
        kiln.set_num_threads(threads)
        counts["kiln"] = kiln.get_num_threads() if hasattr(kiln, "get_num_threads") else threads
    return counts


def cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    import numpy
    import torch

    kiln = import_kiln()
    usable_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cores": usable_cores,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy_version": numpy.__version__,
        "torch_version": torch.__version__,
        "kiln_version": getattr(kiln, "__version__", None) if kiln is not None else None,
    }


def run_cases(cases: list[Case], settings: Settings, progress: Callable[[str], None] | None = None) -> dict:
    """Run every case and return the full report (machine, settings, per-case results)."""
    thread_counts = set_thread_counts(settings.threads)
    results = []
    for case in cases:
        if progress is not None:
            progress(f"{case.group}/{case.name}")
        results.append(run_case(case, settings))
    return build_report(results, settings, machine_info(), thread_counts)


def build_report(results: list[CaseResult], settings: Settings, machine: dict, thread_counts: dict) -> dict:
    """The JSON-ready report."""
    return {
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine,
        "settings": dataclasses.asdict(settings),
        "threads": thread_counts,
        "cases": [case_result_json(result) for result in results],
    }


def case_result_json(result: CaseResult) -> dict:
    """One case's entry in the report: every sample, the medians and the ratio."""
    sides = {
        side: {
            "inner_loops": timing.inner_loops,
            "samples_s": timing.samples_s,
            "median_s": timing.median_s,
            "relative_spread": timing.relative_spread,
        }
        for side, timing in result.timings.items()
    }
    return {
        "name": result.name,
        "group": result.group,
        "sides": sides,
        "ratio": result.ratio,
        "error": result.error,
        "notes": result.notes,
    }


def format_seconds(seconds: float | None) -> str:
    """A duration with a readable unit: ``812 ns``, ``3.41 µs``, ``12.0 ms``, ``1.20 s``."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_ratio(ratio: float) -> str:
    """Two decimals, or two significant digits for ratios too small for that."""
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def markdown_table(report: dict) -> str:
    """The report's cases as a markdown table, one row per case."""
    rows = [
        "| group | case | kiln | torch | kiln/torch | spread |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for case in report["cases"]:
        if case["error"] is not None:
            rows.append(f"| {case['group']} | {case['name']} | error: {case['error']} | - | - | - |")
            continue
        sides = case["sides"]
        spread = max(side["relative_spread"] for side in sides.values())
        rows.append(
            f"| {case['group']} | {case['name']} | {format_seconds(sides['kiln']['median_s'])} "
            f"| {format_seconds(sides['torch']['median_s'])} | {format_ratio(case['ratio'])} | {spread:.0%} |"
        )
    return "\n".join(rows)


def markdown_report(report: dict) -> str:
    """A short header naming the machine, then the table."""
    machine = report["machine"]
    header = (
        f"# kiln vs PyTorch, {report['created']}\n\n"
        f"{machine['cpu_model']}, {machine['usable_cores']} usable cores, "
        f"threads torch={report['threads']['torch']} kiln={report['threads']['kiln']}, "
        f"torch {machine['torch_version']}, kiln {machine['kiln_version']}. "
        "Median time per call; kiln/torch below 1 means kiln is faster; "
        "spread is the larger interquartile range over median of the two sides.\n\n"
    )
    return header + markdown_table(report) + "\n"


def write_report(report: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write ``results-<time>.json`` and ``.md`` into ``out_dir``; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "results-" + report["created"].replace(":", "").replace("-", "")
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    md_path.write_text(markdown_report(report))
    return json_path, md_path
