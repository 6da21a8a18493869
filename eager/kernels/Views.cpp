// View kernels: geometry only, storage and version counter shared with the base.
// See Note [Views share storage and version] in Views.h.
#include "eager/kernels/Views.h"

#include <algorithm>
#include <optional>
#include <string>

#include "eager/core/Error.h"
#include "eager/dispatch/LocalDispatchKeySet.h"

namespace kiln {

namespace {

ViewGeometry geometry_of(const Tensor& t) { return {DimVector(t.sizes()), DimVector(t.strides()), t.storage_offset()}; }

}  // namespace

namespace native {

std::bitset<kMaxDims> dims_to_bitset(IntArrayRef dims, int64_t ndim) {
  KILN_CHECK(ndim <= static_cast<int64_t>(kMaxDims), "only tensors with up to ", kMaxDims, " dims are supported");
  std::bitset<kMaxDims> seen;
  for (int64_t d : dims) {
    const auto w = static_cast<size_t>(wrap_dim(d, ndim));
    KILN_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
  }
  return seen;
}

Tensor make_view(const Tensor& base, const ViewGeometry& g, std::optional<DType> dtype) {
  auto impl = make_intrusive<TensorImpl>(base.storage(), dtype.value_or(base.dtype()), g.sizes, g.strides, g.offset);
  impl->share_version_counter(base.impl()->version_counter());
  impl->set_key_set(base.key_set());
  // See Note [Views know their base] (eager/autograd/ViewAutograd.h). A dtype
  // view is not differentiable, so it keeps no base. A view of a view records
  // the root, and inherits a creation that forbids in-place changes.
  if (!dtype || *dtype == base.dtype()) {
    TensorImpl* parent = base.impl();
    TensorImpl* root = parent->view_base() ? parent->view_base() : parent;
    ViewCreation creation = parent->view_base() ? parent->view_creation() : ViewCreation::Default;
    // Autograd view kernels (which run below an excluded Autograd key) reset this.
    if (creation == ViewCreation::Default && local_dispatch_key_set().excluded.has(DispatchKey::Autograd)) {
      creation = ViewCreation::NoGradMode;
    }
    impl->set_view_base(intrusive_ptr<TensorImpl>(root), creation);
    // Every differentiable view visits autograd kernels: its base may gain
    // history after it was made, through another alias, and the view's ops
    // must then record it.
    if (is_differentiable_dtype(impl->dtype())) impl->set_key_set(impl->key_set().add(DispatchKey::Autograd));
  }
  return Tensor(std::move(impl));
}

const Tensor& set_geometry_(const Tensor& self, const ViewGeometry& g) {
  self.impl()->set_geometry(g.sizes, g.strides, g.offset);
  self.impl()->bump_version();  // an in-place op, as PyTorch counts it
  return self;
}

std::optional<DimVector> compute_view_strides(IntArrayRef old_sizes, IntArrayRef old_strides, IntArrayRef new_sizes,
                                              int64_t numel) {
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

ViewGeometry as_strided_geometry(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                                 std::optional<int64_t> storage_offset) {
  // PyTorch's as_strided checks, in its order and words, before the bounds check.
  KILN_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
  for (int64_t stride : strides) {
    KILN_CHECK(stride >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ", strides);
  }
  for (int64_t size : sizes) {
    KILN_CHECK(size >= 0, "Storage size calculation overflowed with sizes=", sizes, " and strides=", strides);
  }
  return {DimVector(sizes), DimVector(strides), storage_offset.value_or(self.storage_offset())};
}

ViewGeometry view_geometry(const Tensor& self, IntArrayRef sizes) {
  DimVector shape = infer_size(sizes, self.numel());
  auto strides = compute_view_strides(self.sizes(), self.strides(), shape, self.numel());
  KILN_CHECK(strides.has_value(), "view size is not compatible with input tensor's size and stride (at least one "
             "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return {std::move(shape), std::move(*strides), self.storage_offset()};
}

ViewGeometry transpose_geometry(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t d0 = wrap_dim(dim0, self.dim());
  const int64_t d1 = wrap_dim(dim1, self.dim());
  ViewGeometry g = geometry_of(self);
  if (self.dim() > 0) {
    std::swap(g.sizes[d0], g.sizes[d1]);
    std::swap(g.strides[d0], g.strides[d1]);
  }
  return g;
}

ViewGeometry t_geometry(const Tensor& self, const char* op) {
  KILN_CHECK(self.dim() <= 2, op, "() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  if (self.dim() < 2) return geometry_of(self);
  return transpose_geometry(self, 0, 1);
}

ViewGeometry permute_geometry(const Tensor& self, IntArrayRef dims) {
  const int64_t n = self.dim();
  // (PyTorch's message names sparse_coo here for every layout.)
  KILN_CHECK(static_cast<int64_t>(dims.size()) == n,
             "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
             "desired ordering of dimensions i.e. input.dim() = ", n, " is not equal to len(dims) = ", dims.size());
  ViewGeometry g{DimVector(dims.size()), DimVector(dims.size()), self.storage_offset()};
  std::bitset<kMaxDims> seen;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], n);
    KILN_CHECK(!seen[static_cast<size_t>(d)], "permute(): duplicate dims are not allowed.");
    seen[static_cast<size_t>(d)] = true;
    g.sizes[i] = self.sizes()[d];
    g.strides[i] = self.strides()[d];
  }
  return g;
}

ViewGeometry squeeze_geometry(const Tensor& self, std::optional<IntArrayRef> dims) {
  const int64_t n = self.dim();
  std::bitset<kMaxDims> chosen;
  if (dims) {
    chosen = dims_to_bitset(*dims, n);
  } else {
    chosen.set();
  }
  ViewGeometry g{{}, {}, self.storage_offset()};
  for (int64_t d = 0; d < n; ++d) {
    if (chosen[static_cast<size_t>(d)] && self.sizes()[d] == 1) continue;
    g.sizes.push_back(self.sizes()[d]);
    g.strides.push_back(self.strides()[d]);
  }
  return g;
}

ViewGeometry unsqueeze_geometry(const Tensor& self, int64_t dim) {
  const int64_t d = wrap_dim(dim, self.dim() + 1);
  ViewGeometry g = geometry_of(self);
  // PyTorch's stride for the new dim: the one that keeps the tensor contiguous where it was.
  const int64_t stride = d >= self.dim() ? 1 : self.sizes()[d] * self.strides()[d];
  g.sizes.insert(static_cast<size_t>(d), 1);
  g.strides.insert(static_cast<size_t>(d), stride);
  return g;
}

namespace {

/// How PyTorch's Tensor::toString names a CPU tensor's type in messages:
/// "kiln.FloatTensor", but "CPUBoolType" and "CPUBFloat16Type" (no legacy name).
std::string tensor_type_string(DType dtype) {
  if (dtype == DType::Bool) return "CPUBoolType";
  if (dtype == DType::BFloat16) return "CPUBFloat16Type";
  return "kiln." + std::string(legacy_tensor_name(dtype));
}

}  // namespace

ViewGeometry expand_geometry(const Tensor& self, IntArrayRef sizes) {
  const auto ndim = static_cast<int64_t>(sizes.size());
  const int64_t tensor_dim = self.dim();
  KILN_CHECK(ndim >= tensor_dim, "expand(", tensor_type_string(self.dtype()), "{", self.sizes(), "}, size=", sizes,
             "): the number of sizes provided (", ndim,
             ") must be greater or equal to the number of dimensions in the tensor (", tensor_dim, ")");
  ViewGeometry g{DimVector(sizes), DimVector(sizes.size(), 0), self.storage_offset()};
  // A 0-dim tensor takes the sizes as given (PyTorch's inferExpandGeometry), -1 included.
  for (int64_t i = ndim - 1; i >= 0 && tensor_dim > 0; --i) {
    const int64_t offset = ndim - 1 - i;
    const int64_t dim = tensor_dim - 1 - offset;
    int64_t size = dim >= 0 ? self.sizes()[dim] : 1;
    int64_t stride = dim >= 0 ? self.strides()[dim] : g.sizes[i + 1] * g.strides[i + 1];
    int64_t target = sizes[i];
    if (target == -1) {
      KILN_CHECK(dim >= 0, "The expanded size of the tensor (", target,
                 ") isn't allowed in a leading, non-existing dimension ", i);
      target = size;
    }
    if (size != target) {
      KILN_CHECK(size == 1, "The expanded size of the tensor (", target, ") must match the existing size (", size,
                 ") at non-singleton dimension ", i, ".  Target sizes: ", sizes, ".  Tensor sizes: ", self.sizes());
      size = target;
      stride = 0;
    }
    g.sizes[i] = size;
    g.strides[i] = stride;
  }
  // PyTorch's words when a negative size survives to the element count.
  for (int64_t s : g.sizes) KILN_CHECK(s >= 0, "numel: integer multiplication overflow");
  return g;
}

ViewGeometry diagonal_geometry(const Tensor& self, int64_t offset, int64_t dim1_arg, int64_t dim2_arg) {
  const int64_t dim1 = wrap_dim(dim1_arg, self.dim());
  const int64_t dim2 = wrap_dim(dim2_arg, self.dim());
  KILN_CHECK(dim1 != dim2, "diagonal dimensions cannot be identical ", dim1_arg, ", ", dim2_arg);
  const int64_t n1 = self.sizes()[dim1];
  const int64_t n2 = self.sizes()[dim2];
  const int64_t diag_size = offset >= 0 ? std::max<int64_t>(std::min(n1, n2 - offset), 0)
                                        : std::max<int64_t>(std::min(n1 + offset, n2), 0);
  int64_t storage_offset = self.storage_offset();
  if (diag_size > 0) storage_offset += offset >= 0 ? offset * self.strides()[dim2] : -offset * self.strides()[dim1];
  ViewGeometry g = geometry_of(self);
  g.offset = storage_offset;
  // Drop dim1 and dim2 (the larger first) and append the diagonal, as NumPy.
  const int64_t hi = std::max(dim1, dim2);
  const int64_t lo = std::min(dim1, dim2);
  g.sizes.erase(static_cast<size_t>(hi));
  g.strides.erase(static_cast<size_t>(hi));
  g.sizes.erase(static_cast<size_t>(lo));
  g.strides.erase(static_cast<size_t>(lo));
  g.sizes.push_back(diag_size);
  g.strides.push_back(self.strides()[dim1] + self.strides()[dim2]);
  return g;
}

ViewGeometry slice_geometry(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                            int64_t step) {
  KILN_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  KILN_CHECK(step > 0, "slice step must be positive");
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t n = self.sizes()[d];
  auto clamp_index = [n](int64_t i) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
  };
  const int64_t lo = clamp_index(start.value_or(0));
  const int64_t hi = std::max(lo, clamp_index(end.value_or(n)));
  ViewGeometry g = geometry_of(self);
  g.sizes[d] = (hi - lo + step - 1) / step;
  g.strides[d] *= step;
  g.offset += lo * self.strides()[d];
  return g;
}

ViewGeometry select_geometry(const Tensor& self, int64_t dim, int64_t index) {
  KILN_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t n = self.sizes()[d];
  KILN_CHECK_INDEX(index >= -n && index < n, "select(): index ", index, " out of range for tensor of size ",
                   self.sizes(), " at dimension ", d);
  const int64_t i = index < 0 ? index + n : index;
  ViewGeometry g = geometry_of(self);
  g.offset += i * g.strides[d];
  g.sizes.erase(static_cast<size_t>(d));
  g.strides.erase(static_cast<size_t>(d));
  return g;
}

Tensor as_strided_impl(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                       std::optional<int64_t> storage_offset) {
  return make_view(self, as_strided_geometry(self, sizes, strides, storage_offset));
}

Tensor transpose_impl(const Tensor& self, int64_t dim0, int64_t dim1) {
  return make_view(self, transpose_geometry(self, dim0, dim1));
}

Tensor slice_impl(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                  int64_t step) {
  return make_view(self, slice_geometry(self, dim, start, end, step));
}

Tensor select_impl(const Tensor& self, int64_t dim, int64_t index) {
  return make_view(self, select_geometry(self, dim, index));
}

Tensor view_dtype_impl(const Tensor& self, DType dtype) {
  ViewGeometry g = geometry_of(self);
  const int64_t old_size = self.itemsize();
  const int64_t new_size = itemsize(dtype);
  if (old_size == new_size) return make_view(self, g, dtype);
  const auto from = scalar_type_name(self.dtype());
  const auto to = scalar_type_name(dtype);
  KILN_CHECK(self.dim() > 0, "self.dim() cannot be 0 to view ", from, " as ", to, " (different element sizes)");
  const int64_t last = self.dim() - 1;
  auto check_last_stride = [&] {
    KILN_CHECK(self.strides()[last] == 1, "self.stride(-1) must be 1 to view ", from, " as ", to,
               " (different element sizes), but got ", self.strides()[last]);
  };
  if (old_size > new_size) {
    check_last_stride();
    const int64_t ratio = old_size / new_size;
    for (int64_t d = 0; d < last; ++d) g.strides[d] *= ratio;
    g.sizes[last] *= ratio;
    g.offset *= ratio;
    return make_view(self, g, dtype);
  }
  // Larger elements: PyTorch checks the last size, the offset, then the strides.
  const int64_t ratio = new_size / old_size;
  KILN_CHECK(self.sizes()[last] % ratio == 0, "self.size(-1) must be divisible by ", ratio, " to view ", from, " as ",
             to, " (different element sizes), but got ", self.sizes()[last]);
  KILN_CHECK(self.storage_offset() % ratio == 0, "self.storage_offset() must be divisible by ", ratio, " to view ",
             from, " as ", to, " (different element sizes), but got ", self.storage_offset());
  check_last_stride();
  for (int64_t d = 0; d < last; ++d) {
    KILN_CHECK(g.strides[d] % ratio == 0, "self.stride(", d, ") must be divisible by ", ratio, " to view ", from,
               " as ", to, " (different element sizes), but got ", g.strides[d]);
    g.strides[d] /= ratio;
  }
  g.sizes[last] /= ratio;
  g.offset /= ratio;
  return make_view(self, g, dtype);
}

// Note [Complex views]
// view_as_real and view_as_complex reinterpret the same storage: a complex
// element is two adjacent reals, so the real view doubles every stride and
// the offset and adds a last dim of size 2 and stride 1. They are
// differentiable through their derivative formulas (each one's gradient is the
// other view of grad); like dtype views they keep no view base, so an in-place
// write through one does not rebase the other's history.
Tensor view_as_real_impl(const Tensor& self) {
  KILN_CHECK(is_complex(self.dtype()), "view_as_real is only supported for complex tensors");
  ViewGeometry g = geometry_of(self);
  for (int64_t& stride : g.strides) stride *= 2;
  g.sizes.push_back(2);
  g.strides.push_back(1);
  g.offset *= 2;
  return make_view(self, g, to_real_value_type(self.dtype()));
}

Tensor view_as_complex_impl(const Tensor& self) {
  KILN_CHECK_NOT_IMPLEMENTED(self.dtype() != DType::Float16,
                             "view_as_complex: kiln has no complex32, so float16 pairs cannot be viewed as complex");
  KILN_CHECK(self.dtype() == DType::Float32 || self.dtype() == DType::Float64,
             "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: ",
             scalar_type_name(self.dtype()));
  KILN_CHECK(self.dim() != 0, "Input tensor must have one or more dimensions");
  const int64_t last = self.dim() - 1;
  KILN_CHECK(self.sizes()[last] == 2, "Tensor must have a last dimension of size 2");
  ViewGeometry g = geometry_of(self);
  if (self.numel() == 0) {
    // No element to place: any strides are as good as the contiguous ones (an empty
    // gradient reaching view_as_real's backward may carry the strides of an expand).
    g.sizes.pop_back();
    g.strides = contiguous_strides(g.sizes);
    g.offset = 0;
    return make_view(self, g, to_complex_type(self.dtype()));
  }
  KILN_CHECK(self.strides()[last] == 1, "Tensor must have a last dimension with stride 1");
  g.sizes.pop_back();
  g.strides.pop_back();
  for (int64_t stride : g.strides) {
    KILN_CHECK(stride % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
  }
  KILN_CHECK(g.offset % 2 == 0, "Tensor must have a storage_offset divisible by 2");
  for (int64_t& stride : g.strides) stride /= 2;
  g.offset /= 2;
  return make_view(self, g, to_complex_type(self.dtype()));
}

std::vector<Tensor> split_impl(const Tensor& self, int64_t split_size, int64_t dim) {
  KILN_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  KILN_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t dim_size = self.sizes()[d];
  KILN_CHECK(split_size > 0 || dim_size == 0,
             "split_size can only be 0 if dimension size is 0, but got dimension size of ", dim_size);
  // One piece when split_size is 0 (and the dim empty) or larger than the dim, as PyTorch.
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((dim_size + split_size - 1) / split_size, 1);
  const int64_t last_size = split_size - (split_size * pieces - dim_size);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(pieces));
  ViewGeometry g = geometry_of(self);
  for (int64_t i = 0; i < pieces; ++i) {
    g.sizes[d] = i < pieces - 1 ? split_size : last_size;
    g.offset = self.storage_offset() + i * split_size * self.strides()[d];
    out.push_back(make_view(self, g));
  }
  return out;
}

std::vector<Tensor> split_with_sizes_impl(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  KILN_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t dim_size = self.sizes()[d];
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    KILN_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
               split_sizes);
    total += s;
  }
  KILN_CHECK(total == dim_size, "split_with_sizes expects split_sizes to sum exactly to ", dim_size,
             " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(make_view(self, slice_geometry(self, d, start, start + s, 1)));
    start += s;
  }
  return out;
}

std::vector<Tensor> unbind_impl(const Tensor& self, int64_t dim) {
  KILN_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t n = self.sizes()[d];
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(n));
  ViewGeometry g = geometry_of(self);
  g.sizes.erase(static_cast<size_t>(d));
  g.strides.erase(static_cast<size_t>(d));
  for (int64_t i = 0; i < n; ++i) {
    g.offset = self.storage_offset() + i * self.strides()[d];
    out.push_back(make_view(self, g));
  }
  return out;
}

}  // namespace native

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

Tensor view(const Tensor& self, IntArrayRef sizes) { return native::make_view(self, native::view_geometry(self, sizes)); }

}  // namespace kiln
