"""kiln.utils.benchmark: timing statements with torch.utils.benchmark's conventions —
Timer (timeit, blocked_autorange, adaptive_autorange), Measurement, Compare — and
compare_compiled (eager against kiln.compile, side by side)."""

from kiln.utils.benchmark._compare import Compare
from kiln.utils.benchmark._compare_compiled import CompiledComparison, ComparisonRow, compare_compiled
from kiln.utils.benchmark._measurement import Measurement, TaskSpec, select_unit
from kiln.utils.benchmark._timer import Timer

__all__ = ["Compare", "CompiledComparison", "ComparisonRow", "Measurement", "TaskSpec", "Timer", "compare_compiled",
           "select_unit"]
