// The raw CPU memory source and the process-wide CPU caching allocator.
#pragma once

#include "eager/memory/CachingAllocator.h"
#include "eager/memory/RawAllocator.h"

namespace kiln::memory {

/// The process-wide CPU allocator. Caching is on unless the environment variable
/// KILN_NO_MEMORY_CACHING=1 was set when it was first used; then every
/// allocate/deallocate goes straight to the OS, for debugging with ASan or
/// valgrind. Never destroyed, so tensors freed during static destruction are safe.
[[nodiscard]] CachingAllocator& cpu_caching_allocator();

/// The CPU's raw memory: 64-byte aligned blocks from posix_memalign, freed with free.
[[nodiscard]] RawAllocator& cpu_raw_allocator();

}  // namespace kiln::memory
