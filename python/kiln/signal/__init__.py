"""torch.signal: the window functions (kiln.signal.windows)."""

from kiln.signal import windows

__all__ = ["windows"]
