"""report.md and the table printed at the end of a run: time per call (median ± IQR, speedup over
kiln eager) for every workload and column, compile latency (cold and cached call) with kernel
counts, notes for every cell that did not simply run (graph breaks, errors, skips), and the plots."""

from __future__ import annotations

from pathlib import Path

from kiln.bench._columns import BASELINE
from kiln.utils.benchmark import select_unit

_STATUS_WORDS = {"graph_break": "graph break", "mismatch": "wrong result", "error": "error",
                 "skipped": "skipped", "unavailable": "n/a"}


def _time(seconds: float) -> str:
    unit, scale = select_unit(seconds)
    value = seconds / scale
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def _notes(report) -> dict:
    """(workload, column) -> footnote number, for every cell whose status is not plain "ok"; cells with
    the same note (a column skipped everywhere) share one number."""
    by_text, numbers = {}, {}
    for r in report.results:
        for c in report.columns:
            cell = r.cells[c.key]
            if cell.status != "ok" and cell.note:
                key = (c.key, cell.note)
                numbers[(r.name, c.key)] = by_text.setdefault(key, len(by_text) + 1)
    return numbers


def _time_cell(result, key: str, note: int | None) -> str:
    cell = result.cells[key]
    mark = f" [{note}]" if note else ""
    if cell.measurement is None:
        return f"{_STATUS_WORDS.get(cell.status, cell.status)}{mark}"
    m = cell.measurement
    text = f"{_time(m.median)} ± {_time(m.iqr)}"
    speedup = result.speedup(key)
    if key != BASELINE and speedup is not None:
        text += f" ({speedup:.2f}x)"
    if cell.status != "ok":
        text += f" {_STATUS_WORDS[cell.status]}"
    return text + mark


def time_table(report) -> str:
    notes = _notes(report)
    head = "| workload | shape | " + " | ".join(c.title for c in report.columns) + " |"
    rule = "|---|---|" + "---|" * len(report.columns)
    rows = [f"| {r.name} | {r.shape} | " + " | ".join(
        _time_cell(r, c.key, notes.get((r.name, c.key))) for c in report.columns) + " |" for r in report.results]
    return "\n".join([head, rule, *rows])


def notes_text(report) -> str:
    where = {}   # footnote number -> (column, note, [workloads])
    for (workload, key), number in _notes(report).items():
        cell = next(r for r in report.results if r.name == workload).cells[key]
        where.setdefault(number, (key, cell.note, []))[2].append(workload)
    titles = {c.key: c.title for c in report.columns}
    return "\n".join(f"[{number}] {titles[key]} in {', '.join(workloads)}: {note}"
                     for number, (key, note, workloads) in sorted(where.items()))


def _latency(seconds) -> str:
    return _time(seconds) if seconds is not None else "-"


def latency_table(report) -> str:
    compiled = [c for c in report.columns if c.compiled]
    head = "| workload | " + " | ".join(f"{c.title} cold | {c.title} cached" for c in compiled) + \
        " | kiln fused kernels | kiln eager peak | kiln compiled peak |"
    rule = "|---|" + "---|---|" * len(compiled) + "---|---|---|"
    rows = []
    for r in report.results:
        cells = [f"{_latency(r.cells[c.key].first_call)} | {_latency(r.cells[c.key].second_call)}" for c in compiled]
        kernels = r.cells.get("kiln_compiled")
        peaks = [r.cells.get(k) for k in ("kiln_eager", "kiln_compiled")]
        peak_text = [f"{p.peak_bytes / 2**20:.1f} MiB" if p is not None and p.peak_bytes is not None else "-"
                     for p in peaks]
        kernel_text = str(kernels.kernel_count) if kernels is not None and kernels.kernel_count is not None else "-"
        rows.append(f"| {r.name} | " + " | ".join(cells) + f" | {kernel_text} | " + " | ".join(peak_text) + " |")
    return "\n".join([head, rule, *rows])


def loss_table(report) -> str:
    """A training step's loss curves side by side: steps, first and last loss, the largest gap to kiln eager's."""
    result = next((r for r in report.results if r.name == "gpt_mini_train_step"), None)
    if result is None:
        return ""
    base = result.cells[BASELINE].losses
    rows = ["| column | steps | first loss | last loss | largest difference from kiln eager |", "|---|---|---|---|---|"]
    for c in report.columns:
        losses = result.cells[c.key].losses
        if not losses:
            continue
        gap = f"{max(abs(a - b) for a, b in zip(losses, base)):.2e}" if base and c.key != BASELINE else "-"
        rows.append(f"| {c.title} | {len(losses)} | {losses[0]:.4f} | {losses[-1]:.4f} | {gap} |")
    return "\n".join(rows) if len(rows) > 2 else ""


def summary(report) -> str:
    """What the run printed: the time table, its notes."""
    notes = notes_text(report)
    return time_table(report) + ("\n\n" + notes if notes else "")


def write_markdown(report, path: Path) -> None:
    versions = ", ".join(f"{k} {v}" if v else f"{k} not installed" for k, v in report.versions.items())
    mode = "--quick (small sizes, few samples)" if report.quick else "full sizes"
    threads = f"{report.threads} thread{'s' if report.threads != 1 else ''}"
    parts = [
        "# kiln.bench report",
        "",
        f"{report.started} UTC · {versions} · {threads} on both sides · {mode} · "
        f"{report.reps} interleaved samples per cell · {report.seconds:.0f} s",
        "",
        "## Time per call",
        "",
        "Median ± IQR over the samples; in parentheses, the speedup over kiln eager. Compiled columns "
        "compile the function, the whole training step (forward, loss, zero_grad, backward, optimizer step), "
        "or the optimizer's `step`. Every column's first call is checked "
        "against kiln eager's before timing.",
        "",
        time_table(report),
    ]
    notes = notes_text(report)
    if notes:
        parts += ["", "Notes:", "", *[f"- {line}" for line in notes.splitlines()]]
    parts += ["", "## Compile latency", "",
              "Cold: the first call of a fresh compile (capture, compile, run). Cached: the second call "
              "(guards, replay). Peaks: kiln's allocator, one call, above what was live before it.", "",
              latency_table(report)]
    curves = loss_table(report)
    if curves:
        parts += ["", "## GPT-mini loss curves", "",
                  "Every column trains from the same weights on the same batches; each step's loss is kept.", "",
                  curves]
    if report.plots:
        parts += ["", "## Plots", ""]
        parts += [f"![{name}]({file})" for name, file in report.plots.items()]
    if report.plot_note:
        parts += ["", f"Plots: {report.plot_note}"]
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
