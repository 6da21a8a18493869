// The CUDA raw allocator, the per-device caching allocators and pinned memory.
#include "eager/cuda/CudaAllocator.h"

#include <array>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "eager/core/Error.h"
#include "eager/cuda/CudaDevice.h"

namespace kiln::cuda {

namespace {

constexpr int kMaxDevices = 64;

/// cuMemAlloc / cuMemFree on one device. The pool calls it with its mutex held.
class CudaRawAllocator final : public memory::RawAllocator {
 public:
  explicit CudaRawAllocator(int device) : device_(device), name_("CUDA (cuda:" + std::to_string(device) + ")") {}
  void* raw_alloc(size_t nbytes) override {
    DeviceGuard guard(device_);
    CUdeviceptr p = 0;
    return driver().cuMemAlloc(&p, nbytes) == kCudaSuccess ? reinterpret_cast<void*>(p) : nullptr;
  }
  void raw_free(void* ptr, size_t /*nbytes*/) override {
    DeviceGuard guard(device_);
    // cuMemFree waits for the device, so no stream still uses the segment.
    check(driver().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
  }
  [[nodiscard]] const char* name() const override { return name_.c_str(); }

 private:
  int device_;
  std::string name_;
};

// Note [record_stream on CUDA]
// ----------------------------
// eager/memory's pool reuses a freed block on its allocation stream only (Note
// [Stream-ordered reuse]). A tensor that record_stream marked as used on other
// streams must not reach the pool until those streams finish the work queued
// so far. So each CUDA DataPtr's context (AllocationContext) lists the extra
// streams; its deleter records one event per stream and parks the block on the
// device's pending list, and each allocate (and empty_cache) first hands every
// parked block whose events have all completed to the pool. The pool itself
// stays device-agnostic.
struct AllocationContext {
  void* ptr;
  int device;
  int64_t stream_id;
  std::vector<Stream> extra_streams;
};

struct PendingFree {
  void* ptr;
  std::vector<std::unique_ptr<Event>> events;
};

struct DeviceAllocator {
  explicit DeviceAllocator(int device) : raw(device), pool(raw) {}
  CudaRawAllocator raw;
  memory::CachingAllocator pool;
  std::mutex pending_mutex;
  std::deque<PendingFree> pending;

  void process_pending() {
    std::lock_guard<std::mutex> lock(pending_mutex);
    for (auto it = pending.begin(); it != pending.end();) {
      bool done = true;
      for (const auto& e : it->events) done = done && e->query();
      if (done) {
        pool.deallocate(it->ptr);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
};

std::mutex g_devices_mutex;
std::array<std::unique_ptr<DeviceAllocator>, kMaxDevices> g_devices;

DeviceAllocator* existing(int device) {
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  return device >= 0 && device < kMaxDevices ? g_devices[static_cast<size_t>(device)].get() : nullptr;
}

DeviceAllocator& device_allocator(int device) {
  device = checked_device(device);
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  auto& slot = g_devices[static_cast<size_t>(device)];
  if (!slot) slot = std::make_unique<DeviceAllocator>(device);
  return *slot;
}

void release_cuda_block(void* ctx) {
  auto* c = static_cast<AllocationContext*>(ctx);
  DeviceAllocator* d = existing(c->device);
  if (d != nullptr) {
    if (c->extra_streams.empty()) {
      d->pool.deallocate(c->ptr);
    } else {
      PendingFree pending{c->ptr, {}};
      for (const Stream& s : c->extra_streams) {
        auto e = std::make_unique<Event>();
        e->record(s);
        pending.events.push_back(std::move(e));
      }
      std::lock_guard<std::mutex> lock(d->pending_mutex);
      d->pending.push_back(std::move(pending));
    }
  }
  delete c;
}

/// Storage memory for DeviceType::CUDA: the current device's caching allocator,
/// on the current stream. Registered at load time; the driver is touched only
/// when a CUDA tensor is made, which raises the no-driver error without one.
class CudaStorageAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    const int device = current_device();
    DeviceAllocator& d = device_allocator(device);
    if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(DeviceType::CUDA, static_cast<int8_t>(device)));
    d.process_pending();
    const Stream stream = current_stream(device);
    void* p = d.pool.allocate(nbytes, stream.id());
    auto* ctx = new AllocationContext{p, device, stream.id(), {}};
    return DataPtr(p, ctx, &release_cuda_block, Device(DeviceType::CUDA, static_cast<int8_t>(device)));
  }
};

CudaStorageAllocator g_cuda_storage_allocator;

const bool g_registered = [] {
  set_allocator(DeviceType::CUDA, &g_cuda_storage_allocator);
  return true;
}();

// --- pinned host memory --------------------------------------------------------

class PinnedRawAllocator final : public memory::RawAllocator {
 public:
  void* raw_alloc(size_t nbytes) override {
    activate_context(0);
    void* p = nullptr;
    return driver().cuMemHostAlloc(&p, nbytes, kMemHostAllocPortable) == kCudaSuccess ? p : nullptr;
  }
  void raw_free(void* ptr, size_t /*nbytes*/) override { check(driver().cuMemFreeHost(ptr), "cuMemFreeHost"); }
  [[nodiscard]] const char* name() const override { return "CUDA pinned host memory"; }
};

memory::CachingAllocator& pinned_pool() {
  static PinnedRawAllocator* raw = new PinnedRawAllocator();
  static memory::CachingAllocator* pool = new memory::CachingAllocator(*raw);  // never destroyed
  return *pool;
}

void release_pinned(void* ptr) { pinned_pool().deallocate(ptr); }

}  // namespace

memory::CachingAllocator& cuda_caching_allocator(int device) { return device_allocator(device).pool; }

memory::MemoryStats cuda_memory_stats(int device) {
  if (!driver_available()) return {};
  DeviceAllocator* d = existing(checked_device(device));
  return d ? d->pool.stats() : memory::MemoryStats{};
}

void cuda_reset_peak_memory_stats(int device) {
  if (!driver_available()) return;
  DeviceAllocator* d = existing(checked_device(device));
  if (d) d->pool.reset_peak_stats();
}

void cuda_empty_cache() {
  if (!driver_available()) return;
  for (int i = 0; i < kMaxDevices; ++i) {
    if (DeviceAllocator* d = existing(i)) {
      d->process_pending();
      d->pool.empty_cache();
    }
  }
}

void record_stream(const DataPtr& data, const Stream& stream) {
  if (data.deleter() != &release_cuda_block) return;  // not from kiln's CUDA allocator
  auto* c = static_cast<AllocationContext*>(data.context());
  if (stream.id() == c->stream_id && stream.device() == c->device) return;
  for (const Stream& s : c->extra_streams) {
    if (s == stream) return;
  }
  c->extra_streams.push_back(stream);
}

DataPtr allocate_pinned(size_t nbytes) {
  require_cuda();
  void* p = pinned_pool().allocate(nbytes);
  return DataPtr(p, p, p ? &release_pinned : nullptr, Device(DeviceType::CPU));
}

bool is_pinned(const DataPtr& data) { return data.deleter() == &release_pinned; }

}  // namespace kiln::cuda
