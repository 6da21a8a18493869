"""Compare: renders Measurements as tables, one per label, rows by sub_label (and thread
count), columns by description, every cell of a table in one time unit. Standard library only."""

from __future__ import annotations

import collections
import math
from typing import Optional

from kiln.utils.benchmark._measurement import UNIT_NAMES, Measurement, select_unit, trim_sigfig

_BOLD = "\033[1m"
_GREEN = "\033[92m"
_YELLOW = "\033[93m"
_RED = "\033[31m"
_TERMINATE = "\033[0m"


class Compare:
    def __init__(self, results: list[Measurement]):
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize: Optional[str] = None  # None, "rowwise" or "columnwise"
        self._highlight_warnings = False

    def extend_results(self, results: list[Measurement]) -> None:
        for result in results:
            if not isinstance(result, Measurement):
                raise ValueError(f"Compare: expected Measurement, got {type(result).__name__}")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = "rowwise" if rowwise else "columnwise"

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def __str__(self) -> str:
        groups: dict = collections.OrderedDict()
        for result in self._results:
            groups.setdefault(result.label, []).append(result)
        return "\n".join(self._render_group(label, results) for label, results in groups.items())

    def _cell_value(self, result: Measurement, scale: float) -> float:
        value = result.median / scale
        if self._trim_significant_figures:
            value = trim_sigfig(value, result.significant_figures)
        return value

    def _render_group(self, label: Optional[str], results: list[Measurement]) -> str:
        unit, scale = select_unit(min(r.median for r in results))
        columns = list(dict.fromkeys(r.description for r in results))
        rows = list(dict.fromkeys((r.num_threads, r.sub_label) for r in results))
        cells: dict = {}
        for r in results:
            cells[((r.num_threads, r.sub_label), r.description)] = r

        values = {key: self._cell_value(r, scale) for key, r in cells.items()}
        # Decimal places: enough for the smallest value's significant figures when trimming.
        digits = 1
        if self._trim_significant_figures:
            for key, r in cells.items():
                v = values[key]
                if v > 0:

                    digits = max(digits, r.significant_figures - 1 - int(math.floor(math.log10(v))))
            digits = max(0, min(digits, 4))

        def text(key) -> str:
            r = cells.get(key)
            if r is None:
                return ""
            out = f"{values[key]:.{digits}f}"
            if self._highlight_warnings and r.has_warnings:
                out += f" (! {r.iqr / r.median * 100:.0f}%)"
            return out

        def colour(key) -> str:
            if self._colorize is None or key not in cells:
                return ""
            row, column = key
            peers = ([values[(row, c)] for c in columns if (row, c) in values] if self._colorize == "rowwise"
                     else [values[(w, column)] for w in rows if (w, column) in values])
            best = min(peers)
            if values[key] == best and len(peers) > 1:
                return _BOLD + _GREEN
            if values[key] > best * 2:
                return _RED + _BOLD
            if values[key] > best * 1.1:
                return _YELLOW
            return ""

        row_names = ["" if sub is None else str(sub) for _, sub in rows]
        column_names = ["" if c is None else str(c) for c in columns]
        body = [[text((row, c)) for c in columns] for row in rows]
        name_width = max([len(n) for n in row_names] + [0]) + 2
        widths = [max([len(column_names[i])] + [len(line[i]) for line in body]) + 2 for i in range(len(columns))]

        header = " " * name_width + "|" + "|".join(n.center(w) for n, w in zip(column_names, widths))
        width = len(header)
        title = f" {label} " if label else ""
        dashes = max(width - 2 - len(title), 0)
        lines = ["[" + "-" * (dashes // 2) + title + "-" * (dashes - dashes // 2) + "]", header]
        previous_threads = None
        for row, name, line in zip(rows, row_names, body):
            threads = row[0]
            if threads != previous_threads:
                prefix = f"{threads} threads: "
                lines.append(prefix + "-" * max(width - len(prefix), 0))
                previous_threads = threads
            rendered = []
            for c, cell, w in zip(columns, line, widths):
                shade = colour((row, c))
                padded = cell.rjust(w - 2).center(w)
                rendered.append(shade + padded + _TERMINATE if shade else padded)
            lines.append(name.rjust(name_width - 2).center(name_width) + "|" + "|".join(rendered))
        lines.append("")
        lines.append(f"Times are in {UNIT_NAMES[unit]} ({unit}).")
        if self._highlight_warnings and any(r.has_warnings for r in results):
            lines.append("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.")
        lines.append("")
        return "\n".join(lines)
