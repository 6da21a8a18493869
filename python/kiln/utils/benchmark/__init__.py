"""kiln.utils.benchmark: timing statements with torch.utils.benchmark's conventions —
Timer (timeit, blocked_autorange, adaptive_autorange), Measurement, Compare."""

from kiln.utils.benchmark._compare import Compare
from kiln.utils.benchmark._measurement import Measurement, TaskSpec, select_unit
from kiln.utils.benchmark._timer import Timer

__all__ = ["Compare", "Measurement", "TaskSpec", "Timer", "select_unit"]
