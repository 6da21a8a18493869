"""kiln.nn.attention: torch.nn.attention's SDPBackend enum and sdpa_kernel
context manager, and the flash-attention implementation registry.

kiln has one scaled_dot_product_attention for the CPU (the fused CPU kernel
where it applies, else the matmul/softmax composite; kiln/nn/_attention.py)
and runs it whatever backends are enabled. sdpa_kernel validates its argument
as torch does and keeps the enabled-backend flags and priority order torch
keeps (torch holds them in torch.backends.cuda; kiln, which has no
kiln.backends, holds them here), restoring them on exit, so code that selects
backends runs unchanged; the selection changes no computation. In particular
where torch raises "No viable backend" (every backend disabled, or only CUDA
ones on the CPU), kiln still computes the attention.

The flash-attention registry (register_/activate_/list_/current_/
restore_flash_attention_impl) works as torch's; kiln registers no
implementations of its own, so list_flash_attention_impls() starts empty
(torch lists its CUDA "FA3" and "FA4"). torch's SDPAParams and
can_use_flash_attention / can_use_efficient_attention (CUDA kernel checks)
are left out.
"""

from __future__ import annotations

import contextlib
import enum
import logging
from typing import Callable, Iterable, Optional, Union

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

# torch warns about why fused kernels were not used when this is True; kiln has no such choice to explain.
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The scaled_dot_product_attention backends, with torch's values (int() gives them)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    __index__ = __int__


# The backends' switch names (torch.backends.cuda's *_sdp_enabled) and their enum members, in torch's order.
_backend_names = {"cudnn": "CUDNN_ATTENTION", "flash": "FLASH_ATTENTION", "mem_efficient": "EFFICIENT_ATTENTION",
                  "math": "MATH", "overrideable": "OVERRIDEABLE"}
_ENABLED = dict.fromkeys(_backend_names, True)
_PRIORITY = [int(SDPBackend.FLASH_ATTENTION), int(SDPBackend.EFFICIENT_ATTENTION), int(SDPBackend.MATH),
             int(SDPBackend.CUDNN_ATTENTION), int(SDPBackend.OVERRIDEABLE)]


def _get_sdp_enabled(name: str) -> bool:
    """Whether backend ``name`` ("flash", "math", ...) is enabled (torch.backends.cuda.<name>_sdp_enabled)."""
    return _ENABLED[name]


def _set_sdp_use(name: str, enabled: bool) -> None:
    _ENABLED[name] = bool(enabled)


def _get_sdp_priority_order() -> list:
    return list(_PRIORITY)


def _set_sdp_priority_order(order) -> None:
    _PRIORITY[:] = [int(backend) for backend in order]


def _backend_from_string(name: str) -> SDPBackend:
    return getattr(SDPBackend, name)


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list:
    """The enabled backends, in priority order when ``with_priority``."""
    backends = [getattr(SDPBackend, member) for name, member in _backend_names.items() if _ENABLED[name]]
    if with_priority:
        backends.sort(key=lambda backend: _PRIORITY.index(int(backend)))
    return backends


def _sdpa_kernel(backends: Iterable, set_priority: bool = False) -> None:
    """Enables exactly ``backends``; with ``set_priority``, puts them first in the priority order, in their order."""
    backends = list(backends)
    for name, member in _backend_names.items():
        _set_sdp_use(name, getattr(SDPBackend, member) in backends)
    if set_priority:
        order = [int(backend) for backend in backends]
        order += [backend for backend in _PRIORITY if backend not in order]
        _set_sdp_priority_order(order)


@contextlib.contextmanager
def sdpa_kernel(backends: Union[list, SDPBackend], set_priority: bool = False):
    """torch.nn.attention.sdpa_kernel: enables only ``backends`` (an SDPBackend or a list of them;
    in priority order with ``set_priority``) inside the block and restores the previous flags
    after it. kiln runs its one CPU attention regardless of the flags."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)


@contextlib.contextmanager
def _sdpa_kernel_variadic(*backends: SDPBackend):
    with sdpa_kernel(list(backends)):
        yield


def _get_flash_version() -> str:
    """The flash-attention release torch's flash backend follows (torch's answer; kiln has no flash kernel)."""
    return "2.5.7"


# --- the flash-attention implementation registry -------------------------------------------------

_logger = logging.getLogger(__name__)
_RegisterFn = Callable[..., Optional[object]]
_FLASH_ATTENTION_IMPLS: dict = {}
_FLASH_ATTENTION_ACTIVE: Optional[tuple] = None


def register_flash_attention_impl(impl: str, *, register_fn: _RegisterFn) -> None:
    """Records ``register_fn`` as the activator of flash-attention implementation ``impl``."""
    _FLASH_ATTENTION_IMPLS[impl] = register_fn


def activate_flash_attention_impl(impl: str) -> None:
    """Restores the default, then calls ``impl``'s register_fn, keeping the handle it returns (if any)."""
    global _FLASH_ATTENTION_ACTIVE
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _FLASH_ATTENTION_IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: "
                         f"{list_flash_attention_impls()}")
    handle = register_fn()
    if handle is not None:
        _FLASH_ATTENTION_ACTIVE = (impl, handle)


def list_flash_attention_impls() -> list:
    """The registered implementations' names, sorted."""
    return sorted(_FLASH_ATTENTION_IMPLS)


def current_flash_attention_impl() -> Optional[str]:
    """The activated implementation's name, or None for the default."""
    return None if _FLASH_ATTENTION_ACTIVE is None else _FLASH_ATTENTION_ACTIVE[0]


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Removes the activated implementation (its handle's ``remove()``), back to the default."""
    global _FLASH_ATTENTION_ACTIVE
    handle = None if _FLASH_ATTENTION_ACTIVE is None else _FLASH_ATTENTION_ACTIVE[1]
    if handle is not None:
        handle.remove()
    elif _raise_warn:
        _logger.warning("Trying to restore default FA2 impl when no custom impl was activated")
    _FLASH_ATTENTION_ACTIVE = None

