// TensorImpl: a tensor's metadata (sizes, strides, offset, dtype, device, keys)
// over a shared Storage, plus the slots later layers fill (autograd, Python).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "eager/core/ArrayRef.h"
#include "eager/core/DType.h"
#include "eager/core/Device.h"
#include "eager/core/DispatchKeySet.h"
#include "eager/core/IntrusivePtr.h"
#include "eager/core/Storage.h"

namespace kiln {

/// Counts in-place writes. Shared by a tensor and all its views, so autograd's
/// saved values can notice a write through any alias (issue: autograd).
struct VersionCounter : IntrusiveTarget {
  std::atomic<uint32_t> version{0};
};

/// Autograd state of a tensor. eager/autograd supplies the real implementation;
/// the core only needs to ask and store. See Note [Autograd meta is a slot].
class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
  [[nodiscard]] virtual bool requires_grad() const = 0;
  virtual void set_requires_grad(bool value) = 0;
};

// Note [Autograd meta is a slot]
// ------------------------------
// TensorImpl owns a pointer to AutogradMetaInterface and creates it through a
// factory that the autograd layer installs (set_autograd_meta_factory). Until
// that layer exists the factory makes a meta that only records requires_grad.
// Tensors that never require grad keep the slot empty, so plain inference
// tensors pay one null pointer.
using AutogradMetaFactory = std::unique_ptr<AutogradMetaInterface> (*)();
void set_autograd_meta_factory(AutogradMetaFactory factory);

/// How a view came to be, which decides whether autograd lets it be modified
/// in place (PyTorch's CreationMeta). See Note [Views know their base]
/// (eager/autograd/ViewAutograd.h).
enum class ViewCreation : uint8_t {
  Default,      // a view op in grad mode: in-place changes rebase the base's history
  NoGradMode,   // made while grad mode was off: in-place with grad mode on is an error
  MultiOutput,  // one of several views one op returned (split, unbind): in-place is an error
};

class TensorImpl : public IntrusiveTarget {
 public:
  /// A tensor over `storage` with the given geometry. The key set is derived
  /// from the device (its backend key).
  TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  ~TensorImpl() override;

  [[nodiscard]] IntArrayRef sizes() const { return sizes_; }
  [[nodiscard]] IntArrayRef strides() const { return strides_; }
  [[nodiscard]] int64_t size(int64_t dim) const;    // dim may be negative; IndexError out of range
  [[nodiscard]] int64_t stride(int64_t dim) const;  // dim may be negative; IndexError out of range
  [[nodiscard]] int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  [[nodiscard]] int64_t numel() const { return numel_; }
  [[nodiscard]] int64_t storage_offset() const { return storage_offset_; }
  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] int64_t itemsize() const { return kiln::itemsize(dtype_); }
  [[nodiscard]] Device device() const { return storage_->device(); }
  [[nodiscard]] bool is_contiguous() const { return is_contiguous_; }
  [[nodiscard]] DispatchKeySet key_set() const { return key_set_; }
  [[nodiscard]] const Storage& storage() const { return storage_; }

  /// Address of element [0, 0, ...] (storage data plus offset). NotImplementedError
  /// for a meta tensor, which has no data (Note [Meta tensors have no data], Storage.h).
  [[nodiscard]] void* data() const {
    void* base = storage_->data();
    if (base == nullptr && storage_->device().is_meta()) [[unlikely]] fail_meta_data_access();
    return static_cast<char*>(base) + storage_offset_ * itemsize();
  }
  template <typename T>
  [[nodiscard]] T* data_as() const {
    return static_cast<T*>(data());
  }

  /// Whether the tensor lives on the meta device (no data).
  [[nodiscard]] bool is_meta() const { return storage_->device().is_meta(); }

  /// Replaces sizes, strides and offset (views, resize). Checks the new
  /// geometry stays inside the storage. See check_in_bounds.
  void set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);

  /// Gives the tensor a new shape with contiguous strides, growing the storage
  /// when it is too small (PyTorch's resize_).
  void resize(IntArrayRef sizes);

  void set_key_set(DispatchKeySet keys) { key_set_ = keys; }

  // --- version counter (shared with views) ---
  // A tensor counts its own writes until its first view is made; then the
  // count moves into a VersionCounter that the views share. Most tensors
  // never get a view, so they never allocate one.
  [[nodiscard]] uint32_t version() const {
    return version_ ? version_->version.load(std::memory_order_relaxed) : local_version_;
  }
  void bump_version() {
    if (version_) {
      version_->version.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++local_version_;
    }
  }
  /// The shared counter, created on first use.
  [[nodiscard]] const intrusive_ptr<VersionCounter>& version_counter();
  void share_version_counter(const intrusive_ptr<VersionCounter>& vc) { version_ = vc; }

  // --- view base: see Note [Views know their base] (eager/autograd/ViewAutograd.h) ---
  /// The tensor this one is a view of (the root: never itself a view), or null.
  [[nodiscard]] TensorImpl* view_base() const { return view_base_.get(); }
  [[nodiscard]] ViewCreation view_creation() const { return view_creation_; }
  void set_view_base(intrusive_ptr<TensorImpl> base, ViewCreation creation) {
    view_base_ = std::move(base);
    view_creation_ = creation;
    view_version_ = version();
  }
  /// The shared version when the view was made: a view with no history of its
  /// own follows the base's once a write moved it past this.
  [[nodiscard]] uint32_t view_version() const { return view_version_; }
  void set_view_creation(ViewCreation creation) { view_creation_ = creation; }

  // --- autograd slot ---
  /// A view requires grad when its base does, even one made with grad mode
  /// off (PyTorch's rule; Note [Views know their base]).
  [[nodiscard]] bool requires_grad() const {
    return (autograd_meta_ && autograd_meta_->requires_grad()) || (view_base_ && view_base_->requires_grad());
  }
  /// RuntimeError for non-floating dtypes, as PyTorch.
  void set_requires_grad(bool value);
  [[nodiscard]] AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) { autograd_meta_ = std::move(meta); }

  /// A 0-dim tensor made from a Python number for an op; it promotes by
  /// category only (Note [Promotion by category], eager/kernels/TypePromotion.h).
  [[nodiscard]] bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool value) { is_wrapped_number_ = value; }

  // --- Python object slot: see Note [Tensor and its Python object] (python/csrc) ---
  [[nodiscard]] void* pyobj() const { return pyobj_; }
  void set_pyobj(void* obj) { pyobj_ = obj; }

 private:
  void refresh_numel_and_contiguity();
  [[noreturn]] static void fail_meta_data_access();

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_;
  bool is_contiguous_ = true;
  bool is_wrapped_number_ = false;
  DispatchKeySet key_set_;
  intrusive_ptr<VersionCounter> version_;  // null until shared
  uint32_t local_version_ = 0;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
  intrusive_ptr<TensorImpl> view_base_;  // null unless a view
  ViewCreation view_creation_ = ViewCreation::Default;
  uint32_t view_version_ = 0;
  void* pyobj_ = nullptr;  // borrowed; the Python object owns this impl
};

/// Throws unless every element addressed by (sizes, strides, offset) lies in
/// a storage of `storage_nbytes` bytes. Negative strides are rejected.
void check_in_bounds(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset, int64_t itemsize,
                     size_t storage_nbytes);

/// Wraps a dim (possibly negative) into [0, ndim); IndexError naming the range otherwise.
[[nodiscard]] int64_t wrap_dim(int64_t dim, int64_t ndim);

}  // namespace kiln
