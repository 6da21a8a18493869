// Creation ops of eager/ops/creation.yaml: the *_like forms (composite, on
// empty_strided and fill_), eye and logspace (CPU kernels for their out= forms).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/copy/Copy.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

namespace {

// Note [preserve_format strides]
// ------------------------------
// With memory_format None or kiln.preserve_format, a *_like result keeps its
// input's layout, as PyTorch's empty_like:
//  - an input whose elements exactly tile a block of memory (non-overlapping
//    and dense, in any order of the dims) lends the result its strides;
//  - any other input (sliced, expanded) gives dense strides in the same order
//    of the dims (infer_dense_strides; ties broken as TensorIterator breaks them).
// contiguous_format gives row-major strides; channels_last(_3d) the NHWC
// (NDHWC) order of a rank-4 (rank-5) tensor.

/// PyTorch's TensorImpl::is_non_overlapping_and_dense.
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  const size_t ndim = sizes.size();
  if (ndim == 1) return sizes[0] < 2 || strides[0] == 1;
  std::vector<size_t> perm(ndim);
  std::iota(perm.begin(), perm.end(), size_t{0});
  std::sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t required = 1;
  for (size_t d : perm) {
    if (sizes[d] < 2) return true;
    if (strides[d] != required) return false;
    required *= sizes[d];
  }
  return true;
}

/// PyTorch's infer_dense_strides: dense strides that keep the order of `strides`.
DimVector infer_dense_strides(IntArrayRef sizes, IntArrayRef strides) {
  const size_t ndim = sizes.size();
  DimVector out(ndim);
  if (ndim == 0) return out;
  std::vector<size_t> perm(ndim);
  for (size_t i = 0; i < ndim; ++i) perm[i] = ndim - 1 - i;
  auto should_swap = [&](size_t dim0, size_t dim1) {
    const int64_t stride0 = strides[dim0], stride1 = strides[dim1];
    if (stride0 == 0 || stride1 == 0) return 0;
    if (stride0 < stride1) return -1;
    if (stride0 > stride1) return 1;
    return sizes[dim0] > sizes[dim1] ? 1 : 0;
  };
  for (size_t i = 1; i < ndim; ++i) {
    size_t dim1 = i;
    for (size_t j = 1; j <= i; ++j) {
      const size_t dim0 = i - j;
      const int comparison = should_swap(perm[dim0], perm[dim1]);
      if (comparison > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  int64_t stride = 1;
  for (size_t d : perm) {
    out[d] = stride;
    if (sizes[d] > 1) stride *= sizes[d];
  }
  return out;
}

/// c10's get_channels_last_strides_2d / _3d.
DimVector channels_last_strides(IntArrayRef sizes, MemoryFormat format) {
  DimVector strides(sizes.size());
  if (format == MemoryFormat::ChannelsLast) {
    KILN_CHECK(sizes.size() == 4, "required rank 4 tensor to use channels_last format");
    strides[1] = 1;
    strides[3] = sizes[1];
    strides[2] = strides[3] * sizes[3];
    strides[0] = strides[2] * sizes[2];
    return strides;
  }
  KILN_CHECK(sizes.size() == 5, "required rank 5 tensor to use channels_last_3d format");
  strides[1] = 1;
  strides[4] = sizes[1];
  strides[3] = strides[4] * sizes[4];
  strides[2] = strides[3] * sizes[3];
  strides[0] = strides[2] * sizes[2];
  return strides;
}

/// The strides of a new tensor of self's sizes in `format`. See Note [preserve_format strides].
DimVector like_strides(const Tensor& self, MemoryFormat format) {
  switch (format) {
    case MemoryFormat::Preserve:
      if (is_non_overlapping_and_dense(self.sizes(), self.strides())) return DimVector(self.strides());
      return infer_dense_strides(self.sizes(), self.strides());
    case MemoryFormat::Contiguous:
      return contiguous_strides(self.sizes());
    case MemoryFormat::ChannelsLast:
    case MemoryFormat::ChannelsLast3d:
      return channels_last_strides(self.sizes(), format);
  }
  return contiguous_strides(self.sizes());
}

/// Fills a freshly made *_like result: it is dense, so its memory is one run.
Tensor fill_dense(const Tensor& t, const Scalar& value) {
  const int64_t numel = t.numel();
  const int64_t unit_stride = 1;
  kiln::fill_(kiln::as_strided(t, IntArrayRef(&numel, 1), IntArrayRef(&unit_stride, 1), t.storage_offset()), value);
  return t;
}

}  // namespace

// --- the *_like forms -------------------------------------------------------------

Tensor empty_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
                  std::optional<MemoryFormat> memory_format) {
  const DimVector strides = like_strides(self, memory_format.value_or(MemoryFormat::Preserve));
  // The dispatched op (optional dtype/device), not the C++ factory: a capture
  // records it like any factory, so empty_like needs no special case there.
  return kiln::empty_strided(self.sizes(), strides, std::optional<DType>(dtype.value_or(self.dtype())),
                             std::optional<Device>(device.value_or(self.device())));
}

Tensor zeros_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
                  std::optional<MemoryFormat> memory_format) {
  return fill_dense(kiln::empty_like(self, dtype, device, memory_format), Scalar(int64_t{0}));
}

Tensor ones_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device,
                 std::optional<MemoryFormat> memory_format) {
  return fill_dense(kiln::empty_like(self, dtype, device, memory_format), Scalar(int64_t{1}));
}

Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<DType> dtype,
                 std::optional<Device> device, std::optional<MemoryFormat> memory_format) {
  return fill_dense(kiln::empty_like(self, dtype, device, memory_format), fill_value);
}

