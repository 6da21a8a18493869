"""kiln.cuda: NVIDIA GPUs, loaded with dlopen at first use (DESIGN.md, decision 6).

kiln builds and imports without CUDA: ``is_available()`` is False without a driver and every
call that needs a device raises RuntimeError "Found no NVIDIA driver on your system. ...".
NVRTC and cuBLAS come from the NVIDIA wheels (scripts/setup.sh); _libraries.py tells the
loader where they are.
"""

from kiln.cuda._device import (  # noqa: F401
    current_device,
    device,
    device_count,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from kiln.cuda._libraries import register_library_dirs as _register_library_dirs
from kiln.cuda._memory import (  # noqa: F401
    OutOfMemoryError,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
)
from kiln.cuda._streams import (  # noqa: F401
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

_register_library_dirs()
# The seeding and query surface the device modules above do not implement yet
# (seeding, rng state, peer access, legacy memory names): what torch's CPU build does.
from kiln.cuda._without_device import (  # noqa: E402,F401
    NoCUDADeviceError, can_device_access_peer, get_arch_list, get_rng_state, get_rng_state_all, initial_seed,
    ipc_collect, is_bf16_supported, is_tf32_supported, manual_seed, manual_seed_all, max_memory_cached,
    mem_get_info, memory_cached, reset_accumulated_memory_stats, reset_max_memory_allocated, seed, seed_all,
    set_per_process_memory_fraction, set_rng_state, set_rng_state_all,
)
