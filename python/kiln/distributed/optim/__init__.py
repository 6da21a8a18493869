"""kiln.distributed.optim: optimizers across a process group (torch.distributed.optim)."""

from kiln.distributed.optim.zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
