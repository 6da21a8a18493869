"""kiln.utils: data loading (kiln.utils.data), activation checkpointing
(kiln.utils.checkpoint) and pytrees (kiln.utils._pytree), as torch.utils."""

from kiln.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
