"""kiln.amp: torch.amp's autocast, custom_fwd / custom_bwd, is_autocast_available
and GradScaler (kiln.autocast is kiln.amp.autocast, as torch.autocast is
torch.amp.autocast).

kiln does not autocast ops: an enabled autocast region keeps torch's autocast
state (flag, dtype, cache flag, nesting) but every op inside runs in its
inputs' dtypes. GradScaler's loss scaling, inf/NaN step skipping and scale
updates are torch's exactly (see grad_scaler.py).

Importing kiln.amp also installs torch.cuda.amp's deprecated spellings as
kiln.cuda.amp (kiln.amp._cuda_amp), unless kiln.cuda already has an ``amp``;
torch.cpu.amp's are kiln.amp._cpu_amp, waiting for a kiln.cpu package.
"""

import sys

from kiln import cuda
from kiln.amp.autocast_mode import (
    _enter_autocast, _exit_autocast, autocast, custom_bwd, custom_fwd, is_autocast_available,
)
from kiln.amp.grad_scaler import GradScaler
from kiln.amp import _cpu_amp, _cuda_amp  # noqa: E402,F401  (the deprecated device spellings)

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]


def _install_cuda_spellings() -> None:
    """kiln.cuda.amp: the deprecated torch.cuda.amp names (``from torch.cuda.amp import autocast,
    GradScaler`` is common in training scripts)."""
    if not hasattr(cuda, "amp"):
        cuda.amp = _cuda_amp
        sys.modules.setdefault("kiln.cuda.amp", _cuda_amp)


_install_cuda_spellings()
