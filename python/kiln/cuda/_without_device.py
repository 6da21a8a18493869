"""kiln.cuda's seeding and query surface while kiln has no CUDA device: what a
program calls on a CPU-only machine works or is a no-op exactly where torch's
is (seeding is lazy, memory queries are 0), and what needs a device raises
NoCUDADeviceError (a RuntimeError and, like torch's CPU build, an AssertionError)."""

from __future__ import annotations

from collections import OrderedDict


class NoCUDADeviceError(RuntimeError, AssertionError):
    """A call that needs a CUDA device, made without one."""


def _no_device(name: str):
    def call(*args, **kwargs):
        raise NoCUDADeviceError(f"kiln.cuda.{name}: kiln has no CUDA device (kiln.cuda.is_available() is False)")

    call.__name__ = name
    return call


# Seeding is lazy in torch: recorded for when CUDA initializes, so a no-op here.
def manual_seed(seed) -> None:
    int(seed)


def manual_seed_all(seed) -> None:
    int(seed)


def seed() -> None:
    return None


def seed_all() -> None:
    return None


def set_rng_state(new_state, device="cuda") -> None:
    return None


def set_rng_state_all(new_states) -> None:
    return None


def get_rng_state_all() -> list:
    return []


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def is_tf32_supported() -> bool:
    return False


def empty_cache() -> None:
    return None


def _zero(device=None) -> int:
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero
memory_cached = max_memory_cached = _zero


def memory_stats(device=None) -> OrderedDict:
    return OrderedDict()


def get_arch_list() -> list:
    return []


initial_seed = _no_device("initial_seed")
current_device = _no_device("current_device")
get_device_name = _no_device("get_device_name")
get_device_capability = _no_device("get_device_capability")
get_device_properties = _no_device("get_device_properties")
synchronize = _no_device("synchronize")
get_rng_state = _no_device("get_rng_state")
init = _no_device("init")
ipc_collect = _no_device("ipc_collect")
mem_get_info = _no_device("mem_get_info")
current_stream = _no_device("current_stream")
default_stream = _no_device("default_stream")
set_device = _no_device("set_device")
can_device_access_peer = _no_device("can_device_access_peer")
set_per_process_memory_fraction = _no_device("set_per_process_memory_fraction")
reset_peak_memory_stats = _no_device("reset_peak_memory_stats")
reset_max_memory_allocated = _no_device("reset_max_memory_allocated")
reset_accumulated_memory_stats = _no_device("reset_accumulated_memory_stats")
