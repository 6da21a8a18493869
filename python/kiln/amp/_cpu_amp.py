"""torch.cpu.amp's deprecated spellings, for kiln: autocast (device "cpu", dtype
bfloat16 by default) and GradScaler (device "cpu"), each warning FutureWarning
on construction and then being kiln.amp's.

kiln has no kiln.cpu package yet, so this module is reachable as
kiln.amp._cpu_amp; a kiln.cpu package would expose it as its ``amp``.
"""

from __future__ import annotations

import warnings

from kiln import _C
from kiln.amp import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True): deprecated
    for kiln.amp.autocast("cpu", ...)."""

    def __init__(self, enabled: bool = True, dtype=_C.bfloat16, cache_enabled: bool = True) -> None:
        warnings.warn("`kiln.cpu.amp.autocast(args...)` is deprecated. Please use `kiln.amp.autocast('cpu', args...)` "
                      "instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """torch.cpu.amp.GradScaler: deprecated for kiln.amp.GradScaler("cpu", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`kiln.cpu.amp.GradScaler(args...)` is deprecated. Please use `kiln.amp.GradScaler('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
