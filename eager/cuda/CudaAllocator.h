// CUDA memory: the raw driver backend under eager/memory's CachingAllocator,
// one caching allocator per device, record_stream, and pinned host memory.
#pragma once

#include <cstddef>

#include "eager/core/Storage.h"
#include "eager/cuda/CudaStream.h"
#include "eager/memory/CachingAllocator.h"

namespace kiln::cuda {

/// The caching allocator of `device` (-1: the current one), created on first use.
/// Throws the no-driver error when CUDA is unavailable.
[[nodiscard]] memory::CachingAllocator& cuda_caching_allocator(int device = -1);

/// Statistics of `device`'s allocator without creating it: zeros when it was
/// never used (or CUDA is unavailable).
[[nodiscard]] memory::MemoryStats cuda_memory_stats(int device);
void cuda_reset_peak_memory_stats(int device);
/// Frees the cached blocks of every device that has an allocator (no-op without CUDA).
void cuda_empty_cache();

/// Marks the storage behind `data` (a CUDA DataPtr from kiln's allocator) as used
/// on `stream`, so its block is not reused until the work queued there so far is
/// done (torch's Tensor.record_stream). No-op for the allocation stream.
void record_stream(const DataPtr& data, const Stream& stream);

/// Page-locked host memory (cuMemHostAlloc) from a caching pool of its own;
/// its DataPtr's device is cpu. Throws the no-driver error without CUDA.
[[nodiscard]] DataPtr allocate_pinned(size_t nbytes);
/// True when `data` came from allocate_pinned (never loads the driver).
[[nodiscard]] bool is_pinned(const DataPtr& data);

}  // namespace kiln::cuda
