// Connects the memory layer to the core's allocator registry.
// See Note [Allocators are registered] (eager/core/Storage.h).
#include "eager/core/Storage.h"
#include "eager/memory/CpuAllocator.h"

namespace kiln::memory {

namespace {

void release_cpu_block(void* handle) { cpu_caching_allocator().deallocate_handle(handle); }

/// Storage memory on the CPU comes from the process-wide caching allocator; the
/// DataPtr's context is the allocation's block handle, so freeing looks nothing up.
class CpuStorageAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    void* handle = nullptr;
    void* p = cpu_caching_allocator().allocate_with_handle(nbytes, &handle);
    return DataPtr(p, handle, p ? &release_cpu_block : nullptr, Device(DeviceType::CPU));
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
