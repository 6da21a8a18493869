"""kiln.utils: data loading (kiln.utils.data), as torch.utils."""

from kiln.utils import data

__all__ = ["data"]
