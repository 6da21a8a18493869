// CPU creation kernels.
#include "eager/kernels/cpu/creation/Factories.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "eager/core/Error.h"
#include "eager/kernels/cuda/CudaCopy.h"

namespace kiln {

namespace {

/// CPU or meta (Note [Meta tensors have no data]: a meta factory allocates
/// nothing and fills nothing).
void check_cpu(Device device, const char* op) {
  KILN_CHECK_NOT_IMPLEMENTED(device.is_cpu() || device.is_meta(), op, "(): device '", device,
                             "' is not supported yet");
}

size_t checked_nbytes(IntArrayRef sizes, IntArrayRef strides, DType dtype) {
  // The storage must reach the furthest element: sum((size-1)*stride) + 1.
  int64_t extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KILN_CHECK(sizes[i] >= 0, "Trying to create tensor with negative dimension ", sizes[i], ": ", sizes);
    if (sizes[i] == 0) return 0;
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 16;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t span = (sizes[i] - 1);
    KILN_CHECK(strides[i] == 0 || span <= kMax / strides[i], "Storage size calculation overflowed with sizes=",
               sizes, " and strides=", strides);
    extent += span * strides[i];
    KILN_CHECK(extent <= kMax, "Storage size calculation overflowed with sizes=", sizes, " and strides=", strides);
  }
  KILN_CHECK(extent <= kMax / itemsize(dtype), "Storage size calculation overflowed with sizes=", sizes);
  return static_cast<size_t>(extent * itemsize(dtype));
}

/// The byte count of a contiguous tensor, checked as PyTorch's computeStorageNbytesContiguous
/// (whose message names only the sizes).
void check_contiguous_nbytes(IntArrayRef sizes, DType dtype) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 16;
  int64_t n = itemsize(dtype);
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) return;
    overflow = overflow || __builtin_mul_overflow(n, s, &n) || n > kMax;
  }
  KILN_CHECK(!overflow, "Storage size calculation overflowed with sizes=", sizes);
}

/// Calls fn(element pointer) for every element of `t` in row-major order.
template <typename T, typename Fn>
void for_each_element(const Tensor& t, Fn fn) {
  if (t.numel() == 0) return;
  T* base = t.data_ptr<T>();
  if (t.is_contiguous()) {
    for (int64_t i = 0; i < t.numel(); ++i) fn(base + i, i);
    return;
  }
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  const size_t nd = sizes.size();
  DimVector index(nd, 0);
  int64_t offset = 0;
  for (int64_t linear = 0; linear < t.numel(); ++linear) {
    fn(base + offset, linear);
    for (size_t d = nd; d-- > 0;) {
      if (++index[d] < sizes[d]) {
        offset += strides[d];
        break;
      }
      offset -= (sizes[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
}

}  // namespace

bool overflows(const Scalar& value, DType dtype) {
  if (dtype == DType::Bool || value.is_bool()) return false;
  if (value.is_complex()) {
    // Into a complex dtype each part must fit; into a real one the imaginary part
    // must be 0 and the real part fit (PyTorch's checked_convert).
    const std::complex<double> c = value.to_complex_double();
    if (is_complex(dtype)) return overflows(Scalar(c.real()), dtype) || overflows(Scalar(c.imag()), dtype);
    return c.imag() != 0.0 || overflows(Scalar(c.real()), dtype);
  }
  double lowest = 0, highest = 0;  // the range of dtype's finite values
  switch (dtype) {
    case DType::Float16: lowest = -65504.0, highest = 65504.0; break;
    case DType::BFloat16: lowest = -3.3895313892515355e38, highest = 3.3895313892515355e38; break;
    case DType::Float32: lowest = std::numeric_limits<float>::lowest(), highest = std::numeric_limits<float>::max(); break;
    case DType::Float64: return false;
    case DType::Complex64: lowest = std::numeric_limits<float>::lowest(), highest = std::numeric_limits<float>::max(); break;
    case DType::Complex128: return false;
    default:
      visit_dtype(dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) {
          lowest = static_cast<double>(std::numeric_limits<T>::lowest());
          highest = static_cast<double>(std::numeric_limits<T>::max());
        }
      });
  }
  if (value.is_floating_point()) {
    const double v = value.to_double();
    if (is_floating_point(dtype) || is_complex(dtype)) return std::isfinite(v) && (v < lowest || v > highest);
    if (std::isnan(v)) return true;
    // 2^63 is the first double past int64's range; max() itself rounds up to it.
    if (dtype == DType::Int64) return v < -9.2233720368547758e18 || v >= 9.2233720368547758e18;
    return v < lowest || v > highest;
  }
  const int64_t v = value.to_int64();
  if (dtype == DType::Int64) return false;
  if (dtype == DType::UInt8 && v < 0) return -static_cast<uint64_t>(v) > 255u;  // negative values may wrap
  return static_cast<double>(v) < lowest || static_cast<double>(v) > highest;
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  // Storage only: CUDA memory comes from its registered allocator (which raises the no-driver error).
  if (!device.is_cuda()) check_cpu(device, "empty_strided");
  KILN_CHECK(sizes.size() == strides.size(), "empty_strided: mismatch in length of strides and shape");
  const size_t nbytes = checked_nbytes(sizes, strides, dtype);
  return Tensor(make_intrusive<TensorImpl>(new_storage(nbytes, device), dtype, sizes, strides, 0));
}

Tensor empty(IntArrayRef sizes, DType dtype, Device device) {
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  }
  check_contiguous_nbytes(sizes, dtype);
  return empty_strided(sizes, contiguous_strides(sizes), dtype, device);
}

