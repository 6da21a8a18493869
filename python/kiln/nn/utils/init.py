"""kiln.nn.utils.skip_init: a module built without spending its initialisation,
as torch.nn.utils.skip_init.

torch builds the module on the meta device and allocates it empty; kiln has no
meta device, so it builds the module normally and then restores the global RNG
state, leaving the random stream exactly as torch's skip_init leaves it. The
parameter values are to be treated as uninitialized (they are whatever the
module's own init drew)."""

from __future__ import annotations

import inspect
from kiln import random
from kiln.nn.modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)``; the class must accept a ``device`` argument, as torch requires."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    state = random.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        random.set_rng_state(state)
