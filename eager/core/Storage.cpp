// The per-device allocator registry and storage creation.
#include "eager/core/Storage.h"

#include <array>
#include <atomic>
#include <cstring>

#include "eager/core/Error.h"

namespace kiln {

namespace {
std::array<std::atomic<Allocator*>, kNumDeviceTypes> g_allocators{};
}

void set_allocator(DeviceType type, Allocator* allocator) {
  g_allocators[static_cast<size_t>(type)].store(allocator, std::memory_order_release);
}

Allocator& get_allocator(DeviceType type) {
  Allocator* a = g_allocators[static_cast<size_t>(type)].load(std::memory_order_acquire);
  KILN_CHECK(a != nullptr, "no allocator is registered for device type ", device_type_name(type),
             type == DeviceType::CUDA ? " (is CUDA available? kiln.cuda.is_available() says)" : "");
  return *a;
}

void StorageImpl::resize(size_t nbytes) {
  KILN_CHECK(resizable_, "Trying to resize storage that is not resizable");
  if (nbytes == nbytes_) return;
  if (device().is_meta()) {  // Note [Meta tensors have no data]
    nbytes_ = nbytes;
    return;
  }
  DataPtr fresh = get_allocator(device().type()).allocate(nbytes);
  const size_t keep = nbytes < nbytes_ ? nbytes : nbytes_;
  if (keep > 0 && device().is_cpu()) std::memcpy(fresh.get(), data_.get(), keep);
  data_ = std::move(fresh);
  nbytes_ = nbytes;
}

Storage new_storage(size_t nbytes, Device device) {
  if (device.is_meta()) {
    return make_intrusive<StorageImpl>(DataPtr(nullptr, nullptr, nullptr, Device(DeviceType::Meta)), nbytes,
                                       /*resizable=*/true);
  }
  return make_intrusive<StorageImpl>(get_allocator(device.type()).allocate(nbytes), nbytes,
                                     /*resizable=*/true);
}

}  // namespace kiln
