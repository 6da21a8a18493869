// Shape ops made of other ops (CompositeImplicit in eager/ops/shape.yaml):
// reshape, flatten, movedim, narrow, chunk, tensor_split, contiguous, ... They
// call the dispatcher API (kiln::...), so autograd and capture see the view and
// copy ops they are made of, as PyTorch's composite kernels do.
#include <algorithm>
#include <numeric>
#include <string>

#include "eager/core/Error.h"
#include "eager/core/Warning.h"
#include "eager/kernels/ShapeOps.h"
#include "eager/kernels/TypePromotion.h"
#include "eager/kernels/Views.h"
#include "eager/kernels/cpu/copy/ShapeCopy.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

/// The values of a 0-dim or 1-dim integer tensor (any strides).
DimVector int_values(const Tensor& t) {
  DimVector out;
  const int64_t n = t.numel();
  const int64_t stride = t.dim() == 0 ? 0 : t.strides()[0];
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = t.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(static_cast<double>(data[i * stride])));
  });
  return out;
}

}  // namespace

std::string_view typemeta_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float16: return "c10::Half";
    case DType::BFloat16: return "c10::BFloat16";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short int";
    case DType::Int32: return "int";
    case DType::Int64: return "long int";
    case DType::UInt8: return "unsigned char";
    case DType::Bool: return "bool";
    case DType::Complex64: return "c10::complex<float>";
    case DType::Complex128: return "c10::complex<double>";
  }
  return scalar_type_name(dtype);
}

void check_out_dtype(const Tensor& out, DType expected) {
  KILN_CHECK(out.dtype() == expected, "Expected out tensor to have dtype ", typemeta_name(expected), ", but got ",
             typemeta_name(out.dtype()), " instead");
}

// --- reshaping -------------------------------------------------------------------

/// A view when the strides allow one (the same rule as view), else a contiguous copy viewed.
Tensor reshape(const Tensor& self, IntArrayRef shape) {
  const DimVector sizes = infer_size(shape, self.numel());
  if (compute_view_strides(self.sizes(), self.strides(), sizes, self.numel())) return self.view(sizes);
  return kiln::clone(self, MemoryFormat::Contiguous).view(sizes);
}

Tensor reshape_as(const Tensor& self, const Tensor& other) { return kiln::reshape(self, other.sizes()); }

Tensor view_as(const Tensor& self, const Tensor& other) { return self.view(other.sizes()); }

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  const int64_t start = wrap_dim(start_dim, self.dim());
  const int64_t end = wrap_dim(end_dim, self.dim());
  KILN_CHECK(start <= end, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (self.dim() == 0) return kiln::reshape(self, {1});
  if (start == end) return self;
  // The merged size is computed, not inferred: [0, 1, 3, 0] with start 1, end 2 is [0, 3, 0].
  DimVector shape;
  for (int64_t d = 0; d < start; ++d) shape.push_back(self.sizes()[d]);
  shape.push_back(product(self.sizes().subspan(static_cast<size_t>(start), static_cast<size_t>(end - start + 1))));
  for (int64_t d = end + 1; d < self.dim(); ++d) shape.push_back(self.sizes()[d]);
  return kiln::reshape(self, shape);
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  const int64_t d = wrap_dim(dim, self.dim());
  KILN_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  DimVector inferred;
  try {
    inferred = infer_size(sizes, self.size(d));
  } catch (const Error& e) {
    const std::string what = e.what();
    KILN_CHECK(what.find("is invalid for input of size") == std::string::npos, "unflatten: Provided sizes ", sizes,
               " don't multiply up to the size of dim ", d, " (", self.size(d), ") in the input tensor");
    KILN_FAIL(Runtime, "unflatten got an unexpected error:\n", what);
  }
  DimVector shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(self.sizes()[i]);
  for (int64_t s : inferred) shape.push_back(s);
  for (int64_t i = d + 1; i < self.dim(); ++i) shape.push_back(self.sizes()[i]);
  return self.view(shape);
}

/// As PyTorch: a contiguous copy first, so a viewable but non-contiguous input is copied too.
Tensor ravel(const Tensor& self) { return self.contiguous().view(DimVector{-1}); }

