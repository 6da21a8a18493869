// The raw CPU memory source and the process-wide CPU caching allocator.
#include "eager/memory/CpuAllocator.h"

#include <cstdlib>
#include <string_view>

namespace kiln::memory {
namespace {

class CpuRawAllocator final : public RawAllocator {
 public:
  void* raw_alloc(size_t nbytes) override {
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kAlignment, nbytes) != 0) return nullptr;
    return ptr;
  }
  void raw_free(void* ptr, size_t /*nbytes*/) override { std::free(ptr); }
  [[nodiscard]] const char* name() const override { return "cpu"; }
};

/// KILN_NO_MEMORY_CACHING set to anything but "" or "0" turns caching off.
[[nodiscard]] bool caching_disabled_by_environment() {
  const char* value = std::getenv("KILN_NO_MEMORY_CACHING");
  if (value == nullptr) return false;
  const std::string_view text(value);
  return !text.empty() && text != "0";
}

}  // namespace

RawAllocator& cpu_raw_allocator() {
  // Leaked on purpose: it must outlive every static that frees memory at exit.
  static auto* raw = new CpuRawAllocator();
  return *raw;
}

CachingAllocator& cpu_caching_allocator() {
  // Leaked on purpose, as above; its cached segments stay reachable from here.
  static auto* allocator = new CachingAllocator(
      cpu_raw_allocator(),
      CachingAllocatorOptions{.caching_enabled = !caching_disabled_by_environment(), .host_memory = true});
  return *allocator;
}

}  // namespace kiln::memory
