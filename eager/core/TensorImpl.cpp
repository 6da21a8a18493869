// TensorImpl geometry, bounds checks and the autograd slot.
#include "eager/core/TensorImpl.h"

#include <atomic>

#include "eager/core/Error.h"

namespace kiln {

namespace {

/// Records requires_grad only; replaced by eager/autograd's meta when it loads.
class FlagOnlyAutogradMeta final : public AutogradMetaInterface {
 public:
  bool requires_grad() const override { return requires_grad_; }
  void set_requires_grad(bool value) override { requires_grad_ = value; }

 private:
  bool requires_grad_ = false;
};

std::unique_ptr<AutogradMetaInterface> make_flag_only_meta() { return std::make_unique<FlagOnlyAutogradMeta>(); }

std::atomic<AutogradMetaFactory> g_autograd_meta_factory{&make_flag_only_meta};

}  // namespace

void set_autograd_meta_factory(AutogradMetaFactory factory) {
  g_autograd_meta_factory.store(factory ? factory : &make_flag_only_meta);
}

int64_t wrap_dim(int64_t dim, int64_t ndim) {
  const int64_t n = ndim > 0 ? ndim : 1;  // a 0-dim tensor accepts dim 0 and -1, as PyTorch
  KILN_CHECK_INDEX(dim >= -n && dim < n, "Dimension out of range (expected to be in range of [", -n, ", ",
                   n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

void check_in_bounds(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset, int64_t itemsize,
                     size_t storage_nbytes) {
  KILN_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape: ", sizes.size(),
             " sizes but ", strides.size(), " strides");
  KILN_CHECK(storage_offset >= 0, "Tensor: invalid storage offset ", storage_offset);
  int64_t max_offset = 0;  // largest element index reached, +1
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KILN_CHECK(sizes[i] >= 0, "Trying to create tensor with negative dimension ", sizes[i], ": ", sizes);
    KILN_CHECK(strides[i] >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ",
               strides);
    if (sizes[i] == 0) empty = true;
    max_offset += (sizes[i] - 1) * strides[i];
  }
  if (empty) return;
  const int64_t needed_bytes = (storage_offset + max_offset + 1) * itemsize;
  KILN_CHECK(needed_bytes <= static_cast<int64_t>(storage_nbytes), "setStorage: sizes ", sizes, ", strides ",
             strides, ", storage offset ", storage_offset, ", and itemsize ", itemsize,
             " requiring a storage size of ", needed_bytes, " are out of bounds for storage of size ",
             storage_nbytes);
}

TensorImpl::TensorImpl(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(strides),
      storage_offset_(storage_offset),
      dtype_(dtype),
      key_set_(backend_key(storage_->device().type())) {
  // set_geometry's work, with the vectors built in place (a fresh tensor per op result).
  check_in_bounds(sizes, strides, storage_offset, itemsize(), storage_->nbytes());
  refresh_numel_and_contiguity();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::fail_meta_data_access() {
  KILN_FAIL(NotImplemented, "Cannot access the data of a meta tensor; meta tensors have no data");
}

const intrusive_ptr<VersionCounter>& TensorImpl::version_counter() {
  if (!version_) {
    version_ = make_intrusive<VersionCounter>();
    version_->version.store(local_version_, std::memory_order_relaxed);
  }
  return version_;
}

int64_t TensorImpl::size(int64_t d) const {
  KILN_CHECK_INDEX(dim() > 0, "Dimension specified as ", d, " but tensor has no dimensions");
  return sizes_[static_cast<size_t>(wrap_dim(d, dim()))];
}
int64_t TensorImpl::stride(int64_t d) const {
  KILN_CHECK_INDEX(dim() > 0, "Dimension specified as ", d, " but tensor has no dimensions");
  return strides_[static_cast<size_t>(wrap_dim(d, dim()))];
}

void TensorImpl::set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  check_in_bounds(sizes, strides, storage_offset, itemsize(), storage_->nbytes());
  sizes_ = DimVector(sizes);
  strides_ = DimVector(strides);
  storage_offset_ = storage_offset;
  refresh_numel_and_contiguity();
}

void TensorImpl::resize(IntArrayRef sizes) {
  for (int64_t s : sizes) KILN_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  const DimVector strides = contiguous_strides(sizes);
  const int64_t needed = (storage_offset_ + product(sizes)) * itemsize();
  if (needed > static_cast<int64_t>(storage_->nbytes())) storage_->resize(static_cast<size_t>(needed));
  set_geometry(sizes, strides, storage_offset_);
}

void TensorImpl::refresh_numel_and_contiguity() {
  numel_ = product(sizes_);
  // Contiguous as PyTorch defines it: strides of size-1 dims do not matter.
  is_contiguous_ = true;
  if (numel_ == 0) return;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) {
      is_contiguous_ = false;
      return;
    }
    expected *= sizes_[i];
  }
}

void TensorImpl::set_requires_grad(bool value) {
  if (!value && !autograd_meta_) return;
  KILN_CHECK(!value || is_differentiable_dtype(dtype_),
             "only Tensors of floating point and complex dtype can require gradients");
  if (!autograd_meta_) autograd_meta_ = g_autograd_meta_factory.load()();
  autograd_meta_->set_requires_grad(value);
  // Only tensors with autograd state carry the Autograd key, so ops on plain
  // tensors never visit an autograd kernel (Note [Dispatch key order]); a
  // differentiable view keeps it (Note [Views know their base]).
  key_set_ = requires_grad() || view_base_ ? key_set_.add(DispatchKey::Autograd) : key_set_.remove(DispatchKey::Autograd);
}

}  // namespace kiln
