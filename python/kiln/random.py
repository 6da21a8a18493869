"""kiln.random: seeding and the state of the default CPU generator, as torch.random.

kiln's generators are counter-based Philox4x32-10 streams (a seed and an offset),
so the numbers an op draws do not depend on the thread count; their states
(``get_state``) are kiln's own and cannot be exchanged with torch's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator as _Iterator

from kiln import _C

default_generator = _C.default_generator
Generator = _C.Generator

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng"]


def set_rng_state(new_state) -> None:
    """Sets the default generator's state (a uint8 tensor from :func:`get_rng_state`)."""
    default_generator.set_state(new_state)


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def manual_seed(seed) -> "_C.Generator":
    """Seeds the default generator (and rewinds its stream); returns it."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Seeds the default generator from a nondeterministic source; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda") -> _Iterator:
    """Restores the default generator's state on exit (kiln has only the CPU generator)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
