"""Measurement: the raw block times of one timed statement and the statistics torch's
benchmark reports on them (median, IQR, significant figures), plus the time-unit choice
Compare shares. Standard library only."""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

# Above this IQR/median a Measurement warns (torch's _IQR_WARN_THRESHOLD).
IQR_WARN_THRESHOLD = 0.1
# A confidence interval narrower than the timer can resolve is not trusted (seconds).
MIN_CONFIDENCE_INTERVAL = 25e-9
MAX_SIGNIFICANT_FIGURES = 4

_UNITS = ((1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s"))
UNIT_NAMES = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}


def select_unit(seconds: float) -> tuple[str, float]:
    """The largest unit in which ``seconds`` is at least 1 (ns for anything smaller), and its scale."""
    chosen = _UNITS[0]
    for scale, name in _UNITS:
        if seconds >= scale:
            chosen = (scale, name)
    return chosen[1], chosen[0]


def quantile(sorted_values: list[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (numpy's default)."""
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def trim_sigfig(value: float, figures: int) -> float:
    """``value`` rounded to ``figures`` significant figures."""
    if value == 0:
        return 0.0
    magnitude = int(math.floor(math.log10(abs(value))))
    return round(value, figures - 1 - magnitude)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed and how it is labelled in a Compare table."""
    stmt: str
    setup: str = "pass"
    label: Optional[str] = None
    sub_label: Optional[str] = None
    description: Optional[str] = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + "\n".join(
            "  " + line for line in self.stmt.splitlines())

    def summarize(self) -> str:
        lines = [self.title]
        if self.description:
            lines.append(f"  {self.description}")
        if self.setup and self.setup.strip() != "pass":
            lines.append("setup:" + ("\n" + "\n".join("  " + line for line in self.setup.splitlines())
                                     if "\n" in self.setup else f" {self.setup}"))
        return "\n".join(lines)


@dataclasses.dataclass
class Measurement:
    """``raw_times[i]`` is the wall time of one block of ``number_per_run`` calls (seconds)."""
    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: Optional[dict] = None

    @property
    def times(self) -> list[float]:
        """Seconds per call, one entry per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def _sorted(self) -> list[float]:
        return sorted(self.times)

    @property
    def median(self) -> float:
        return quantile(self._sorted, 0.5)

    @property
    def mean(self) -> float:
        return sum(self.times) / len(self.times)

    @property
    def iqr(self) -> float:
        values = self._sorted
        return quantile(values, 0.75) - quantile(values, 0.25)

    # torch exposes the TaskSpec fields on the measurement.
    stmt = property(lambda self: self.task_spec.stmt)
    setup = property(lambda self: self.task_spec.setup)
    label = property(lambda self: self.task_spec.label)
    sub_label = property(lambda self: self.task_spec.sub_label)
    description = property(lambda self: self.task_spec.description)
    num_threads = property(lambda self: self.task_spec.num_threads)
    title = property(lambda self: self.task_spec.title)

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread of the middle half of the times supports (1..4)."""
        values = self._sorted
        n = len(values)
        middle = values[n // 4:math.ceil(3 * n / 4)]
        mean = sum(middle) / len(middle)
        std = math.sqrt(sum((v - mean) ** 2 for v in middle) / len(middle))
        interval = max(1.645 * std / math.sqrt(len(middle)), MIN_CONFIDENCE_INTERVAL)
        figures = int(math.floor(math.log10(self.median / interval))) if self.median > 0 else 1
        return min(max(figures, 1), MAX_SIGNIFICANT_FIGURES)

    def meets_confidence(self, threshold: float = IQR_WARN_THRESHOLD) -> bool:
        return self.median > 0 and self.iqr / self.median < threshold

    @property
    def warnings(self) -> list[str]:
        if len(self.times) < 2 or self.median <= 0:
            return []
        relative_iqr = self.iqr / self.median
        if relative_iqr > IQR_WARN_THRESHOLD:
            return [f"  WARNING: Interquartile range is {relative_iqr * 100:.1f}% of the median measurement.\n"
                    "           This suggests significant environmental influence."]
        return []

    @property
    def has_warnings(self) -> bool:
        return bool(self.warnings)

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        n = len(self.times)
        if n > 1:
            q1, q3 = quantile(self._sorted, 0.25), quantile(self._sorted, 0.75)
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({q1 / scale:.2f} to {q3 / scale:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        threads = "thread" if self.num_threads == 1 else "threads"
        measurements = "measurement" if n == 1 else "measurements"
        lines.append(f"  {n} {measurements}, {self.number_per_run} runs per measurement, "
                     f"{self.num_threads} {threads}")
        lines.extend(self.warnings)
        return "\n".join(lines)
