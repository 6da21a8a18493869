// Storage: a refcounted block of bytes on one device, shared by every view of it.
#pragma once

#include <cstddef>
#include <utility>

#include "eager/core/Device.h"
#include "eager/core/IntrusivePtr.h"

namespace kiln {

/// Owns a data pointer through a context and a deleter, so memory from the
/// caching allocator, a numpy array or a DLPack capsule is released the way
/// it was obtained. Move-only.
class DataPtr {
 public:
  using Deleter = void (*)(void* ctx);

  DataPtr() = default;
  DataPtr(void* data, void* ctx, Deleter deleter, Device device)
      : data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        ctx_(std::exchange(o.ctx_, nullptr)),
        deleter_(std::exchange(o.deleter_, nullptr)),
        device_(o.device_) {}
  DataPtr& operator=(DataPtr&& o) noexcept {
    if (this != &o) {
      clear();
      data_ = std::exchange(o.data_, nullptr);
      ctx_ = std::exchange(o.ctx_, nullptr);
      deleter_ = std::exchange(o.deleter_, nullptr);
      device_ = o.device_;
    }
    return *this;
  }
  ~DataPtr() { clear(); }

  [[nodiscard]] void* get() const { return data_; }
  [[nodiscard]] void* context() const { return ctx_; }
  [[nodiscard]] Deleter deleter() const { return deleter_; }
  [[nodiscard]] Device device() const { return device_; }

  void clear() {
    if (deleter_) deleter_(ctx_);
    data_ = nullptr;
    ctx_ = nullptr;
    deleter_ = nullptr;
  }

 private:
  void* data_ = nullptr;
  void* ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_;
};

/// A device's memory source. The memory layer (eager/memory) registers one per
/// device type; the core only sees this interface. See Note [Allocators are registered].
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns a DataPtr to at least `nbytes` bytes (64-byte aligned), or throws.
  virtual DataPtr allocate(size_t nbytes) = 0;
};

// Note [Allocators are registered]
// --------------------------------
// eager/core may not include eager/memory (data flows one way, DESIGN.md), yet
// Storage needs memory. So the core declares Allocator and a registry keyed by
// device type, and eager/memory fills the registry at load time (the CPU
// caching allocator) or at first use (CUDA). Tests can swap in their own.
void set_allocator(DeviceType type, Allocator* allocator);
/// The registered allocator for a device type; RuntimeError if none.
[[nodiscard]] Allocator& get_allocator(DeviceType type);

/// The shared block behind tensors. Views hold the same StorageImpl.
class StorageImpl : public IntrusiveTarget {
 public:
  StorageImpl(DataPtr data, size_t nbytes, bool resizable)
      : data_(std::move(data)), nbytes_(nbytes), resizable_(resizable) {}

  [[nodiscard]] void* data() const { return data_.get(); }
  [[nodiscard]] size_t nbytes() const { return nbytes_; }
  [[nodiscard]] Device device() const { return data_.device(); }
  [[nodiscard]] bool resizable() const { return resizable_; }
  [[nodiscard]] const DataPtr& data_ptr() const { return data_; }

  /// Grows or shrinks the block in place (every view sees the new memory),
  /// keeping the first min(old, new) bytes. RuntimeError when not resizable
  /// (memory owned by numpy or another DLPack producer).
  void resize(size_t nbytes);

 private:
  DataPtr data_;
  size_t nbytes_;
  bool resizable_;
};

using Storage = intrusive_ptr<StorageImpl>;

// Note [Meta tensors have no data]
// --------------------------------
// A meta tensor (device "meta", DESIGN.md decision 10) has sizes, strides, a
// dtype and a storage that only counts bytes: its DataPtr is null and nothing
// is allocated, so a meta tensor of any size is free. Ops reach it through the
// Meta dispatch key, whose kernels compute only the output's metadata (for
// pointwise and reduction ops, TensorIterator's shape-and-type pass without the
// loop: Note [TensorIterator on meta tensors], eager/kernels/TensorIterator.h).
// Reading the data of a meta tensor is an error, never a null dereference:
// TensorImpl::data() raises NotImplementedError for it.
/// A fresh storage of `nbytes` bytes from the device's registered allocator
/// (for the meta device: no allocation, only the byte count).
[[nodiscard]] Storage new_storage(size_t nbytes, Device device);

}  // namespace kiln
