// CPU creation kernels.
#include "eager/kernels/cpu/Factories.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "eager/core/Error.h"

namespace kiln {

namespace {

void check_cpu(Device device, const char* op) {
  KILN_CHECK_NOT_IMPLEMENTED(device.is_cpu(), op, "(): device '", device,
                             "' is not supported yet; kiln.cuda.is_available() is False on this build");
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

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  check_cpu(device, "empty_strided");
  KILN_CHECK(sizes.size() == strides.size(), "empty_strided: mismatch in length of strides and shape");
  const size_t nbytes = checked_nbytes(sizes, strides, dtype);
  return Tensor(make_intrusive<TensorImpl>(new_storage(nbytes, device), dtype, sizes, strides, 0));
}

Tensor empty(IntArrayRef sizes, DType dtype, Device device) {
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", sizes);
  }
  return empty_strided(sizes, contiguous_strides(sizes), dtype, device);
}

void fill_(const Tensor& self, const Scalar& value) {
  visit_dtype(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = value.to<T>();
    if (self.is_contiguous()) {
      std::fill_n(self.data_ptr<T>(), self.numel(), v);  // vectorises
    } else {
      for_each_element<T>(self, [v](T* p, int64_t) { *p = v; });
    }
  });
  self.impl()->bump_version();
}

Tensor full(IntArrayRef sizes, const Scalar& value, DType dtype, Device device) {
  Tensor t = empty(sizes, dtype, device);
  fill_(t, value);
  return t;
}

Tensor zeros(IntArrayRef sizes, DType dtype, Device device) {
  Tensor t = empty(sizes, dtype, device);
  if (t.nbytes() > 0) std::memset(t.data_ptr(), 0, static_cast<size_t>(t.nbytes()));
  return t;
}

Tensor ones(IntArrayRef sizes, DType dtype, Device device) { return full(sizes, Scalar(int64_t{1}), dtype, device); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, std::optional<DType> dtype, Device device) {
  check_cpu(device, "arange");
  const bool all_integral = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const DType out_dtype = dtype.value_or(all_integral ? DType::Int64 : default_dtype());
  const double xstart = start.to_double(), xend = end.to_double(), xstep = step.to_double();
  KILN_CHECK(std::isfinite(xstart) && std::isfinite(xend), "unsupported range: ", xstart, " -> ", xend);
  KILN_CHECK(xstep != 0, "step must be nonzero");
  KILN_CHECK((xstep > 0 && xend >= xstart) || (xstep < 0 && xend <= xstart),
             "upper bound and larger bound inconsistent with step sign");
  const double size_d = std::ceil((xend - xstart) / xstep);
  KILN_CHECK(size_d >= 0 && size_d < static_cast<double>(std::numeric_limits<int64_t>::max()),
             "invalid size, possible overflow?");
  const auto n = static_cast<int64_t>(size_d);
  Tensor t = empty({&n, 1}, out_dtype, device);
  visit_dtype(out_dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = t.data_ptr<T>();
    if (all_integral) {
      const int64_t s = start.to_int64(), st = step.to_int64();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s + i * st);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(xstart + static_cast<double>(i) * xstep);
    }
  });
  return t;
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype, Device device) {
  check_cpu(device, "linspace");
  KILN_CHECK(steps >= 0, "linspace(): number of steps must be non-negative");
  const DType out_dtype = dtype.value_or(default_dtype());
  Tensor t = empty({&steps, 1}, out_dtype, device);
  if (steps == 0) return t;
  visit_dtype(out_dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = t.data_ptr<T>();
    if constexpr (std::is_integral_v<T>) {
      // Integer linspace steps in double and truncates, as PyTorch's integer path.
      const double s = start.to_double(), e = end.to_double();
      const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0.0;
      for (int64_t i = 0; i < steps; ++i) out[i] = static_cast<T>(s + step * static_cast<double>(i));
    } else {
      // Computed in float for float32/16 (double for float64), from both ends
      // halfway, as PyTorch does, so the last value is exactly `end`.
      using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const Acc s = static_cast<Acc>(start.to_double()), e = static_cast<Acc>(end.to_double());
      const Acc step = steps > 1 ? (e - s) / static_cast<Acc>(steps - 1) : Acc(0);
      const int64_t halfway = steps / 2;
      for (int64_t i = 0; i < steps; ++i) {
        out[i] = static_cast<T>(i < halfway ? s + step * static_cast<Acc>(i)
                                            : e - step * static_cast<Acc>(steps - i - 1));
      }
    }
  });
  return t;
}

}  // namespace kiln
