// Connects the memory layer to the core's allocator registry.
// See Note [Allocators are registered] (eager/core/Storage.h).
#include "eager/core/Storage.h"
#include "eager/memory/CpuAllocator.h"

namespace kiln::memory {

namespace {

void release_cpu_block(void* ptr) { cpu_caching_allocator().deallocate(ptr); }

/// Storage memory on the CPU comes from the process-wide caching allocator.
class CpuStorageAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    void* p = cpu_caching_allocator().allocate(nbytes);
    return DataPtr(p, p, p ? &release_cpu_block : nullptr, Device(DeviceType::CPU));
  }
};

CpuStorageAllocator g_cpu_storage_allocator;

/// Runs when libkiln_core is loaded.
const bool g_registered = [] {
  set_allocator(DeviceType::CPU, &g_cpu_storage_allocator);
  return true;
}();

}  // namespace

}  // namespace kiln::memory
