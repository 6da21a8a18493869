// Tensor: the user-facing handle, an intrusive reference to a TensorImpl.
// Copying a Tensor shares the same impl (like a Python reference), never data.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "eager/core/MemoryFormat.h"
#include "eager/core/Scalar.h"
#include "eager/core/TensorImpl.h"

namespace kiln {

class Tensor;
/// Op arguments of schema type Tensor[] and Tensor?[] (see tools/opgen).
using TensorList = std::span<const Tensor>;
using OptionalTensorList = std::span<const std::optional<Tensor>>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  [[nodiscard]] bool defined() const { return static_cast<bool>(impl_); }
  [[nodiscard]] TensorImpl* impl() const { return impl_.get(); }
  [[nodiscard]] const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /// True when both handles refer to the same TensorImpl.
  [[nodiscard]] bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
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

  // The op methods (add, view, transpose, ...), generated from eager/ops/ops.yaml
  // by tools/opgen into the build directory; defined in its TensorMethods.cpp.
#include "kiln/generated/TensorMethodDecls.inc"

 private:
  intrusive_ptr<TensorImpl> impl_;
};

}  // namespace kiln