namespace {

/// dst[0, n) = v: a few elements by hand, then memcpy from the filled prefix,
/// doubling it up to 4 KiB and then 4 KiB at a time (the source stays in L1).
/// This file is compiled for the baseline CPU at -O2, where GCC does not
/// vectorise a std::fill_n loop; glibc's memcpy picks its AVX2 / AVX-512 copy
/// at run time. 64K floats: fill_n 24 us, this 6-8 us (torch 8-10).
template <typename T>
void fill_contiguous(T* dst, int64_t n, T v) {
  constexpr int64_t kBlock = std::max<int64_t>(1, 4096 / static_cast<int64_t>(sizeof(T)));
  int64_t filled = std::min<int64_t>(n, 16);
  for (int64_t i = 0; i < filled; ++i) dst[i] = v;
  while (filled < n) {
    const int64_t count = std::min({filled, kBlock, n - filled});
    std::memcpy(dst + filled, dst, static_cast<size_t>(count) * sizeof(T));
    filled += count;
  }
}

}  // namespace

void native::fill_impl(const Tensor& self, const Scalar& value) {
  if (self.impl()->is_meta()) {
    self.impl()->bump_version();
    return;
  }
  visit_dtype_and_complex(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = checked_scalar_to<T>(value);
    if (self.is_contiguous()) {
      fill_contiguous(self.data_ptr<T>(), self.numel(), v);
    } else {
      for_each_element<T>(self, [v](T* p, int64_t) { *p = v; });
    }
  });
  self.impl()->bump_version();
}

Tensor full(IntArrayRef sizes, const Scalar& value, DType dtype, Device device) {
  Tensor t = empty(sizes, dtype, device);
  if (t.device().is_cuda()) {
    native::cuda_fill(t, value);
    return t;
  }
  native::fill_impl(t, value);
  return t;
}

Tensor zeros(IntArrayRef sizes, DType dtype, Device device) {
  for (int64_t s : sizes) KILN_CHECK(s >= 0, "zeros: Dimension size must be non-negative.");
  Tensor t = empty(sizes, dtype, device);
  if (t.device().is_cuda()) {
    native::cuda_fill(t, Scalar(int64_t{0}));
    return t;
  }
  if (t.nbytes() > 0 && !device.is_meta()) std::memset(t.data_ptr(), 0, static_cast<size_t>(t.nbytes()));
  return t;
}

