// AddressSanitizer's manual poisoning, for the caching allocator's host pools;
// no-ops in a build without ASan. See Note [Cached blocks are poisoned].
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define KILN_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ADDRESS_SANITIZER 1
#endif
#endif

#ifdef KILN_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace kiln::memory {

/// Marks [ptr, ptr + nbytes) unaddressable: any access is an ASan report.
inline void asan_poison(void* ptr, size_t nbytes) {
#ifdef KILN_ADDRESS_SANITIZER
  ASAN_POISON_MEMORY_REGION(ptr, nbytes);
#else
  (void)ptr;
  (void)nbytes;
#endif
}

/// Marks [ptr, ptr + nbytes) addressable again.
inline void asan_unpoison(void* ptr, size_t nbytes) {
#ifdef KILN_ADDRESS_SANITIZER
  ASAN_UNPOISON_MEMORY_REGION(ptr, nbytes);
#else
  (void)ptr;
  (void)nbytes;
#endif
}

}  // namespace kiln::memory
