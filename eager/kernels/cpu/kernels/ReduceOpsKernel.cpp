// Reduction and scan loops, compiled per CPU capability. Rows are contiguous
// (Note [Reductions as rows] in ReduceOps.cpp); the work is split by size only,
// so results do not depend on the thread count.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/ReduceOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

constexpr int64_t kLanes = 8;          // independent accumulators: the compiler keeps them in one vector
constexpr int64_t kBlock = 256;        // elements summed in T before joining the wide accumulator
constexpr int64_t kChunk = 1 << 16;    // a long row is split into chunks of this many elements

template <typename T>
using wide_t = std::conditional_t<std::is_floating_point_v<T>, double, T>;

/// Sum of x[0, n): kLanes running sums over blocks of kBlock elements, each
/// block's total added into a double (for float) accumulator — as accurate as
/// PyTorch's cascade sum for float32 and vectorised.
template <typename T>
wide_t<T> sum_span(const T* x, int64_t n) {
  wide_t<T> total = 0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    T lanes[kLanes] = {};
    for (int64_t j = 0; j < kBlock; j += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += x[i + j + l];
    }
    T block = 0;
    for (int64_t l = 0; l < kLanes; ++l) block += lanes[l];
    total += block;
  }
  for (; i < n; ++i) total += x[i];
  return total;
}

template <typename T>
wide_t<T> prod_span(const T* x, int64_t n) {
  wide_t<T> acc = 1;
  for (int64_t i = 0; i < n; ++i) acc *= x[i];
  return acc;
}

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

/// max (or min) of x[0, n), NaN if any element is NaN. n > 0.
template <typename T, bool kMax>
T extreme_span(const T* x, int64_t n) {
  T acc = x[0];
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    nan = nan || is_nan(v);
    acc = kMax ? (v > acc ? v : acc) : (v < acc ? v : acc);
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (nan) return std::numeric_limits<T>::quiet_NaN();
  }
  return acc;
}

/// Index of the first max (min), the first NaN winning. n > 0.
template <typename T, bool kMax>
int64_t arg_extreme_span(const T* x, int64_t n) {
  int64_t best = 0;
  T value = x[0];
  if (is_nan(value)) return 0;
  for (int64_t i = 1; i < n; ++i) {
    const T v = x[i];
    if (is_nan(v)) return i;
    if (kMax ? v > value : v < value) {
      value = v;
      best = i;
    }
  }
  return best;
}

/// Variance with `correction`, two passes in double.
template <typename T>
double var_span(const T* x, int64_t n, double correction) {
  double mean = 0;
  for (int64_t i = 0; i < n; ++i) mean += static_cast<double>(x[i]);
  mean /= static_cast<double>(n);
  double m2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    m2 += d * d;
  }
  return m2 / std::max(0.0, static_cast<double>(n) - correction);
}