Tensor ones(IntArrayRef sizes, DType dtype, Device device) { return full(sizes, Scalar(int64_t{1}), dtype, device); }

// Note [Range factories compute as PyTorch's CPU kernels do]
// -----------------------------------------------------------
// arange and linspace promise values bit-equal to PyTorch's, so their loops
// follow PyTorch's CPU kernels (RangeFactoriesKernel.cpp) operation by
// operation, not just formula by formula:
// - linspace computes every element on its own, in the output type (double
//   for integer outputs): start + step * i for the first half and
//   end - step * (steps - i - 1) for the second, each a single fused
//   multiply-add (the compiler contracts PyTorch's expression). float16 and
//   bfloat16 round after every operation, as their C++ operators do.
// - arange computes in the accumulate type (int64 for integers, double for
//   float32/64, float for float16/bfloat16). PyTorch's loop writes 32-byte
//   vector blocks, two at a time, while a pair still fits: the first lane of
//   a block is start + step * i rounded to the output type, the others add
//   k * step to that rounded base; the tail is computed element by element.
//   So the rounding depends on an element's position within its block and is
//   reproduced here exactly (for one parallel chunk, that is, up to PyTorch's
//   grain size of 32768 elements).

namespace {

constexpr int64_t kRangeVectorBytes = 32;  // bytes in one of PyTorch's vector registers

/// The accumulate type of arange for output type T.
template <typename T>
using ArangeAcc = std::conditional_t<std::is_integral_v<T>, int64_t,
                                     std::conditional_t<sizeof(T) == 2, float, double>>;

/// a * b + c with one rounding for floating types (exact for integers).
template <typename A>
A fused_multiply_add(A a, A b, A c) {
  if constexpr (std::is_floating_point_v<A>) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

/// Rounds a float to a reduced-precision type and back, as every float16/bfloat16 operator does.
template <typename T>
float round_to(float v) {
  return static_cast<float>(T(v));
}

template <typename T>
void linspace_values(T* out, const Scalar& start_value, const Scalar& end_value, int64_t steps) {
  const T start = checked_scalar_to<T>(start_value);
  const T end = checked_scalar_to<T>(end_value);
  const int64_t halfway = steps / 2;
  if constexpr (is_complex_v<T>) {
    using V = typename T::value_type;
    const T step = (end - start) / static_cast<V>(steps - 1);
    for (int64_t i = 0; i < steps; ++i) {
      out[i] = i < halfway ? start + step * static_cast<V>(i) : end - step * static_cast<V>(steps - i - 1);
    }
  } else if constexpr (std::is_integral_v<T>) {
    const double s = static_cast<double>(start), e = static_cast<double>(end);
    const double step = (e - s) / static_cast<double>(steps - 1);
    for (int64_t i = 0; i < steps; ++i) {
      out[i] = static_cast<T>(i < halfway ? std::fma(step, static_cast<double>(i), s)
                                          : std::fma(-step, static_cast<double>(steps - i - 1), e));
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    const T step = (end - start) / static_cast<T>(steps - 1);
    for (int64_t i = 0; i < steps; ++i) {
      out[i] = i < halfway ? std::fma(step, static_cast<T>(i), start)
                           : std::fma(-step, static_cast<T>(steps - i - 1), end);
    }
  } else {  // Half, BFloat16: each operator rounds its float result to T
    const float s = start, e = end;
    const float step = round_to<T>(round_to<T>(e - s) / round_to<T>(static_cast<float>(steps - 1)));
    for (int64_t i = 0; i < steps; ++i) {
      out[i] = i < halfway ? T(s + round_to<T>(step * round_to<T>(static_cast<float>(i))))
                           : T(e - round_to<T>(step * round_to<T>(static_cast<float>(steps - i - 1))));
    }
  }
}

template <typename T>
void arange_values(T* out, int64_t n, const Scalar& start_value, const Scalar& step_value) {
  using Acc = ArangeAcc<T>;
  const Acc start = checked_scalar_to<Acc>(start_value);
  const Acc step = checked_scalar_to<Acc>(step_value);
  auto element = [&](int64_t i) { return static_cast<T>(fused_multiply_add(step, static_cast<Acc>(i), start)); };
  constexpr int64_t kLanes = kRangeVectorBytes / static_cast<int64_t>(sizeof(T));
  auto vector_block = [&](int64_t i) {
    const T base = element(i);
    out[i] = base;
    for (int64_t k = 1; k < kLanes; ++k) {
      out[i + k] = static_cast<T>(fused_multiply_add(static_cast<Acc>(k), step, static_cast<Acc>(base)));
    }
  };
  int64_t i = 0;
  for (; i <= n - 2 * kLanes; i += 2 * kLanes) {
    vector_block(i);
    vector_block(i + kLanes);
  }
  for (; i < n; ++i) out[i] = element(i);
}

}  // namespace

Tensor native::arange_impl(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype,
                           Device device) {
  check_cpu(device, "arange");
  const bool all_integral = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const DType out_dtype = dtype.value_or(all_integral ? DType::Int64 : default_dtype());
  KILN_CHECK_NOT_IMPLEMENTED(out_dtype != DType::Bool, "\"arange_cpu\" not implemented for 'Bool'");
  // Bounds are checked in double, as PyTorch's arange_check_bounds.
  const double dstart = start.to_double(), dend = end.to_double(), dstep = step.to_double();
  KILN_CHECK(dstep > 0 || dstep < 0, "step must be nonzero");
  KILN_CHECK(std::isfinite(dstart) && std::isfinite(dend), "unsupported range: ", dstart, " -> ", dend);
  KILN_CHECK((dstep > 0 && dend >= dstart) || (dstep < 0 && dend <= dstart),
             "upper bound and lower bound inconsistent with step sign");
  double size_d = 0;
  if (out_dtype == DType::Int64) {
    // int64 holds more than double: the length comes from the int64 values.
    const int64_t xstart = checked_scalar_to<int64_t>(start), xend = checked_scalar_to<int64_t>(end);
    const int64_t xstep = checked_scalar_to<int64_t>(step);
    KILN_CHECK_VALUE(xstep != 0, "step must be nonzero");  // a fractional step truncated to 0: ValueError, as torch
    const int64_t sign = (xstep > 0) - (xstep < 0);
    size_d = std::ceil(static_cast<double>((xend - xstart + xstep - sign) / xstep));
  } else {
    size_d = std::ceil((dend - dstart) / dstep);
  }
  KILN_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
             "invalid size, possible overflow?");
  const auto n = static_cast<int64_t>(size_d);
  Tensor t = empty({n}, out_dtype, device);
  if (device.is_meta()) return t;
  visit_dtype(out_dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) arange_values<T>(t.data_ptr<T>(), n, start, step);
  });
  return t;
}

Tensor native::linspace_impl(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                             Device device) {
  check_cpu(device, "linspace");
  KILN_CHECK(steps >= 0, "number of steps must be non-negative");
  const bool complex_bounds = start.is_complex() || end.is_complex();
  const DType out_dtype = dtype.value_or(complex_bounds ? to_complex_type(default_dtype()) : default_dtype());
  KILN_CHECK(!complex_bounds || is_complex(out_dtype), "kiln.linspace(): inferred dtype ",
             cpp_type_name(to_complex_type(default_dtype())), " can't be safely cast to passed dtype ",
             scalar_type_name(out_dtype));
  KILN_CHECK_NOT_IMPLEMENTED(out_dtype != DType::Bool, "\"linspace_cpu\" not implemented for 'Bool'");
  Tensor t = empty({steps}, out_dtype, device);
  if (steps == 0 || device.is_meta()) return t;
  if (steps == 1) {  // PyTorch fills with start
    native::fill_impl(t, start);
    return t;
  }
  visit_dtype_and_complex(out_dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) linspace_values<T>(t.data_ptr<T>(), start, end, steps);
  });
  return t;
}

}  // namespace kiln
