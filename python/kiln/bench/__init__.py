"""kiln.bench: the benchmark report, ``python -m kiln.bench`` — a fixed set of workloads in four
columns (kiln eager, kiln compiled, torch eager, torch.compile), written to report.md,
report.json and PNG plots. Importing this package imports neither torch, matplotlib nor tqdm:
the torch columns, the plots and the progress bar load them when they run."""

from kiln.bench._cli import main
from kiln.bench._workloads import WORKLOADS

__all__ = ["WORKLOADS", "main"]
