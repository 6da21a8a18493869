"""kiln.cuda: CUDA is loaded with dlopen at first use (DESIGN.md, decision 6).
The CUDA backend is not built yet, so kiln reports no devices."""


def is_available() -> bool:
    """Whether kiln can use a CUDA device (False until the CUDA backend lands)."""
    return False


def device_count() -> int:
    return 0


from kiln.cuda._without_device import (  # noqa: E402
    NoCUDADeviceError, can_device_access_peer, current_device, current_stream, default_stream, empty_cache,
    get_arch_list, get_device_capability, get_device_name, get_device_properties, get_rng_state, get_rng_state_all,
    init, initial_seed, ipc_collect, is_bf16_supported, is_initialized, is_tf32_supported, manual_seed,
    manual_seed_all, max_memory_allocated, max_memory_cached, max_memory_reserved, mem_get_info, memory_allocated,
    memory_cached, memory_reserved, memory_stats, reset_accumulated_memory_stats, reset_max_memory_allocated,
    reset_peak_memory_stats, seed, seed_all, set_device, set_per_process_memory_fraction,
    set_rng_state, set_rng_state_all, synchronize,
)
