"""``python -m kiln.bench [--quick] [--out DIR] [--workloads NAME ...] [--threads N] [--reps N]
[--torch-compile] [--no-progress]``: runs the workloads in every column, prints the table and
where it wrote report.md, report.json and the PNGs."""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

from kiln.bench import _columns, _report_json, _report_markdown, _workloads
from kiln.bench._runner import RunOptions, run_workload

QUICK_REPS, FULL_REPS = 7, 15
QUICK_BLOCK_SECONDS, FULL_BLOCK_SECONDS = 0.01, 0.05


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m kiln.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few samples (a smoke run, CI)")
    parser.add_argument("--out", default="kiln-bench-report", help="folder for report.md, report.json, PNGs")
    parser.add_argument("--workloads", nargs="+", metavar="NAME",
                        help="only these workloads (a name or part of one): "
                             + ", ".join(w.name for w in _workloads.WORKLOADS))
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads for kiln and torch alike (default 1: Note [Lead-in before a "
                             "multi-threaded sample] in _runner.py)")
    parser.add_argument("--reps", type=int, default=None,
                        help=f"interleaved samples per cell (default {FULL_REPS}, --quick {QUICK_REPS})")
    parser.add_argument("--torch-compile", action="store_true",
                        help="run the torch.compile column under --quick too (it is skipped there by default)")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    return parser.parse_args(argv)


def _progress(total: int, disable: bool):
    try:
        from tqdm import tqdm  # optional: the progress bar only
    except ImportError:
        return None
    return tqdm(total=total, desc="kiln.bench", unit="step", file=sys.stderr, disable=disable, leave=False)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        workloads = _workloads.select(args.workloads)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    threads = args.threads or 1
    reps = args.reps or (QUICK_REPS if args.quick else FULL_REPS)
    options = RunOptions(quick=args.quick, reps=reps, threads=threads,
                         block_seconds=QUICK_BLOCK_SECONDS if args.quick else FULL_BLOCK_SECONDS)

    libraries = {name: _columns.load_library(name) for name in ("kiln", "torch")}
    for lib in libraries.values():
        if lib is not None:
            lib.set_num_threads(threads)
    skipped = {}
    for column in _columns.COLUMNS:
        why = _columns.why_not_run(column, libraries[column.library], args.quick, args.torch_compile)
        if why is not None:
            skipped[column.key] = why

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    versions = {name: getattr(lib, "__version__", None) if lib is not None else None
                for name, lib in libraries.items()}
    report = _report_json.Report(_columns.COLUMNS, [], threads, args.quick, reps, versions, started)
    begin = time.perf_counter()
    progress = _progress(len(workloads) * (len(_columns.COLUMNS) + reps), args.no_progress)
    for workload in workloads:
        if progress is not None:
            progress.set_description(workload.name)
        report.results.append(run_workload(workload, _columns.COLUMNS, libraries, skipped, options, progress))
    if progress is not None:
        progress.close()
    report.seconds = time.perf_counter() - begin

    try:
        report.plots = _draw(report, out)
    except ImportError as error:
        report.plot_note = f"not drawn: {error}"
    _report_json.write_json(report, out / "report.json")
    _report_markdown.write_markdown(report, out / "report.md")

    print(f"kiln.bench: {len(workloads)} workloads, {threads} thread{'s' if threads != 1 else ''} per side, "
          f"{reps} interleaved samples per cell"
          f"{' (--quick)' if args.quick else ''}, {report.seconds:.1f} s")
    print(_report_markdown.summary(report))
    print(f"\nwrote {out / 'report.md'}, {out / 'report.json'}"
          + "".join(f", {out / name}" for name in report.plots.values()))
    if report.plot_note:
        print(f"plots {report.plot_note}")
    return 0


def _draw(report, out: Path) -> dict:
    from kiln.bench import _plots  # imports matplotlib: only when plots are drawn
    return _plots.draw(report, out)
