// View kernels: geometry only, storage and version counter shared with the base.
#include "eager/kernels/Views.h"

#include <algorithm>
#include <optional>

#include "eager/core/Error.h"

namespace kiln {

namespace {

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = make_intrusive<TensorImpl>(base.storage(), base.dtype(), sizes, strides, offset);
  impl->share_version_counter(base.impl()->version_counter());
  impl->set_key_set(base.key_set());
  return Tensor(std::move(impl));
}

/// Strides that give `self`'s elements the shape `new_sizes` without a copy,
/// or nullopt when the existing strides do not allow it (PyTorch's rule:
/// each run of merged old dims must be contiguous among itself).
std::optional<DimVector> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides,
                                              IntArrayRef new_sizes, int64_t numel) {
  DimVector new_strides(new_sizes.size());
  if (old_sizes.empty()) {
    new_strides.assign(new_sizes.size(), 1);
    return new_strides;
  }
  if (numel == 0) {
    if (old_sizes.size() == new_sizes.size() && std::equal(old_sizes.begin(), old_sizes.end(), new_sizes.begin())) {
      return DimVector(old_strides);
    }
    return contiguous_strides(new_sizes);
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 ||
        (old_sizes[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

DimVector infer_size(IntArrayRef sizes, int64_t numel) {
  DimVector result(sizes);
  int64_t known = 1;
  std::optional<size_t> infer_dim;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      KILN_CHECK(!infer_dim, "only one dimension can be inferred");
      infer_dim = i;
    } else {
      KILN_CHECK(sizes[i] >= 0, "invalid shape dimension ", sizes[i], " at index ", i, " of shape ", sizes);
      known *= sizes[i];
    }
  }
  const bool ok = numel == known || (infer_dim && known > 0 && numel % known == 0);
  KILN_CHECK(ok, "shape '", sizes, "' is invalid for input of size ", numel);
  if (infer_dim) {
    KILN_CHECK(known != 0, "cannot reshape tensor of 0 elements into shape ", sizes,
               " because the unspecified dimension size -1 can be any value and is ambiguous");
    result[*infer_dim] = numel / known;
  }
  return result;
}

Tensor native::as_strided_impl(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                               std::optional<int64_t> storage_offset) {
  // PyTorch's as_strided checks, in its order and words, before the bounds check.
  KILN_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
  for (int64_t stride : strides) {
    KILN_CHECK(stride >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ", strides);
  }
  for (int64_t size : sizes) {
    KILN_CHECK(size >= 0, "Storage size calculation overflowed with sizes=", sizes, " and strides=", strides);
  }
  return make_view(self, sizes, strides, storage_offset.value_or(self.storage_offset()));
}

Tensor view(const Tensor& self, IntArrayRef sizes) {
  const DimVector shape = infer_size(sizes, self.numel());
  auto strides = compute_view_strides(self.sizes(), self.strides(), shape, self.numel());
  KILN_CHECK(strides.has_value(), "view size is not compatible with input tensor's size and stride (at least one "
             "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, shape, *strides, self.storage_offset());
}

Tensor native::transpose_impl(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t d0 = wrap_dim(dim0, self.dim());
  const int64_t d1 = wrap_dim(dim1, self.dim());
  DimVector sizes(self.sizes());
  DimVector strides(self.strides());
  if (self.dim() > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor native::slice_impl(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                          int64_t step) {
  KILN_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  KILN_CHECK(step > 0, "slice step must be positive");
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t n = self.size(d);
  auto clamp_index = [n](int64_t i) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
  };
  const int64_t lo = clamp_index(start.value_or(0));
  const int64_t hi = std::max(lo, clamp_index(end.value_or(n)));
  DimVector sizes(self.sizes());
  DimVector strides(self.strides());
  sizes[d] = (hi - lo + step - 1) / step;
  strides[d] *= step;
  return make_view(self, sizes, strides, self.storage_offset() + lo * self.stride(d));
}

Tensor native::select_impl(const Tensor& self, int64_t dim, int64_t index) {
  KILN_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t n = self.size(d);
  KILN_CHECK_INDEX(index >= -n && index < n, "select(): index ", index, " out of range for tensor of size ",
                   self.sizes(), " at dimension ", d);
  const int64_t i = index < 0 ? index + n : index;
  DimVector sizes(self.sizes());
  DimVector strides(self.strides());
  const int64_t offset = self.storage_offset() + i * strides[d];
  sizes.erase(d);
  strides.erase(d);
  return make_view(self, sizes, strides, offset);
}

}  // namespace kiln