// --- transposes --------------------------------------------------------------------

Tensor swapaxes(const Tensor& self, int64_t axis0, int64_t axis1) { return kiln::transpose(self, axis0, axis1); }
Tensor swapaxes_(const Tensor& self, int64_t axis0, int64_t axis1) { return self.transpose_(axis0, axis1); }
Tensor swapdims(const Tensor& self, int64_t dim0, int64_t dim1) { return kiln::transpose(self, dim0, dim1); }
Tensor swapdims_(const Tensor& self, int64_t dim0, int64_t dim1) { return self.transpose_(dim0, dim1); }

/// The conjugate transpose of the last two dims (kiln has no complex dtypes: a
/// transpose); a 0-dim tensor is its own adjoint, with PyTorch's deprecation warning.
Tensor adjoint(const Tensor& self) {
  KILN_CHECK(self.dim() != 1, "tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.");
  if (self.dim() == 0) {
    static bool warned = false;
    if (!warned) {
      warned = true;
      KILN_WARN("adjoint() is deprecated on 0-D tensors. Consider using x.conj().");
    }
    return self;
  }
  // A complex adjoint is a conjugated copy: kiln has no lazy conjugate bit (Note [Complex dtypes]).
  const Tensor transposed = kiln::transpose(self, -2, -1);
  return is_complex(self.dtype()) ? kiln::conj_physical(transposed) : transposed;
}

Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  KILN_CHECK(source.size() == destination.size(), "movedim: Invalid source or destination dims: source (", source,
             " dims) should contain the same number of dims as destination (", destination, " dims)");
  const int64_t n = self.dim();
  auto wrapped = [n](IntArrayRef dims) {
    DimVector out(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) out[i] = wrap_dim(dims[i], n);
    return out;
  };
  const DimVector src = wrapped(source);
  const DimVector dst = wrapped(destination);
  auto all_unique = [](DimVector dims) {
    std::sort(dims.begin(), dims.end());
    return std::adjacent_find(dims.begin(), dims.end()) == dims.end();
  };
  KILN_CHECK(all_unique(src), "movedim: repeated dim in `source` (", source, ")");
  KILN_CHECK(all_unique(dst), "movedim: repeated dim in `destination` (", destination, ")");
  if (n == 0) return self.view(IntArrayRef());
  // order[d] = the source dim that lands at d: the named ones first, the rest in order.
  DimVector order(static_cast<size_t>(n), -1);
  std::vector<bool> src_used(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[dst[i]] = src[i];
    src_used[static_cast<size_t>(src[i])] = true;
  }
  int64_t next_src = 0;
  for (int64_t d = 0; d < n; ++d) {
    if (order[d] != -1) continue;
    while (src_used[static_cast<size_t>(next_src)]) ++next_src;
    order[d] = next_src++;
  }
  return kiln::permute(self, order);
}

Tensor movedim_int(const Tensor& self, int64_t source, int64_t destination) {
  return kiln::movedim(self, IntArrayRef(&source, 1), IntArrayRef(&destination, 1));
}
Tensor moveaxis(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  return kiln::movedim(self, source, destination);
}
Tensor moveaxis_int(const Tensor& self, int64_t source, int64_t destination) {
  return kiln::movedim(self, IntArrayRef(&source, 1), IntArrayRef(&destination, 1));
}

// --- broadcasting --------------------------------------------------------------------

Tensor expand_as(const Tensor& self, const Tensor& other) { return self.expand(other.sizes()); }

Tensor broadcast_to(const Tensor& self, IntArrayRef size) { return self.expand(size); }

/// Every tensor expanded to the common shape (a tensor already of that shape is returned as is).
std::vector<Tensor> broadcast_tensors(TensorList tensors) {
  DimVector shape;
  for (size_t i = 0; i < tensors.size(); ++i) {
    shape = i == 0 ? DimVector(tensors[0].sizes()) : broadcast_shapes(shape, tensors[i].sizes());
  }
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    const bool same = t.sizes().size() == shape.size() && std::equal(shape.begin(), shape.end(), t.sizes().begin());
    out.push_back(same ? t : t.expand(shape));
  }
  return out;
}