template <typename T>
void reduce_typed(const Tensor& in, const Tensor& out, const Tensor& indices, RowReduce op, double param) {
  const int64_t rows = in.size(0), len = in.size(1);
  const T* src = static_cast<const T*>(in.data_ptr());
  int64_t* idx = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  auto row_value = [&](const T* x, int64_t n, int64_t row) {
    (void)row;
    if constexpr (std::is_same_v<T, bool>) {
      // max of bools is any, min is all
      const bool every = op == RowReduce::All || op == RowReduce::Min;
      bool acc = every;
      for (int64_t i = 0; i < n; ++i) acc = every ? (acc && x[i]) : (acc || x[i]);
      return acc;
    } else if constexpr (is_reduced_float_v<T>) {
      KILN_FAIL(Runtime, "reduce_rows: ", dtype_of<T>(), " is computed in float");
      return T{};
    } else {
      switch (op) {
        case RowReduce::Sum: return static_cast<T>(sum_span(x, n));
        case RowReduce::Prod: return static_cast<T>(prod_span(x, n));
        case RowReduce::Max: return extreme_span<T, true>(x, n);
        case RowReduce::Min: return extreme_span<T, false>(x, n);
        case RowReduce::Var:
          if constexpr (std::is_floating_point_v<T>) return static_cast<T>(var_span(x, n, param));
          break;
        default: break;
      }
      KILN_FAIL(Runtime, "reduce_rows: op not supported for ", dtype_of<T>());
    }
  };
  // All/Any over non-bool inputs are converted to bool before the loop.
  if (op == RowReduce::ArgMax || op == RowReduce::ArgMin) {
    if constexpr (!is_reduced_float_v<T>) {
      parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          idx[r] = op == RowReduce::ArgMax ? arg_extreme_span<T, true>(src + r * len, len)
                                           : arg_extreme_span<T, false>(src + r * len, len);
        }
      });
    }
    return;
  }
  T* dst = static_cast<T*>(out.data_ptr());
  if (rows == 1 && len > kChunk && (op == RowReduce::Sum)) {
    if constexpr (!std::is_same_v<T, bool> && !is_reduced_float_v<T>) {
      // One long row (a full reduction): deterministic chunks, combined in order.
      const wide_t<T> total = parallel_reduce<wide_t<T>>(
          0, len, kChunk, wide_t<T>(0), [&](int64_t b, int64_t e) { return sum_span(src + b, e - b); },
          [](wide_t<T> a, wide_t<T> c) { return a + c; });
      dst[0] = static_cast<T>(total);
      return;
    }
  }
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) dst[r] = row_value(src + r * len, len, r);
  });
  if (idx != nullptr && (op == RowReduce::Max || op == RowReduce::Min)) {
    if constexpr (!is_reduced_float_v<T>) {
      parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          idx[r] = op == RowReduce::Max ? arg_extreme_span<T, true>(src + r * len, len)
                                        : arg_extreme_span<T, false>(src + r * len, len);
        }
      });
    }
  }
}

void reduce_rows_kernel(const Tensor& in, const Tensor& out, const Tensor& indices, RowReduce op, double param) {
  visit_dtype(in.dtype(), [&](auto tag) { reduce_typed<decltype(tag)>(in, out, indices, op, param); });
}

template <typename T>
void scan_typed(const Tensor& in, const Tensor& out, int64_t outer, int64_t len, int64_t inner, bool product) {
  const T* src = static_cast<const T*>(in.data_ptr());
  T* dst = static_cast<T*>(out.data_ptr());
  parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len * inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const T* x = src + o * len * inner;
      T* y = dst + o * len * inner;
      if (inner == 1) {
        wide_t<T> acc = product ? 1 : 0;
        for (int64_t i = 0; i < len; ++i) {
          acc = product ? acc * x[i] : acc + x[i];
          y[i] = static_cast<T>(acc);
        }
        continue;
      }
      for (int64_t j = 0; j < inner; ++j) y[j] = x[j];
      for (int64_t i = 1; i < len; ++i) {
        const T* xi = x + i * inner;
        const T* prev = y + (i - 1) * inner;
        T* yi = y + i * inner;
        if (product) {
          for (int64_t j = 0; j < inner; ++j) yi[j] = prev[j] * xi[j];
        } else {
          for (int64_t j = 0; j < inner; ++j) yi[j] = prev[j] + xi[j];
        }
      }
    }
  });
}

void scan_kernel(const Tensor& in, const Tensor& out, int64_t outer, int64_t len, int64_t inner, bool product) {
  switch (in.dtype()) {
    case DType::Float32: return scan_typed<float>(in, out, outer, len, inner, product);
    case DType::Float64: return scan_typed<double>(in, out, outer, len, inner, product);
    case DType::Int64: return scan_typed<int64_t>(in, out, outer, len, inner, product);
    default: KILN_FAIL(Runtime, "scan: unexpected dtype ", in.dtype());
  }
}

}  // namespace

KILN_REGISTER_DISPATCH(reduce_rows_stub, &reduce_rows_kernel);
KILN_REGISTER_DISPATCH(scan_stub, &scan_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native