// --- eye ------------------------------------------------------------------------------

Tensor eye_m_out_cpu(int64_t n, int64_t m, const Tensor& out) {
  KILN_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  KILN_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  const int64_t shape[] = {n, m};
  if (!std::equal(std::begin(shape), std::end(shape), out.sizes().begin(), out.sizes().end())) {
    out.impl()->resize(shape);  // PyTorch's resize_: no warning
  }
  if (out.impl()->is_meta()) return out;  // the checks above are the meta function
  kiln::fill_(out, Scalar(int64_t{0}));
  const int64_t diagonal_stride = out.stride(0) + out.stride(1);
  visit_dtype_and_complex(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* data = out.data_ptr<T>();
    const T one = static_cast<T>(1);
    for (int64_t i = 0; i < std::min(n, m); ++i) data[i * diagonal_stride] = one;
  });
  return out;
}

Tensor eye_out(int64_t n, const Tensor& out) { return kiln::eye_out(out, n, n); }

Tensor eye_m(int64_t n, int64_t m, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::eye_out(kiln::empty({0}, dtype, device), n, m);
}

Tensor eye(int64_t n, std::optional<DType> dtype, std::optional<Device> device) {
  return eye_m(n, n, dtype, device);
}

// --- logspace ------------------------------------------------------------------------
// PyTorch's logspace_out (RangeFactories.cpp), operation by operation, so values
// are bit-equal: pow(base, start + step * i) for the first half and
// pow(base, end - step * (steps - i - 1)) for the second, in double, with the
// step (end - start) / (steps - 1) from start and end already in the output type.

namespace {

/// A double stored into integer type T as x86 code compiled from PyTorch's
/// `data[i] = std::pow(...)` stores it: truncated to int32 (int64 for 8-byte T),
/// whose "integer indefinite" value stands for NaN and out-of-range values,
/// then narrowed. (The C++ conversion itself is undefined out of range.)
template <typename T>
T store_as_x86(double v) {
  if constexpr (sizeof(T) == 8) {
    if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18)) return std::numeric_limits<int64_t>::lowest();
    return static_cast<T>(v);
  } else {
    if (!(v > -2147483649.0 && v < 2147483648.0)) return static_cast<T>(std::numeric_limits<int32_t>::lowest());
    return static_cast<T>(static_cast<int32_t>(v));
  }
}

template <typename T>
void logspace_values(T* out, const Scalar& start_value, const Scalar& end_value, int64_t steps, double base) {
  const T start = checked_scalar_to<T>(start_value);
  const T end = checked_scalar_to<T>(end_value);
  double step = 0;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    step = static_cast<double>(static_cast<float>(T(static_cast<float>(end) - static_cast<float>(start)))) /
           static_cast<double>(steps - 1);
  } else {
    step = static_cast<double>(end - start) / static_cast<double>(steps - 1);
  }
  const int64_t halfway = steps / 2;
  const auto as_double = [](T v) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return static_cast<double>(static_cast<float>(v));
    } else {
      return static_cast<double>(v);
    }
  };
  const double s = as_double(start), e = as_double(end);
  parallel_for(0, steps, kGrainSize, [&](int64_t begin, int64_t stop) {
    for (int64_t i = begin; i < stop; ++i) {
      const double exponent = i < halfway ? s + step * static_cast<double>(i)
                                          : e - step * static_cast<double>(steps - i - 1);
      const double v = std::pow(base, exponent);
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        out[i] = T(static_cast<float>(v));
      } else if constexpr (std::is_integral_v<T>) {
        out[i] = store_as_x86<T>(v);
      } else {
        out[i] = static_cast<T>(v);
      }
    }
  });
}

}  // namespace

Tensor logspace_out_cpu(const Scalar& start, const Scalar& end, int64_t steps, double base, const Tensor& out) {
  KILN_CHECK(steps >= 0, "number of steps must be non-negative");
  KILN_CHECK_NOT_IMPLEMENTED(out.dtype() != DType::Bool || steps < 2, "\"logspace_cpu\" not implemented for 'Bool'");
  if (out.numel() != steps) out.impl()->resize({steps});
  if (out.impl()->is_meta()) {  // the checks above and the values' conversions to the output type: the meta function
    if (steps == 1) kiln::fill_(out, Scalar(std::pow(base, start.to_double())));
    if (steps > 1) {
      visit_dtype(out.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (!std::is_same_v<T, bool>) {
          (void)checked_scalar_to<T>(start);
          (void)checked_scalar_to<T>(end);
        }
      });
    }
    return out;
  }
  const Tensor dense = out.is_contiguous() ? out : empty({steps}, out.dtype(), out.device());
  if (steps == 1) {
    kiln::fill_(dense, Scalar(std::pow(base, start.to_double())));
  } else if (steps > 1) {
    visit_dtype(dense.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) logspace_values<T>(dense.data_ptr<T>(), start, end, steps, base);
    });
  }
  if (!dense.is_same(out)) kiln::copy_(out, dense);
  out.impl()->bump_version();
  return out;
}

Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base, std::optional<DType> dtype,
                std::optional<Device> device) {
  KILN_CHECK(steps >= 0, "number of steps must be non-negative");
  return kiln::logspace_out(kiln::empty({steps}, dtype, device), start, end, steps, base);
}

}  // namespace kiln::native