// --- narrowing and splitting ---------------------------------------------------------

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  KILN_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  KILN_CHECK(length >= 0, "narrow(): length must be non-negative.");
  const int64_t size = self.size(dim);
  KILN_CHECK_INDEX(-size <= start && start <= size, "start out of range (expected to be in range of [", -size, ", ",
                   size, "], but got ", start, ")");
  if (start < 0) start += size;
  KILN_CHECK(start <= size - length, "start (", start, ") + length (", length, ") exceeds dimension size (", size,
             ").");
  return kiln::slice(self, dim, start, start + length, 1);
}

Tensor narrow_tensor(const Tensor& self, int64_t dim, const Tensor& start, int64_t length) {
  KILN_CHECK(start.dim() == 0 && is_integral(start.dtype(), /*include_bool=*/false),
             "start must be an 0-dim integral Tensor.");
  return kiln::narrow(self, dim, int_values(start)[0], length);
}

std::vector<Tensor> split_sizes(const Tensor& self, IntArrayRef split_size, int64_t dim) {
  return kiln::split_with_sizes(self, split_size, dim);
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  KILN_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int64_t dim_size = self.size(dim);
  const int64_t split_size = (dim_size + chunks - 1) / chunks;
  // An empty dim still gives `chunks` (empty) pieces, which split cannot express.
  if (split_size == 0 && dim_size == 0) {
    DimVector sizes(static_cast<size_t>(chunks), 0);
    return kiln::split_with_sizes(self, sizes, dim);
  }
  return kiln::split(self, split_size, dim);
}

std::vector<Tensor> tensor_split_sections(const Tensor& self, int64_t sections, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with ",
             self.dim(), " dims");
  const int64_t d = wrap_dim(dim, self.dim());
  KILN_CHECK(sections > 0, "number of sections must be larger than 0, got ", sections);
  const int64_t dim_size = self.size(d);
  const int64_t min_size = dim_size / sections;
  const int64_t with_extra = dim_size % sections;
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(sections));
  int64_t start = 0;
  for (int64_t i = 0; i < sections; ++i) {
    const int64_t size = i < with_extra ? min_size + 1 : min_size;
    out.push_back(kiln::slice(self, d, start, start + size, 1));
    start += size;
  }
  return out;
}

std::vector<Tensor> tensor_split_indices(const Tensor& self, IntArrayRef indices, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with ",
             self.dim(), " dims");
  const int64_t d = wrap_dim(dim, self.dim());
  std::vector<Tensor> out;
  out.reserve(indices.size() + 1);
  int64_t start = 0;
  for (int64_t end : indices) {
    out.push_back(kiln::slice(self, d, start, end, 1));
    start = end;
  }
  out.push_back(kiln::slice(self, d, start, self.size(d), 1));
  return out;
}

std::vector<Tensor> tensor_split_tensor(const Tensor& self, const Tensor& tensor_indices_or_sections, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with ",
             self.dim(), " dims");
  const Tensor& split = tensor_indices_or_sections;
  KILN_CHECK(split.device().is_cpu(), "tensor_split expected tensor_indices_or_sections to be on cpu, but it's on ",
             split.device());
  KILN_CHECK(split.dtype() == DType::Int64,
             "tensor_split expected tensor_indices_or_sections to have dtype of long, but got ",
             scalar_type_name(split.dtype()));
  KILN_CHECK(split.dim() == 0 || split.dim() == 1,
             "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, "
             "but got a tensor with ", split.dim(), " dims");
  const DimVector values = int_values(split);
  if (split.dim() == 0) return kiln::tensor_split(self, values[0], dim);
  return kiln::tensor_split(self, IntArrayRef(values), dim);
}

// --- layout --------------------------------------------------------------------------

/// self when it already has the layout (the same tensor, as PyTorch), else a copy in it.
Tensor contiguous(const Tensor& self, MemoryFormat memory_format) {
  if (is_contiguous_as(self, memory_format)) return self;
  KILN_CHECK(memory_format != MemoryFormat::Preserve, "preserve memory format is unsupported by the contiguous operator");
  return kiln::clone(self, memory_format);
}

}  // namespace kiln::native
