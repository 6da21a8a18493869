"""kiln.multiprocessing, as torch.multiprocessing: Python's multiprocessing with
kiln tensors passed through shared memory (Note [A tensor crosses a process
boundary through /dev/shm])."""

import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports multiprocessing)

from kiln.multiprocessing._reductions import init_reductions

__all__ = list(_multiprocessing.__all__) + ["init_reductions", "get_sharing_strategy", "set_sharing_strategy",
                                            "get_all_sharing_strategies"]

_SHARING_STRATEGIES = {"file_system"}


def get_all_sharing_strategies() -> set[str]:
    """The ways tensors can be shared: kiln has one, named segments in /dev/shm ("file_system")."""
    return set(_SHARING_STRATEGIES)


def get_sharing_strategy() -> str:
    return "file_system"


def set_sharing_strategy(new_strategy: str) -> None:
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"kiln.multiprocessing: unknown sharing strategy {new_strategy!r}; kiln shares tensors "
                         "through /dev/shm ('file_system')")


init_reductions()
