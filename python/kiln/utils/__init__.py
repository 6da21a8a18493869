"""kiln.utils: data loading (kiln.utils.data) and activation checkpointing
(kiln.utils.checkpoint), as torch.utils."""

from kiln.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
