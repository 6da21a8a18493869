"""The whole run (``Report``) and report.json: every workload, every column's cell (status, note,
median/IQR/mean and each sample in seconds per call, speedup over kiln eager, first and second
call, kernels, allocator peak, agreement, graph-break reasons, a training step's losses)."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kiln.bench._columns import BASELINE


@dataclass
class Report:
    columns: list                 # Column, in table order
    results: list                 # WorkloadResult, in run order
    threads: int
    quick: bool
    reps: int
    versions: dict                # library -> version string (or None when not installed)
    started: str                  # UTC, ISO 8601
    seconds: float = 0.0          # the whole run's wall time
    plots: dict = field(default_factory=dict)   # plot name -> file name (beside report.md)
    plot_note: str = ""           # why plots are missing, when they are


def machine() -> dict:
    return {"platform": platform.platform(), "machine": platform.machine(), "python": sys.version.split()[0],
            "cpu_count": os.cpu_count()}


def _cell_dict(result, key: str) -> dict:
    cell = result.cells[key]
    out = {"status": cell.status, "note": cell.note, "first_call_s": cell.first_call,
           "second_call_s": cell.second_call, "kernel_count": cell.kernel_count, "peak_bytes": cell.peak_bytes,
           "max_abs_diff_vs_" + BASELINE: cell.max_abs_diff, "break_reasons": cell.break_reasons,
           "speedup_vs_" + BASELINE: result.speedup(key)}
    m = cell.measurement
    if m is not None:
        out.update(median_s=m.median, iqr_s=m.iqr, mean_s=m.mean, samples_s=m.times,
                   calls_per_sample=m.number_per_run)
    else:
        out.update(median_s=None, iqr_s=None, mean_s=None, samples_s=[], calls_per_sample=None)
    if cell.losses:
        out["losses"] = cell.losses
    return out


def as_dict(report: Report) -> dict:
    return {
        "tool": "python -m kiln.bench",
        "started_utc": report.started,
        "seconds": report.seconds,
        "quick": report.quick,
        "threads": report.threads,
        "samples_per_cell": report.reps,
        "versions": report.versions,
        "machine": machine(),
        "baseline": BASELINE,
        "columns": [{"key": c.key, "title": c.title} for c in report.columns],
        "workloads": {r.name: {"title": r.title, "shape": r.shape, "calls_per_sample": r.number_per_sample,
                               "cells": {c.key: _cell_dict(r, c.key) for c in report.columns}}
                      for r in report.results},
        "plots": report.plots,
        "plot_note": report.plot_note,
    }


def write_json(report: Report, path: Path) -> None:
    path.write_text(json.dumps(as_dict(report), indent=2) + "\n", encoding="utf-8")
