"""The report's PNGs, drawn with matplotlib's Agg backend (no display needed): time per call for
every workload and column with the speedup over kiln eager written on each bar; compile latency
(cold and cached call) of the compiled columns; GPT-mini's loss per training step, every column on
one axis (the compiled curves should lie on the eager one). matplotlib is imported here only,
when plots are drawn."""

from __future__ import annotations

import math
from pathlib import Path

from kiln.bench._columns import BASELINE
from kiln.utils.benchmark._measurement import quantile

_COLOURS = {"kiln_eager": "#4c72b0", "kiln_compiled": "#dd8452", "torch_eager": "#55a868", "torch_compile": "#c44e52"}
_STYLES = {"kiln_eager": "-", "kiln_compiled": "--", "torch_eager": ":", "torch_compile": "-."}


def _pyplot():
    import matplotlib  # optional: the plots only (scripts/setup.sh installs it)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # optional, as above
    return plt


def _quartiles_ms(measurement) -> tuple:
    """(first quartile, median, third quartile) of the per-call times in ms; zeros when not timed."""
    if measurement is None:
        return 0.0, 0.0, 0.0
    times = sorted(measurement.times)
    return tuple(quantile(times, q) * 1e3 for q in (0.25, 0.5, 0.75))


def _time_plot(plt, report, path: Path) -> None:
    results = report.results
    cols = min(4, len(results))
    rows = math.ceil(len(results) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.2 * rows), squeeze=False)
    titles = [c.title for c in report.columns]
    for ax, result in zip(axes.flat, results):
        medians, below, above, labels = [], [], [], []
        for c in report.columns:
            cell = result.cells[c.key]
            m = cell.measurement
            q1, median, q3 = _quartiles_ms(m)
            medians.append(median)
            below.append(median - q1)
            above.append(q3 - median)
            speedup = result.speedup(c.key)
            if m is None:
                labels.append({"graph_break": "graph break", "mismatch": "wrong result", "error": "error",
                               "skipped": "skipped", "unavailable": "n/a"}.get(cell.status, cell.status))
            elif c.key == BASELINE:
                labels.append("1.00x")
            else:
                labels.append(f"{speedup:.2f}x" + (" (break)" if cell.status == "graph_break" else ""))
        x = range(len(report.columns))
        bars = ax.bar(x, medians, yerr=[below, above], capsize=3, color=[_COLOURS[c.key] for c in report.columns])
        for c, bar in zip(report.columns, bars):
            if result.cells[c.key].status == "graph_break":
                bar.set_hatch("//")
        tops = [m + a for m, a in zip(medians, above)]
        top = max(tops) if any(tops) else 1.0
        for xi, height, label in zip(x, tops, labels):
            ax.text(xi, height + top * 0.02, label, ha="center", va="bottom", fontsize=7)
        ax.set_ylim(0, top * 1.2)
        ax.set_xticks(list(x))
        ax.set_xticklabels(titles, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("ms per call (median; bar: quartiles)", fontsize=7)
        ax.set_title(f"{result.name}\n{result.shape}", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(results):]:
        ax.axis("off")
    threads = f"{report.threads} thread{'s' if report.threads != 1 else ''} per side"
    fig.suptitle(f"kiln.bench: time per call, speedup over kiln eager written on each bar ({threads})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _latency_plot(plt, report, path: Path) -> None:
    compiled = [c for c in report.columns if c.compiled]
    results = report.results
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(results) + 2) + 2.5, 4.0))
    width = 0.8 / (2 * len(compiled))
    measured = [getattr(r.cells[c.key], which) for r in results for c in compiled
                for which in ("first_call", "second_call")]
    floor = min((v * 1e3 for v in measured if v), default=1.0) / 4
    for i, c in enumerate(compiled):
        for j, (which, alpha) in enumerate((("first_call", 1.0), ("second_call", 0.45))):
            values = [getattr(r.cells[c.key], which) for r in results]
            xs = [k + (2 * i + j - len(compiled) + 0.5) * width for k in range(len(results))]
            heights = [v * 1e3 if v else 0.0 for v in values]
            bars = ax.bar(xs, heights, width, color=_COLOURS[c.key], alpha=alpha,
                          label=f"{c.title}, {'cold (first call)' if j == 0 else 'cached (second call)'}")
            for bar, r in zip(bars, results):
                if r.cells[c.key].status == "graph_break":
                    bar.set_hatch("//")
            for xv, v, r in zip(xs, values, results):
                if v is None:
                    ax.text(xv, floor * 1.2, r.cells[c.key].status.replace("_", " "), rotation=90, ha="center",
                            va="bottom", fontsize=6)
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor)
    ax.set_xticks(range(len(results)))
    ax.set_xticklabels([r.name for r in results], rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("ms (log scale)")
    ax.set_title("compile latency: cold (capture + compile + run) and cached (guards + replay)\n"
                 "hatched: a graph break (the function runs eagerly)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never on them
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _curve_label(result, key: str, title: str) -> str:
    """The column's name and how far its curve lies from kiln eager's (the largest gap at any step)."""
    base, losses = result.cells[BASELINE].losses, result.cells[key].losses
    if key == BASELINE or not base:
        return title
    return f"{title} (largest gap to kiln eager {max(abs(a - b) for a, b in zip(losses, base)):.1e})"


def _loss_plot(plt, report, result, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8.0, 4.2))
    for c in report.columns:
        losses = result.cells[c.key].losses
        if losses:
            ax.plot(range(1, len(losses) + 1), losses, _STYLES[c.key], color=_COLOURS[c.key],
                    label=_curve_label(result, c.key, c.title), linewidth=1.4)
    ax.set_xlabel("training step (every call the benchmark made, in order)")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(f"GPT-mini on the bundled text, every column on one axis ({result.shape})", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(report, out: Path) -> dict:
    """Writes the PNGs into ``out``; returns plot name -> file name."""
    plt = _pyplot()
    files = {}
    if report.results:
        _time_plot(plt, report, out / "time_per_call.png")
        files["time per call"] = "time_per_call.png"
        _latency_plot(plt, report, out / "compile_latency.png")
        files["compile latency"] = "compile_latency.png"
    gpt = next((r for r in report.results if r.name == "gpt_mini_train_step"), None)
    if gpt is not None and any(cell.losses for cell in gpt.cells.values()):
        _loss_plot(plt, report, gpt, out / "gpt_mini_loss.png")
        files["GPT-mini loss"] = "gpt_mini_loss.png"
    return files
