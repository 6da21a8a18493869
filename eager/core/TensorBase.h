// TensorBase: the tensor handle without the op methods, an intrusive reference
// to a TensorImpl. Copying one shares the same impl (like a Python reference),
// never data. kiln::Tensor (eager/ops/Tensor.h) adds the methods opgen
// generates from the op list; see Note [Tensor above the op list].
#pragma once

#include <utility>

#include "eager/core/TensorImpl.h"

namespace kiln {

// Note [Tensor above the op list]
// -------------------------------
// The core sits below the registry (DESIGN.md, decision 12): nothing in
// eager/core includes generated code. So the handle is split as PyTorch splits
// c10's TensorBase from ATen's generated TensorBody: TensorBase (here) holds
// the impl and the accessors that need no op (sizes, dtype, data_ptr,
// requires_grad, ...); kiln::Tensor (eager/ops/Tensor.h) derives from it,
// adds no data, and declares the op methods (add, view, ...) that tools/opgen
// writes into kiln/generated/TensorMethodDecls.inc. Code below the registry
// that needs only the handle takes a TensorBase; everything else keeps using
// Tensor, which converts to TensorBase for free (a reference to its base).
class TensorBase {
 public:
  TensorBase() = default;
  explicit TensorBase(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  [[nodiscard]] bool defined() const { return static_cast<bool>(impl_); }
  [[nodiscard]] TensorImpl* impl() const { return impl_.get(); }
  [[nodiscard]] const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// True when both handles refer to the same TensorImpl.
  [[nodiscard]] bool is_same(const TensorBase& other) const { return impl_ == other.impl_; }
  [[nodiscard]] uint32_t use_count() const { return impl_.use_count(); }

  [[nodiscard]] IntArrayRef sizes() const { return impl_->sizes(); }
  [[nodiscard]] IntArrayRef strides() const { return impl_->strides(); }
  [[nodiscard]] int64_t size(int64_t dim) const { return impl_->size(dim); }
  [[nodiscard]] int64_t stride(int64_t dim) const { return impl_->stride(dim); }
  [[nodiscard]] int64_t dim() const { return impl_->dim(); }
  [[nodiscard]] int64_t numel() const { return impl_->numel(); }
  [[nodiscard]] int64_t storage_offset() const { return impl_->storage_offset(); }
  [[nodiscard]] DType dtype() const { return impl_->dtype(); }
  [[nodiscard]] int64_t itemsize() const { return impl_->itemsize(); }
  [[nodiscard]] int64_t nbytes() const { return impl_->numel() * impl_->itemsize(); }
  [[nodiscard]] Device device() const { return impl_->device(); }
  [[nodiscard]] bool is_contiguous() const { return impl_->is_contiguous(); }
  [[nodiscard]] const Storage& storage() const { return impl_->storage(); }
  [[nodiscard]] DispatchKeySet key_set() const { return impl_->key_set(); }

  [[nodiscard]] void* data_ptr() const { return impl_->data(); }
  template <typename T>
  [[nodiscard]] T* data_ptr() const {
    return impl_->data_as<T>();
  }

  [[nodiscard]] bool requires_grad() const { return impl_->requires_grad(); }
  void set_requires_grad(bool value) const { impl_->set_requires_grad(value); }
  [[nodiscard]] uint32_t version() const { return impl_->version(); }

 private:
  intrusive_ptr<TensorImpl> impl_;
};

}  // namespace kiln
