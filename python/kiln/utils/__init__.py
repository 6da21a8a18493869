"""kiln.utils: data loading (kiln.utils.data), activation checkpointing
(kiln.utils.checkpoint), pytrees (kiln.utils._pytree) and benchmarking
(kiln.utils.benchmark), as torch.utils."""

from kiln.utils import benchmark, checkpoint, data

__all__ = ["benchmark", "checkpoint", "data"]
