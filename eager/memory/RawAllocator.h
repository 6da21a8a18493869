// The interface a device implements to hand raw memory to the caching allocator.
#pragma once

#include <cstddef>

namespace kiln::memory {

/// A device's raw memory source: malloc-like on CPU, cudaMalloc-like on CUDA.
///
/// Required hooks: all three. The caching allocator calls them with its mutex
/// held, so an implementation needs no locking of its own for that caller.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;

  /// Returns `nbytes` (> 0) of memory aligned to at least 64 bytes, or nullptr
  /// when the device has none left. Never throws.
  virtual void* raw_alloc(size_t nbytes) = 0;

  /// Returns memory from raw_alloc; `nbytes` is the size it was asked for.
  virtual void raw_free(void* ptr, size_t nbytes) = 0;

  /// The device, for messages: "cpu", "cuda:0".
  [[nodiscard]] virtual const char* name() const = 0;
};

}  // namespace kiln::memory
