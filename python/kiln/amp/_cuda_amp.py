"""torch.cuda.amp's deprecated spellings, for kiln (installed as kiln.cuda.amp by
kiln.amp): autocast (device "cuda", dtype float16 by default), custom_fwd,
custom_bwd and GradScaler (device "cuda"), each warning FutureWarning and then
being kiln.amp's, plus amp_definitely_not_available. kiln has no CUDA, so the
autocast and the scaler then warn and disable themselves, as torch's do on a
machine without CUDA.
"""

from __future__ import annotations

import functools
import warnings

from kiln import _C, cuda
from kiln.amp import autocast_mode, grad_scaler
from kiln.amp.grad_scaler import OptState  # noqa: F401  (torch.cuda.amp.grad_scaler re-exports it)

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]


def amp_definitely_not_available() -> bool:
    """True: kiln has no CUDA (and no torch_xla)."""
    return not cuda.is_available()


class autocast(autocast_mode.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True): deprecated
    for kiln.amp.autocast("cuda", ...)."""

    def __init__(self, enabled: bool = True, dtype=_C.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`kiln.cuda.amp.autocast(args...)` is deprecated. Please use `kiln.amp.autocast('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: deprecated for kiln.amp.custom_fwd(..., device_type='cuda')."""
    warnings.warn("`kiln.cuda.amp.custom_fwd(args...)` is deprecated. Please use `kiln.amp.custom_fwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """torch.cuda.amp.custom_bwd: deprecated for kiln.amp.custom_bwd(..., device_type='cuda')."""
    warnings.warn("`kiln.cuda.amp.custom_bwd(args...)` is deprecated. Please use `kiln.amp.custom_bwd(args..., "
                  "device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return functools.partial(autocast_mode.custom_bwd, device_type="cuda")(bwd)


class GradScaler(grad_scaler.GradScaler):
    """torch.cuda.amp.GradScaler: deprecated for kiln.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`kiln.cuda.amp.GradScaler(args...)` is deprecated. Please use `kiln.amp.GradScaler('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
